//! The client of one `tools/call` served through `#[idem::tasks]`: what it declared it can
//! do (tasks, elicitation, MCP 2026-07-28's input round trips), read from the request
//! before the call is served.

use rmcp::RoleServer;
use rmcp::model::{CallToolRequestParams, InputResponses};
use rmcp::service::{Peer, RequestContext};

/// The client of one `tools/call`, and what it can do: what `#[idem::tasks]` reads from the
/// request before serving it (see [`client`](fn@super::client)).
pub struct Client {
    /// It declared the tasks extension.
    pub(super) offered: bool,
    /// It speaks MCP 2026-07-28, where a server asks the user through an
    /// `InputRequiredResult` and the client calls again with the answer.
    pub(super) modern: bool,
    /// It declared form elicitation: it can show a person a question.
    pub(super) elicits: bool,
    /// The way to the client, for a question asked during the call (MCP before 2026-07-28).
    pub(super) peer: Peer<RoleServer>,
    /// The answers to the questions of an earlier round of this call (2026-07-28).
    pub(super) responses: Option<InputResponses>,
    /// The `requestState` echoed with them: what says which question they answer.
    pub(super) request_state: Option<String>,
}

impl Client {
    pub(super) fn of(request: &CallToolRequestParams, context: &RequestContext<RoleServer>) -> Client {
        let capabilities = context.client_capabilities();
        let elicits = capabilities.as_ref().and_then(|c| c.elicitation.as_ref()).is_some_and(|elicitation| {
            // An elicitation capability that names no mode means form (MCP 2025-06-18).
            elicitation.form.is_some() || elicitation.url.is_none()
        });
        Client {
            offered: capabilities.is_some_and(|capabilities| capabilities.supports_tasks()),
            modern: context.protocol_version().is_some_and(|version| !version.has_initialize()),
            elicits,
            peer: context.peer.clone(),
            responses: request.input_responses.clone(),
            request_state: request.request_state.clone(),
        }
    }
}
