//! MCP Tasks (SEP-2663, `io.modelcontextprotocol/tasks`) for idempotent rmcp tools.
//!
//! A task stands for one run of one business action: the reservation a call made, kept
//! through renewals and take-overs. Its state is the action's record, read from the store,
//! so `tasks/get` answers after a restart and on every worker that shares the store:
//!
//! - A slow call (past its tool's `timeout`) answers a client that declared the tasks
//!   extension with its task; a retry that finds the action running answers with the same
//!   task. The task's records are in the store before the handle leaves.
//! - Task ids are unguessable and reveal nothing: HMAC-SHA256 of the run under a secret the
//!   store keeps (see `ids`). A new run of the action (after a failure released its key,
//!   or a cancellation) is a new task; an ended task stays ended.
//! - `createdAt` is the reservation's time, `lastUpdatedAt` the record's last change.
//! - `tasks/cancel` is recorded in the store and asks the body to stop
//!   ([`cancel_requested`](crate::cancel_requested)); the body decides. A body that then
//!   fails leaves the task `cancelled`; one that finishes leaves it `completed`.
//! - A call waiting for a person's approval (a tool with `approval`) answers with its task
//!   at once, `input_required` with the question (key [`APPROVAL_INPUT`]). `tasks/update`
//!   with an answer records the decision for that request (accept approves, decline and
//!   cancel decline; an answer that does not read is `-32602`), as does an operator out of
//!   band; the task then follows the call: `working` while the approved action runs,
//!   `completed` with its result, or `completed` with the DECLINED or APPROVAL_EXPIRED
//!   answer. `tasks/cancel` of a waiting task declines it. One task
//!   stands for one request for approval: a retry while it waits answers with the same task.
//! - `tasks/update` of any other task is acknowledged: nothing else asks for input.
//! - An id this server did not give out is `-32602` (invalid params) for all three.
//!
//! The server opts in with `#[idem::tasks]` on its `ServerHandler` impl, below
//! `#[tool_handler]`; what that expansion and `#[idempotent]`'s call is here.

mod client;
mod ids;
mod in_band;
pub(crate) mod records;
mod served;
mod state;

use std::future::Future;

use rmcp::handler::server::tool::IntoCallToolResult;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, GetTaskResult, InputResponses, ServerConfig, TASKS_EXTENSION_ID,
    TaskStatus,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::call::{Tool, cancel};
use crate::key::{KeyPart, scope_prefix};
use crate::output::ToolOutput;
use crate::store::{RecordId, Store, now_ms};

pub use client::Client;
pub use in_band::{APPROVAL_INPUT, DECIDED_IN_THE_CLIENT, ELICITATION_WAIT};
pub use served::{SERVING, Tasks};

/// What a client asks of a task.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Ask<'a> {
    /// `tasks/get`.
    Get,
    /// `tasks/cancel`.
    Cancel,
    /// `tasks/update`, with the answers to the task's questions.
    Update(&'a InputResponses),
}

/// What a task's tool answers: its state (for `tasks/get`), or an acknowledgement.
#[derive(Debug)]
pub enum Answer {
    /// The task's state.
    State(Box<GetTaskResult>),
    /// `tasks/cancel` and `tasks/update` were taken.
    Acknowledged,
}

/// Who asks about a task of a tool: what the tool's `scope` gives for the asking request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Caller {
    /// The tool has no scope: every client of the server may ask about its tasks (whose
    /// ids it can only know by being given them).
    Anyone,
    /// The asking request's scope, as the prefix every key of that scope starts with.
    Scope(String),
    /// The request carries no scope (no authenticated principal): it owns no task.
    Unidentified,
}

impl Caller {
    /// The caller whose request gives `scope`, extracted from it as the tool extracts it.
    pub fn scoped(scope: &dyn KeyPart) -> Caller {
        let mut text = String::new();
        scope.write_key_text(&mut text);
        if text.is_empty() { Caller::Unidentified } else { Caller::Scope(scope_prefix(&text)) }
    }

    /// Whether the caller may see the task of the record under `key`.
    fn owns(&self, key: &str) -> bool {
        match self {
            Caller::Anyone => true,
            Caller::Scope(prefix) => key.starts_with(prefix.as_str()),
            Caller::Unidentified => false,
        }
    }
}

/// A tool's answer to a task request: `None` when the task is not the tool's.
pub type ToolAnswer = Option<Result<Answer, ErrorData>>;

/// Serves the tasks of a server's idempotent tools: implemented by `#[idem::status_tools]`
/// for the type whose `#[tool_router]` impl it sits on, called by `#[idem::tasks]`.
#[diagnostic::on_unimplemented(
    message = "#[idem::tasks] serves the tasks of the tools that #[idem::status_tools] serves, and `{Self}` has none",
    label = "no #[idem::status_tools] impl for this type",
    note = "put #[idem::status_tools] above the #[tool_router] of the impl that holds this server's #[idempotent] tools"
)]
pub trait ServesTasks {
    /// Asks each tool in turn: the first that knows `task_id`, for the caller of the
    /// request whose `context` this is, answers.
    fn ask(
        &self,
        task_id: &str,
        ask: Ask,
        context: &RequestContext<RoleServer>,
    ) -> impl Future<Output = ToolAnswer> + Send;
}

/// One tool's turn in [`ServesTasks::ask`]: `Some` answer to return, else the next tool
/// is asked. A tool whose store failed is remembered in `failed`: if no other tool knows
/// the task, the failure is the answer (the task may be in that store), not "unknown".
pub fn first_answer(failed: &mut Option<ErrorData>, answer: ToolAnswer) -> Option<Answer> {
    match answer {
        Some(Ok(answer)) => Some(answer),
        Some(Err(error)) => {
            failed.get_or_insert(error);
            None
        }
        None => None,
    }
}

/// A server `#[idem::tasks]` can serve: each `tools/call` runs on a clone of it, as a tokio
/// task of its own, so that a body may run on after the call has its answer.
#[diagnostic::on_unimplemented(
    message = "#[idem::tasks] runs each tool call on a clone of the server, and `{Self}` is not `Clone + Send + Sync + 'static`",
    label = "needs `Clone + Send + Sync + 'static`",
    note = "derive Clone on the server and keep its state in `Arc`s, as rmcp servers usually do"
)]
pub trait OwnedServer: Clone + Send + Sync + 'static {}

impl<S: Clone + Send + Sync + 'static> OwnedServer for S {}

/// The clone of the server a `tools/call` runs on.
pub fn owned_server<S: OwnedServer>(server: &S) -> S {
    server.clone()
}

/// The client of this `tools/call`, and what it can do (tasks, questions to its user).
pub fn client(request: &CallToolRequestParams, context: &RequestContext<RoleServer>) -> Client {
    Client::of(request, context)
}

/// Serves one `tools/call` as a tokio task of its own, so that a body may run on after the
/// call has its answer:
///
/// - a call whose body runs past its tool's `timeout` answers with its task when the
///   client takes tasks (`offered`), else with TIMEOUT; the body runs to its end either way
///   and records its outcome;
/// - a call that finds the action running (IN_PROGRESS) answers with that run's task when
///   the client takes tasks;
/// - every other answer is the tool's own.
///
/// The call is not cancelled when the client goes away: what it started, it finishes.
pub async fn serve_call<F>(client: Client, call: F) -> Result<CallToolResponse, ErrorData>
where
    F: Future<Output = Result<CallToolResponse, ErrorData>> + Send + 'static,
{
    served::serve_call(client, call).await
}

/// `tasks/get`, `tasks/cancel` or `tasks/update` for task `task_id`, if it is one of
/// `tool`'s (whose calls return `O`) in `store`: what `#[idempotent]` generates for an
/// rmcp tool calls this.
///
/// A task of a scoped tool is the caller's only when the caller's scope is the task's: any
/// other caller gets the answer for an unknown id.
pub async fn ask<O, S>(tool: &'static Tool, store: &S, (task_id, caller): (&str, Caller), ask: Ask<'_>) -> ToolAnswer
where
    O: ToolOutput + IntoCallToolResult,
    O::Value: DeserializeOwned,
    S: Store + ?Sized,
{
    if !ids::well_formed(task_id) {
        return None;
    }
    let run = match records::run(store, task_id).await {
        Ok(Some(run)) if run.namespace == tool.namespace && caller.owns(&run.key) => run,
        Ok(_) => return None,
        Err(error) => return Some(Err(state::store_error(tool, task_id, &error))),
    };
    if let Err(error) = crate::call::claim(tool) {
        return Some(Err(state::rpc_error(&error)));
    }
    let id = RecordId { namespace: &run.namespace, key: &run.key };
    let state = state::state::<O, S>(tool, store, task_id, &run).await;
    Some(match ask {
        Ask::Get => state.map(|state| Answer::State(Box::new(GetTaskResult::new(state)))),
        // The person's answer to a call waiting for approval: recorded like any decision, for
        // the request the task waits for. One that does not read is refused.
        Ask::Update(responses) => match (state, responses.get(APPROVAL_INPUT).map(in_band::Reply::read)) {
            (_, Some(Err(refused))) => Err(refused),
            (Ok(state), Some(Ok(reply))) if state.status() == TaskStatus::InputRequired => {
                in_band::record_for_task(store, id, run.created_at_ms, reply)
                    .await
                    .map(|()| Answer::Acknowledged)
                    .map_err(|error| state::store_error(tool, &run.key, &error))
            }
            (state, _) => state.map(|_| Answer::Acknowledged),
        },
        // A call waiting for approval that its client cancels is declined: nothing runs.
        Ask::Cancel if state.as_ref().is_ok_and(|state| state.status() == TaskStatus::InputRequired) => {
            in_band::record_for_task(store, id, run.created_at_ms, in_band::Reply::Cancel)
                .await
                .map(|()| Answer::Acknowledged)
                .map_err(|error| state::store_error(tool, &run.key, &error))
        }
        // An ended task stays as it ended; a working one is asked to stop, on every worker
        // that reads the store and in this process at once.
        Ask::Cancel => match state {
            Ok(state) if state.status() == TaskStatus::Working => {
                let asked = json!({ "asked_at_ms": now_ms() }).to_string();
                let recorded = async {
                    records::put(store, &records::cancel_key(task_id), &asked, tool.retain).await?;
                    if run.awaits_approval {
                        // The run the approval let begin is known to its worker by its own id.
                        cancel_approved_run(store, &run, &asked, tool).await?;
                    }
                    Ok(())
                };
                let recorded = recorded.await;
                cancel::request(&run.namespace, &run.key);
                recorded.map(|()| Answer::Acknowledged).map_err(|error| state::store_error(tool, &run.key, &error))
            }
            Ok(_) => Ok(Answer::Acknowledged),
            Err(error) => Err(error),
        },
    })
}

/// Records a cancel for the run that began once the approval `run` waited for was given,
/// under that run's task id, which the worker running it reads as it renews.
async fn cancel_approved_run<S: Store + ?Sized>(
    store: &S,
    run: &records::Run,
    asked: &str,
    tool: &Tool,
) -> Result<(), crate::store::StoreError> {
    let id = RecordId { namespace: &run.namespace, key: &run.key };
    match store.read(id).await? {
        Some(record) if record.created_at_ms >= run.created_at_ms => {
            let secret = records::secret(store).await?;
            let run_id = ids::task_id(&secret, &run.namespace, &run.key, record.token);
            records::put(store, &records::cancel_key(&run_id), asked, tool.retain).await.map(drop)
        }
        _ => Ok(()),
    }
}

/// `tasks/get`'s answer: the state a tool of the server gave (see [`ask`]), or `-32602` for
/// a task none of them knows.
pub fn state_of(answer: ToolAnswer, task_id: &str) -> Result<GetTaskResult, ErrorData> {
    match answer {
        Some(Ok(Answer::State(state))) => Ok(*state),
        Some(Ok(Answer::Acknowledged)) => Err(ErrorData::internal_error("tasks/get was acknowledged", None)),
        Some(Err(error)) => Err(error),
        None => Err(unknown_task(task_id)),
    }
}

/// `tasks/cancel`'s and `tasks/update`'s answer: acknowledged for a task of the server's
/// tools (see [`ask`]), `-32602` for a task none of them knows.
pub fn acknowledged(answer: ToolAnswer, task_id: &str) -> Result<(), ErrorData> {
    match answer {
        Some(Ok(_)) => Ok(()),
        Some(Err(error)) => Err(error),
        None => Err(unknown_task(task_id)),
    }
}

/// The answer for a task id no tool of this server knows.
fn unknown_task(task_id: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("unknown task id {task_id:?}: this server never gave it out, or it expired"),
        None,
    )
}

/// Declares the tasks extension in the server's capabilities.
pub fn advertise(info: &mut ServerConfig) {
    info.capabilities.extensions.get_or_insert_with(Default::default).entry(TASKS_EXTENSION_ID.to_owned()).or_default();
}
