//! Asking a person in band, through the MCP client, for an approval a call waits for:
//!
//! | the client | the call |
//! | --- | --- |
//! | MCP 2026-07-28, declared form elicitation | answers with an `InputRequiredResult` holding an `elicitation/create` (key [`APPROVAL_INPUT`]); the client asks its user and calls again with the answer, which this reads |
//! | an earlier MCP, declared form elicitation | sends `elicitation/create` to the client and waits for the answer |
//! | neither | answers APPROVAL_REQUIRED; a person decides out of band |
//!
//! The user sees the action's text and its compared fields. Accept approves, decline and
//! cancel decline; the decision is recorded as made by [`DECIDED_IN_THE_CLIENT`], like any other, so every
//! later call (on any worker) follows it.

use rmcp::model::{
    ClientResult, ElicitRequest, ElicitationAction, InputRequest, InputRequests, InputRequiredResult, ServerRequest,
};
use serde_json::Value;

use super::client::Client;
use super::state::question;
use crate::approval::{self, DecideError, Request};
use crate::call::Tool;
use crate::key::Key;
use crate::store::{AsyncStore, RecordId};

/// The key of an approval question in an `InputRequiredResult`'s `inputRequests` (MCP
/// 2026-07-28), and of its answer in the `inputResponses` of the call that follows.
pub const APPROVAL_INPUT: &str = "idem.approval";

/// Who an approval decided in the MCP client is recorded as decided by.
pub const DECIDED_IN_THE_CLIENT: &str = "the user through the client";

/// Asks for the approval `asked` through the call's client if it can be asked; `true` when
/// a decision was recorded. A question to send back (MCP 2026-07-28) goes to `answer_with`.
pub(super) async fn ask(
    tool: &Tool,
    key: &Key,
    asked: &Request,
    store: &dyn AsyncStore,
    client: &Client,
    answer_with: impl FnOnce(InputRequiredResult),
) -> bool {
    let id = RecordId { namespace: tool.namespace, key: key.as_str() };
    if let Some(answer) = client.responses.as_ref().and_then(|responses| responses.get(APPROVAL_INPUT)) {
        let action = answer.get("action").and_then(Value::as_str);
        return record(store, id, action).await;
    }
    if !client.elicits {
        return false;
    }
    if client.modern {
        answer_with(InputRequiredResult::from_input_requests(InputRequests::from([(
            APPROVAL_INPUT.to_owned(),
            InputRequest::Elicitation(ElicitRequest::new(question(tool, asked))),
        )])));
        return false;
    }
    // rmcp's `create_elicitation` needs its `elicitation` feature (and the `url` crate):
    // the request it sends, sent here.
    let request = ServerRequest::ElicitRequest(ElicitRequest::new(question(tool, asked)));
    match client.peer.send_request(request).await {
        Ok(ClientResult::ElicitResult(result)) => {
            let action = match result.action {
                ElicitationAction::Accept => "accept",
                ElicitationAction::Decline => "decline",
                // Cancel, and whatever a newer client answers: not an approval.
                _ => "cancel",
            };
            record(store, id, Some(action)).await
        }
        Ok(other) => {
            tracing::warn!(target: "idem", tool = tool.name, ?other, "the client answered the approval question with something else; it answers APPROVAL_REQUIRED");
            false
        }
        Err(error) => {
            tracing::warn!(target: "idem", tool = tool.name, %error, "the client could not ask its user for approval; it answers APPROVAL_REQUIRED");
            false
        }
    }
}

/// Records the user's answer: accept approves, decline and cancel decline. `true` when a
/// decision stands (this one, or one made meanwhile).
pub(super) async fn record<S: AsyncStore + ?Sized>(store: &S, id: RecordId<'_>, action: Option<&str>) -> bool {
    let decided = match action {
        Some("accept") => approval::approve(store, id, DECIDED_IN_THE_CLIENT, None).await,
        Some("decline") => approval::decline(store, id, DECIDED_IN_THE_CLIENT, Some("declined in the client")).await,
        Some("cancel") => approval::decline(store, id, DECIDED_IN_THE_CLIENT, Some("cancelled in the client")).await,
        _ => return false,
    };
    match decided {
        Ok(_) | Err(DecideError::Decided(_)) => true,
        Err(error) => {
            tracing::warn!(target: "idem", namespace = id.namespace, key = id.key, %error, "an approval answered in the client was not recorded");
            false
        }
    }
}
