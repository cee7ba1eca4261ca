//! MCP Tasks (SEP-2663, `io.modelcontextprotocol/tasks`) for idempotent rmcp tools.
//!
//! A task is a view of a tool's record, not state of its own: its id is the record's
//! namespace and key, so a retried `tools/call` for the same action answers with the same
//! task, and `tasks/get` reads the store, so it keeps answering after a restart and from
//! any worker that shares the store. A call answers with a task (`CreateTaskResult`)
//! instead of TIMEOUT or IN_PROGRESS when the client declared the tasks extension and its
//! record is in the store: the reservation is durable before the handle leaves.
//!
//! The server opts in with `#[idem::tasks]` on its `ServerHandler` impl, below
//! `#[tool_handler]`; the functions here are what that expansion calls.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rmcp::handler::server::tool::IntoCallToolResult;
use rmcp::model::{
    CallToolResponse, CreateTaskResult, DetailedTask, ErrorCode as RpcCode, GetTaskResult, JsonObject, ServerConfig,
    TASKS_EXTENSION_ID, Task, TaskPayload, TaskStatus,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::Notify;

use crate::call::{Tool, cancel};
use crate::error::{Error, Running};
use crate::key::Key;
use crate::output::ToolOutput;
use crate::status::{Status, status_by_key};
use crate::store::{AsyncStore, now_ms};

tokio::task_local! {
    /// Set while a `tools/call` is served through `#[idem::tasks]`: what the call tells
    /// the server about itself.
    static CALL: Arc<Served>;
}

/// What a `tools/call` served through `#[idem::tasks]` tells its server: the task it
/// answered with (IN_PROGRESS), and when its body started (for its `timeout`).
struct Served {
    /// Whether the client declared the tasks extension.
    offered: bool,
    state: Mutex<ServedState>,
    changed: Notify,
}

#[derive(Default)]
struct ServedState {
    /// The task the call answered with instead of IN_PROGRESS.
    answered: Option<CreateTaskResult>,
    /// The call's body runs: when its `timeout` passes, the answer it gives then.
    running: Option<(Instant, CallToolResponse)>,
}

impl Served {
    fn lock(&self) -> std::sync::MutexGuard<'_, ServedState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The answer a running call gives once its `timeout` has passed: pending until the
    /// body started, and forever for a tool without `timeout`.
    async fn timed_out(&self) -> CallToolResponse {
        loop {
            let running = self.lock().running.clone();
            match running {
                Some((deadline, answer)) => {
                    tokio::time::sleep_until(deadline.into()).await;
                    return answer;
                }
                None => self.changed.notified().await,
            }
        }
    }
}

/// The record a task id names. Ids are `idem1.<namespace>.<key>`, each part in unpadded
/// base64url: opaque to clients, the same for every call of one action, and different
/// for different records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskRecord {
    /// The tool's record namespace.
    pub namespace: String,
    /// The record's key.
    pub key: String,
}

const ID_PREFIX: &str = "idem1.";

impl TaskRecord {
    /// The task id of the record under `namespace` and `key`.
    pub fn task_id(namespace: &str, key: &str) -> String {
        let mut id = String::from(ID_PREFIX);
        base64url(namespace.as_bytes(), &mut id);
        id.push('.');
        base64url(key.as_bytes(), &mut id);
        id
    }

    /// The record a task id names, or the `invalid_params` error a client gets for an id
    /// this server never gave out.
    pub fn parse(task_id: &str) -> Result<TaskRecord, ErrorData> {
        let unknown =
            || ErrorData::invalid_params(format!("unknown task id {task_id:?}: this server never gave it out"), None);
        let rest = task_id.strip_prefix(ID_PREFIX).ok_or_else(unknown)?;
        let (namespace, key) = rest.split_once('.').ok_or_else(unknown)?;
        let text = |part: &str| unbase64url(part).and_then(|bytes| String::from_utf8(bytes).ok()).ok_or_else(unknown);
        Ok(TaskRecord { namespace: text(namespace)?, key: text(key)? })
    }
}

/// What `tasks/get` answers: the task's state, or a JSON-RPC error.
pub type TaskAnswer = Result<GetTaskResult, ErrorData>;

/// Serves the tasks of a server's idempotent tools: implemented by `#[idem::status_tools]`
/// for the type whose `#[tool_router]` impl it sits on, called by `#[idem::tasks]`.
#[diagnostic::on_unimplemented(
    message = "#[idem::tasks] serves the tasks of the tools that #[idem::status_tools] serves, and `{Self}` has none",
    label = "no #[idem::status_tools] impl for this type",
    note = "put #[idem::status_tools] above the #[tool_router] of the impl that holds this server's #[idempotent] tools"
)]
pub trait ServesTasks {
    /// `tasks/get` for the record `task` names: `None` when no tool of this server
    /// records under its namespace.
    fn task_state(&self, task: &TaskRecord) -> impl Future<Output = Option<TaskAnswer>> + Send;
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

/// Whether the client of this request declared the tasks extension.
pub fn offered(context: &RequestContext<RoleServer>) -> bool {
    context.client_capabilities().is_some_and(|capabilities| capabilities.supports_tasks())
}

/// Serves one `tools/call` as a tokio task of its own, so that a body may run on after the
/// call has its answer:
///
/// - a call whose body runs past its tool's `timeout` answers with its task when the
///   client takes tasks (`offered`), else with TIMEOUT; the body runs to its end either way
///   and records its outcome;
/// - a call that finds the action running (IN_PROGRESS) answers with that action's task
///   when the client takes tasks;
/// - every other answer is the tool's own.
///
/// The call is not cancelled when the client goes away: what it started, it finishes.
pub async fn serve_call<F>(offered: bool, call: F) -> Result<CallToolResponse, ErrorData>
where
    F: Future<Output = Result<CallToolResponse, ErrorData>> + Send + 'static,
{
    let served = Arc::new(Served { offered, state: Mutex::default(), changed: Notify::new() });
    let mut call = tokio::spawn(CALL.scope(served.clone(), call));
    tokio::select! {
        joined = &mut call => {
            let response = match joined {
                Ok(response) => response,
                Err(failed) if failed.is_panic() => std::panic::resume_unwind(failed.into_panic()),
                Err(_) => Err(ErrorData::internal_error(
                    "the tool call was cancelled as the server's runtime shut down; it may or may not have happened",
                    None,
                )),
            };
            match served.lock().answered.take() {
                Some(task) => Ok(CallToolResponse::Task(task)),
                None => response,
            }
        }
        answer = served.timed_out() => Ok(answer),
    }
}

/// Answers the current `tools/call` with the task of `tool`'s record under `key`, which
/// the caller found running in the store, when the client takes tasks. Calls made inside
/// another tool's body never answer for the outer call.
pub(crate) fn offer(tool: &Tool, key: &Key, running: &Running) {
    if !tool.serves_tasks || crate::call::in_body() {
        return;
    }
    let _outside_a_served_call = CALL.try_with(|served| {
        if served.offered {
            served.lock().answered = Some(handle(tool, key, running));
        }
    });
}

/// Tells the current `tools/call` that `tool`'s body started under `key`: its reservation
/// is durable, so a task may stand for it once `timeout` has passed since `started`.
pub(crate) fn body_started(tool: &Tool, key: &Key, started: Instant, timeout: std::time::Duration) {
    if crate::call::in_body() {
        return;
    }
    let served = CALL.try_with(|served| {
        let answer = if served.offered {
            let running = Running {
                retry_after: crate::call::retry_after(timeout, tool.lease, None),
                since_ms: None,
                progress: None,
            };
            CallToolResponse::Task(handle(tool, key, &running))
        } else {
            CallToolResponse::Complete(super::error_result(&crate::call::timed_out(tool, Some(key), timeout)))
        };
        served.lock().running = Some((started + timeout, answer));
        served.changed.notify_one();
    });
    if served.is_err() {
        warn_unserved(tool);
    }
}

/// An rmcp tool's `timeout` takes effect through `#[idem::tasks]`: said once per tool
/// called without it.
fn warn_unserved(tool: &Tool) {
    static WARNED: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut warned = WARNED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if !warned.contains(&tool.namespace) {
        warned.push(tool.namespace);
        tracing::warn!(
            tool = tool.name,
            "`timeout` on an rmcp tool takes effect when its server's ServerHandler impl has #[idem::tasks]; without it this call waits for its body"
        );
    }
}

/// The handle of the task of `tool`'s record under `key`, in the state `running` tells.
fn handle(tool: &Tool, key: &Key, running: &Running) -> CreateTaskResult {
    let now = now_ms();
    let mut task = Task::new(
        TaskRecord::task_id(tool.namespace, key.as_str()),
        TaskStatus::Working,
        crate::store::rfc3339(running.since_ms.unwrap_or(now)),
        crate::store::rfc3339(now),
    )
    .with_poll_interval_ms(millis(running.retry_after))
    .with_ttl_ms(millis(tool.retain));
    task.status_message = running.progress.clone();
    CreateTaskResult::new(task)
}

/// `tasks/get` for `tool`'s record under `key`: what the expansion of `#[idempotent]` on
/// an rmcp tool returning `O` calls.
///
/// - in progress: `working`, with the body's progress message as the status message and
///   the retry hint as the poll interval;
/// - completed: `completed`, with the recorded result as the tool returns it on a replay;
/// - a kept error (`on_error = keep`): `failed`, with that error;
/// - abandoned (the call's process stopped; whether it happened is unknown): `failed`,
///   with idem's OUTCOME_UNKNOWN error as the data;
/// - no record: `cancelled` if a `tasks/cancel` for it reached this process, else
///   `failed`: the call failed and a failed call leaves nothing behind (calling the tool
///   again runs it), or its record was purged after retention.
///
/// A store that cannot be read is a JSON-RPC internal error: the task is not failed, and
/// asking again later may answer.
pub async fn task_state<O, S>(tool: &'static Tool, store: &S, key: &str) -> TaskAnswer
where
    O: ToolOutput + IntoCallToolResult,
    O::Value: DeserializeOwned,
    S: AsyncStore + ?Sized,
{
    let status = status_by_key::<S, O::Value>(tool, store, key).await.map_err(|error| rpc_error(&error))?;
    let now = now_ms();
    let id = TaskRecord::task_id(tool.namespace, key);
    let task = |status: TaskStatus, since_ms: Option<i64>| {
        Task::new(id.clone(), status, crate::store::rfc3339(since_ms.unwrap_or(now)), crate::store::rfc3339(now))
            .with_ttl_ms(millis(tool.retain))
    };
    let detailed = match status {
        Status::InProgress { since_ms, progress, retry_after_ms, .. } => {
            let mut working = task(TaskStatus::Working, Some(since_ms)).with_poll_interval_ms(retry_after_ms);
            working.status_message = progress;
            DetailedTask::new(working, TaskPayload::Working)
        }
        Status::Completed(value) => {
            cancel::forget(tool.namespace, key);
            match O::from_value(value).into_call_tool_result() {
                Ok(CallToolResponse::Complete(result)) => DetailedTask::new(
                    task(TaskStatus::Completed, None),
                    TaskPayload::Completed { result: object(&result) },
                ),
                Ok(_) => failed(
                    task(TaskStatus::Failed, None),
                    &ErrorData::internal_error("the recorded result is not a tool result", None),
                ),
                Err(error) => failed(task(TaskStatus::Failed, None), &error),
            }
        }
        Status::Failed(error) => {
            cancel::forget(tool.namespace, key);
            let error = match error {
                Value::Object(error) if error.contains_key("code") && error.contains_key("message") => error,
                other => object(&ErrorData::internal_error(format!("{}: the call failed", tool.name), Some(other))),
            };
            DetailedTask::new(task(TaskStatus::Failed, None), TaskPayload::Failed { error })
        }
        Status::Unknown { since_ms } => {
            let error = crate::call::unknown_outcome(tool, &Key::stored(key));
            let data = error.to_json();
            failed(
                task(TaskStatus::Failed, Some(since_ms)),
                &ErrorData::internal_error(error.message().to_owned(), Some(data)),
            )
        }
        Status::NotFound if cancel::is_requested(tool.namespace, key) => {
            DetailedTask::new(task(TaskStatus::Cancelled, None), TaskPayload::Cancelled)
        }
        Status::NotFound => {
            let message = format!(
                "{}: no call is recorded for {key}: it failed (a failed call leaves nothing behind, so calling {} again runs it), or its record was purged after retention",
                tool.name, tool.name
            );
            failed(task(TaskStatus::Failed, None), &ErrorData::invalid_params(message, None))
        }
    };
    Ok(GetTaskResult::new(detailed))
}

/// `tasks/get` for a task no tool of this server records: the id is not one of ours.
pub fn unknown_task(task: &TaskRecord) -> ErrorData {
    ErrorData::invalid_params(
        format!("no tool of this server records under {:?}: the task id is not one of its tasks", task.namespace),
        None,
    )
}

/// `tasks/cancel`: asks the task's body to stop, if it runs in this process (its body sees
/// it through [`cancel_requested`](crate::cancel_requested)). Nothing is interrupted and
/// the key is never released for it; the next `tasks/get` tells what came of it.
pub fn cancel_task(task: &TaskRecord) {
    cancel::request(&task.namespace, &task.key);
}

/// Declares the tasks extension in the server's capabilities.
pub fn advertise(info: &mut ServerConfig) {
    info.capabilities.extensions.get_or_insert_with(Default::default).entry(TASKS_EXTENSION_ID.to_owned()).or_default();
}

fn failed(task: Task, error: &ErrorData) -> DetailedTask {
    DetailedTask::new(task, TaskPayload::Failed { error: object(error) })
}

fn rpc_error(error: &Error) -> ErrorData {
    ErrorData::new(RpcCode::INTERNAL_ERROR, error.message().to_owned(), Some(error.to_json()))
}

fn object<T: serde::Serialize>(value: &T) -> JsonObject {
    match serde_json::to_value(value) {
        Ok(Value::Object(object)) => object,
        Ok(other) => JsonObject::from_iter([("value".to_owned(), other)]),
        Err(error) => JsonObject::from_iter([("message".to_owned(), Value::String(error.to_string()))]),
    }
}

fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn base64url(bytes: &[u8], out: &mut String) {
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
        }
    }
}

fn unbase64url(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    for chunk in text.as_bytes().chunks(4) {
        if chunk.len() == 1 {
            return None;
        }
        let mut n = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            let value = ALPHABET.iter().position(|a| a == c)? as u32;
            n |= value << (18 - 6 * i);
        }
        for i in 0..chunk.len() - 1 {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_ids_name_their_record_and_nothing_else() {
        for (namespace, key) in [("billing::send_invoice", "invoice:acme:2026-10"), ("a", ""), ("n", "k.é/😀:%2F")] {
            let id = TaskRecord::task_id(namespace, key);
            assert!(id.starts_with("idem1.") && id.is_ascii(), "{id}");
            assert_eq!(TaskRecord::parse(&id).unwrap(), TaskRecord { namespace: namespace.into(), key: key.into() });
        }
        assert_ne!(TaskRecord::task_id("a", "bc"), TaskRecord::task_id("ab", "c"));
        for foreign in ["", "idem1.", "idem1.YQ", "idem1.Y.YQ", "idem1.!!.YQ", "550e8400-e29b-41d4-a716-446655440000"] {
            assert!(TaskRecord::parse(foreign).is_err(), "{foreign}");
        }
    }

    #[test]
    fn timestamps_are_iso_8601_in_utc() {
        assert_eq!(crate::store::rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(crate::store::rfc3339(1_795_095_900_123), "2026-11-19T13:45:00.123Z");
        assert_eq!(crate::store::rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(crate::store::rfc3339(-1), "1969-12-31T23:59:59.999Z");
    }
}
