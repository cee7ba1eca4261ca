//! A task's state, read from the store: what `tasks/get` answers, and what `tasks/cancel`
//! looks at first.
//!
//! The task stands for one run of an action ([`Run`]); the action's record says how that
//! run stands while it is the record's run (the same reservation, kept through a take-over):
//!
//! | the record | the task |
//! | --- | --- |
//! | in progress, lease live | `working`: the progress message, the retry hint as poll interval |
//! | completed | `completed`: the result, as the tool returns it on a replay |
//! | failed (`on_error = keep`) | `failed`: the kept error |
//! | abandoned (lease ended) | `failed`: OUTCOME_UNKNOWN |
//! | gone, or a later run's | `cancelled` if a `tasks/cancel` arrived, else `failed`: the call failed and released its key |
//!
//! A `failed` or `cancelled` answer is written to the store the first time it is given
//! (`<id>/end`), so it never changes: a reconciliation, a new run or an operator that
//! settles the key later does not bring an ended task back.

use std::time::Duration;

use rmcp::ErrorData;
use rmcp::handler::server::tool::IntoCallToolResult;
use rmcp::model::{
    CallToolResponse, DetailedTask, ElicitRequest, ElicitRequestParams, ElicitationSchema, InputRequest, InputRequests,
    JsonObject, Task, TaskPayload, TaskStatus,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::records::{self, Run, cancel_key, end_key};
use crate::approval::{Request, State};
use crate::call::{Tool, answers};
use crate::error::Error;
use crate::key::Key;
use crate::output::{ToolOutput, replay_value};
use crate::store::{RecordId, RecordState, Store, StoreError, now_ms, rfc3339};

/// The state of task `id`, which stands for `run` of `tool`'s action.
pub(super) async fn state<O, S>(tool: &'static Tool, store: &S, id: &str, run: &Run) -> Result<DetailedTask, ErrorData>
where
    O: ToolOutput + IntoCallToolResult,
    O::Value: DeserializeOwned,
    S: Store + ?Sized,
{
    if let Some(end) = records::get(store, &end_key(id)).await.map_err(|e| store_error(tool, &run.key, &e))? {
        return serde_json::from_str(&end).map_err(|e| {
            ErrorData::internal_error(format!("the ended task {id}'s record does not read ({e}): {end}"), None)
        });
    }
    let record = store
        .read(RecordId { namespace: &run.namespace, key: &run.key })
        .await
        .map_err(|e| store_error(tool, &run.key, &e))?
        .filter(|record| match run.awaits_approval {
            // The action's run that began after approval was asked for is this task's.
            true => record.created_at_ms >= run.created_at_ms,
            false => record.created_at_ms == run.created_at_ms,
        });
    let task = |status: TaskStatus, updated_ms: i64| {
        Task::new(id, status, rfc3339(run.created_at_ms), rfc3339(updated_ms)).with_ttl_ms(kept(tool))
    };
    if record.is_none() && run.awaits_approval {
        let waiting = awaiting::<O, S>(tool, store, run, task).await?;
        return match waiting.status() {
            TaskStatus::InputRequired | TaskStatus::Working => Ok(waiting),
            _ => freeze(tool, store, (id, run), waiting).await,
        };
    }
    let Some(record) = record else {
        let cancelled =
            records::get(store, &cancel_key(id)).await.map_err(|e| store_error(tool, &run.key, &e))?.is_some();
        let ended = if cancelled {
            DetailedTask::new(task(TaskStatus::Cancelled, now_ms()), TaskPayload::Cancelled)
        } else {
            let message = format!(
                "{}: the call ended without a recorded result: it failed, and a failed call releases its key (calling {} again runs it)",
                tool.name, tool.name
            );
            failed(task(TaskStatus::Failed, now_ms()), &ErrorData::internal_error(message, None))
        };
        return freeze(tool, store, (id, run), ended).await;
    };
    let updated_ms = record.updated_at_ms;
    match record.state {
        RecordState::InProgress { lease_expired: false, lease_until_ms, progress } => {
            let running = answers::running(tool, record.created_at_ms, lease_until_ms, progress);
            let mut working = task(TaskStatus::Working, updated_ms).with_poll_interval_ms(millis(running.retry_after));
            working.status_message = running.progress;
            Ok(DetailedTask::new(working, TaskPayload::Working))
        }
        RecordState::InProgress { lease_expired: true, .. } => {
            let error = answers::unknown(tool, &Key::stored(&run.key));
            let data = error.to_json();
            let error = ErrorData::internal_error(error.message().to_owned(), Some(data));
            freeze(tool, store, (id, run), failed(task(TaskStatus::Failed, updated_ms), &error)).await
        }
        RecordState::Completed { result } => {
            let mut done = task(TaskStatus::Completed, updated_ms);
            if let Some(until) = record.retain_until_ms {
                done.ttl_ms = Some(u64::try_from(until - record.created_at_ms).unwrap_or(0));
            }
            let value = replay_value::<O::Value>(&result)
                .map_err(|e| rpc_error(&answers::unreadable(tool, &Key::stored(&run.key), "result", &e)))?;
            Ok(match O::from_value(value).into_call_tool_result() {
                Ok(CallToolResponse::Complete(result)) => {
                    DetailedTask::new(done, TaskPayload::Completed { result: object(&result) })
                }
                Ok(_) => failed(done, &ErrorData::internal_error("the recorded result is not a tool result", None)),
                Err(error) => failed(done, &error),
            })
        }
        RecordState::Failed { error } => {
            let error = match serde_json::from_str::<Value>(&error) {
                Ok(Value::Object(error)) if error.contains_key("code") && error.contains_key("message") => error,
                Ok(other) => object(&ErrorData::internal_error(format!("{}: the call failed", tool.name), Some(other))),
                Err(_) => object(&ErrorData::internal_error(format!("{}: the call failed: {error}", tool.name), None)),
            };
            Ok(DetailedTask::new(task(TaskStatus::Failed, updated_ms), TaskPayload::Failed { error }))
        }
    }
}

/// The state of a call waiting for approval, whose action has no run yet:
///
/// | the approval | the task |
/// | --- | --- |
/// | asked, waiting | `input_required`: the question to the user (`tasks/update` answers it) |
/// | approved | `working`: the waiting call runs the action (`failed` when no run began within the tool's lease: the waiting call stopped) |
/// | declined | `completed` with the DECLINED answer the call gives |
/// | expired | `completed` with the APPROVAL_EXPIRED answer |
/// | reopened, asked anew | `failed`: calling the tool again asks anew, as a new task |
async fn awaiting<O, S>(
    tool: &'static Tool,
    store: &S,
    run: &Run,
    task: impl Fn(TaskStatus, i64) -> Task,
) -> Result<DetailedTask, ErrorData>
where
    O: ToolOutput + IntoCallToolResult,
    S: Store + ?Sized,
{
    let id = RecordId { namespace: &run.namespace, key: &run.key };
    let key = Key::stored(&run.key);
    let state = crate::approval::state(store, id).await.map_err(|e| store_error(tool, &run.key, &e))?;
    let same = |request: &crate::approval::Request| request.asked_at_ms == run.created_at_ms;
    let answered = |error: Error, at_ms: i64| match O::from_error(error).into_call_tool_result() {
        Ok(CallToolResponse::Complete(result)) => {
            DetailedTask::new(task(TaskStatus::Completed, at_ms), TaskPayload::Completed { result: object(&result) })
        }
        Ok(_) => failed(task(TaskStatus::Failed, at_ms), &ErrorData::internal_error("not a tool result", None)),
        Err(error) => failed(task(TaskStatus::Failed, at_ms), &error),
    };
    Ok(match state {
        Some(State::Pending(request)) if same(&request) => {
            let mut waiting = task(TaskStatus::InputRequired, request.asked_at_ms);
            waiting.status_message = Some(format!("waiting for a person's approval: {}", request.text));
            let question = InputRequest::Elicitation(ElicitRequest::new(question(tool, &request)));
            let input_requests = InputRequests::from([(super::APPROVAL_INPUT.to_owned(), question)]);
            DetailedTask::new(waiting, TaskPayload::InputRequired { input_requests })
        }
        // Approved, and no run began within a lease: the call that waited is gone (its
        // worker stopped). Calling the tool again runs the approved action.
        Some(State::Approved(request, decision))
            if same(&request) && now_ms() - decision.at_ms > millis_i64(tool.lease) =>
        {
            let message = format!(
                "{}: approved by {}, but the call that waited for the approval stopped before running it: calling {} again runs the approved action",
                tool.name, decision.by, tool.name
            );
            failed(task(TaskStatus::Failed, now_ms()), &ErrorData::internal_error(message, None))
        }
        Some(State::Approved(request, decision)) if same(&request) => {
            let mut working = task(TaskStatus::Working, decision.at_ms);
            working.status_message = Some(format!("approved by {}; the action runs", decision.by));
            DetailedTask::new(working, TaskPayload::Working)
        }
        Some(State::Declined(request, decision)) if same(&request) => {
            answered(crate::call::approval::declined(tool, &key, &request, &decision), decision.at_ms)
        }
        Some(State::Expired(request)) if same(&request) => {
            answered(crate::call::approval::expired(tool, &key, &request), request.expires_at_ms)
        }
        _ => {
            let message = format!(
                "{}: this call's approval request was reopened: calling {} again asks a person anew",
                tool.name, tool.name
            );
            failed(task(TaskStatus::Failed, now_ms()), &ErrorData::internal_error(message, None))
        }
    })
}

/// Writes an ended task's state, unless another caller wrote one first; returns the state
/// that stands.
async fn freeze<S: Store + ?Sized>(
    tool: &Tool,
    store: &S,
    (id, run): (&str, &Run),
    ended: DetailedTask,
) -> Result<DetailedTask, ErrorData> {
    let json = serde_json::to_string(&ended).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    let stands =
        records::put(store, &end_key(id), &json, tool.retain).await.map_err(|e| store_error(tool, &run.key, &e))?;
    Ok(if stands == json { ended } else { serde_json::from_str(&stands).unwrap_or(ended) })
}

/// How long a task is kept, counted from its creation: its records are kept as long as its
/// run may hold the key and then as long as the tool keeps results.
pub(super) fn kept(tool: &Tool) -> u64 {
    millis(tool.max_hold.saturating_add(tool.retain))
}

fn failed(task: Task, error: &ErrorData) -> DetailedTask {
    DetailedTask::new(task, TaskPayload::Failed { error: object(error) })
}

/// A store that cannot be read: a JSON-RPC error, not a failed task; asking again later may
/// answer.
pub(super) fn store_error(tool: &Tool, key: &str, error: &StoreError) -> ErrorData {
    let (_, error) = answers::store_failed(tool, &Key::stored(key), error);
    rpc_error(&error)
}

pub(super) fn rpc_error(error: &Error) -> ErrorData {
    ErrorData::new(rmcp::model::ErrorCode::INTERNAL_ERROR, error.message().to_owned(), Some(error.to_json()))
}

fn object<T: serde::Serialize>(value: &T) -> JsonObject {
    match serde_json::to_value(value) {
        Ok(Value::Object(object)) => object,
        Ok(other) => JsonObject::from_iter([("value".to_owned(), other)]),
        Err(error) => JsonObject::from_iter([("message".to_owned(), Value::String(error.to_string()))]),
    }
}

pub(super) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn millis_i64(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// The question the user sees: the action's text and the compared fields, to accept or
/// decline (no fields to fill in).
pub(super) fn question(tool: &Tool, asked: &Request) -> ElicitRequestParams {
    let message = format!(
        "{} needs your approval: {}\n\nExactly this will be approved: {} ({}).\nAccept to approve it, decline to refuse it.",
        tool.name, asked.text, asked.request, asked.key
    );
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema: ElicitationSchema::builder().build().expect("an empty object schema"),
    }
}
