//! One `tools/call` served through `#[idem::tasks]`: it runs as a tokio task of its own,
//! and the driver tells it (through [`Serving`]) when it may answer with a task instead of
//! the tool's own output.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rmcp::ErrorData;
use rmcp::model::{CallToolResponse, CreateTaskResult, InputRequiredResult, Task, TaskStatus};
use tokio::sync::Notify;

use super::client::Client;
use super::in_band::{self, Answered};
use super::records::{self, Run};
use super::state::{kept, millis};
use crate::approval::Request;
use crate::call::{Serving, Tool, answers};
use crate::error::Running;
use crate::key::Key;
use crate::store::{BoxFuture, DynStore, RecordId, RecordState, Store, StoreError, Token, rfc3339};

tokio::task_local! {
    /// Set while a `tools/call` is served through `#[idem::tasks]`.
    static CALL: Arc<Served>;
}

/// What a `tools/call` served through `#[idem::tasks]` learns while it runs: the task it
/// answers with (its action was running already), and when its body started (for its
/// `timeout`).
struct Served {
    /// Who asks, and what its client can do.
    client: Client,
    state: Mutex<ServedState>,
    changed: Notify,
}

#[derive(Default)]
struct ServedState {
    /// The task the call answers with instead of IN_PROGRESS.
    answered: Option<CreateTaskResult>,
    /// The call's body runs: when its `timeout` passes, the answer it gives then.
    running: Option<(Instant, CallToolResponse)>,
    /// The question the call answers with instead of APPROVAL_REQUIRED (MCP 2026-07-28).
    input_required: Option<InputRequiredResult>,
    /// The call's own answer to a question did not read: the call is refused with this.
    refused: Option<ErrorData>,
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

/// Serves one `tools/call`; see [`super::serve_call`].
pub(super) async fn serve_call<F>(client: Client, call: F) -> Result<CallToolResponse, ErrorData>
where
    F: Future<Output = Result<CallToolResponse, ErrorData>> + Send + 'static,
{
    let served = Arc::new(Served { client, state: Mutex::default(), changed: Notify::new() });
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
            let mut state = served.lock();
            if let Some(refused) = state.refused.take() {
                return Err(refused);
            }
            match (state.answered.take(), state.input_required.take()) {
                (Some(task), _) => Ok(CallToolResponse::Task(task)),
                (None, Some(question)) => Ok(CallToolResponse::InputRequired(question)),
                (None, None) => response,
            }
        }
        answer = served.timed_out() => Ok(answer),
    }
}

/// The front end of async rmcp tools: what their `Tool` names as its
/// [`serving`](Tool::serving).
#[derive(Debug)]
pub struct Tasks;

/// The one [`Tasks`] front end.
pub static SERVING: Tasks = Tasks;

impl Serving for Tasks {
    fn found_running<'a>(
        &'a self,
        tool: &'static Tool,
        key: &'a Key,
        running: &'a Running,
        store: &'a dyn DynStore,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let Some(served) = served_here() else { return };
            if !served.client.offered {
                return;
            }
            // The record as it is now: the run the task stands for is the one holding it.
            let id = RecordId { namespace: tool.namespace, key: key.as_str() };
            let run = match store.read(id).await {
                Ok(Some(record)) if matches!(record.state, RecordState::InProgress { lease_expired: false, .. }) => {
                    Run {
                        namespace: id.namespace.into(),
                        key: id.key.into(),
                        token: record.token,
                        created_at_ms: record.created_at_ms,
                        awaits_approval: false,
                    }
                }
                Ok(_) => return, // settled or abandoned meanwhile: IN_PROGRESS is answer enough
                Err(error) => return unrecorded(tool, &error),
            };
            match task_of(tool, store, &run).await {
                Ok(task) => served.lock().answered = Some(handle(task, running)),
                Err(error) => unrecorded(tool, &error),
            }
        })
    }

    fn body_started<'a>(
        &'a self,
        tool: &'static Tool,
        key: &'a Key,
        token: Token,
        started: Instant,
        store: &'a dyn DynStore,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let Some(timeout) = tool.timeout else { return };
            let Some(served) = served_here() else {
                warn_unserved(tool);
                return;
            };
            let running = Running {
                retry_after: answers::retry_after(timeout, tool.lease, None),
                since_ms: None,
                progress: None,
            };
            let timed_out = || {
                CallToolResponse::Complete(super::super::error_result(&answers::timed_out(tool, Some(key), timeout)))
            };
            let answer = match served.client.offered.then(|| started_task(tool, key, token, store)) {
                Some(made) => match made.await {
                    Ok(task) => CallToolResponse::Task(handle(task, &running)),
                    Err(error) => {
                        unrecorded(tool, &error);
                        timed_out()
                    }
                },
                None => timed_out(),
            };
            served.lock().running = Some((started + timeout, answer));
            served.changed.notify_one();
        })
    }

    fn renewed<'a>(
        &'a self,
        tool: &'static Tool,
        key: &'a Key,
        token: Token,
        store: &'a dyn DynStore,
    ) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            if crate::call::cancel::is_requested(tool.namespace, key.as_str()) {
                return false; // known here already
            }
            // The run's task, if it has one, and whether any worker recorded a cancel for it.
            let asked = async {
                let Some(secret) = records::known_secret(store).await? else { return Ok(None) };
                let id = super::ids::task_id(&secret, tool.namespace, key.as_str(), token);
                records::get(store, &records::cancel_key(&id)).await
            };
            match asked.await {
                Ok(found) => found.is_some(),
                Err(error) => {
                    tracing::debug!(target: "idem", tool = tool.name, %error, "could not read whether the call's task was cancelled");
                    false
                }
            }
        })
    }

    fn approval_required<'a>(
        &'a self,
        tool: &'static Tool,
        key: &'a Key,
        asked: &'a Request,
        store: &'a dyn DynStore,
    ) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let Some(served) = served_here() else { return false };
            // An answer the client sent with the call counts only as the answer to the
            // question asked (its `requestState`); any other changes nothing.
            match in_band::answered(tool, key, asked, store, &served.client).await {
                Answered::Taken => return true,
                Answered::Refused(refused) => {
                    served.lock().refused = Some(refused);
                    return false;
                }
                Answered::Not => {}
            }
            if served.client.offered {
                // A tasks client gets the waiting call as a task at once: `input_required`
                // with the question, answered by `tasks/update` or decided out of band.
                match awaiting_task(tool, key, asked, store).await {
                    Ok(task) => {
                        served.lock().running = Some((Instant::now(), CallToolResponse::Task(task)));
                        served.changed.notify_one();
                        in_band::decided(tool, key, asked, store).await;
                        return true;
                    }
                    Err(error) => unrecorded(tool, &error),
                }
            }
            in_band::ask(tool, key, asked, store, &served.client, |question| {
                served.lock().input_required = Some(question);
            })
            .await
        })
    }
}

/// The `tools/call` being served here. The driver asks only about a call made outside any
/// tool's body: a call made inside one never answers for the outer call.
fn served_here() -> Option<Arc<Served>> {
    CALL.try_with(Arc::clone).ok()
}

/// The task of the run that reserved `key` under `token` just now.
async fn started_task(tool: &Tool, key: &Key, token: Token, store: &dyn DynStore) -> Result<Task, StoreError> {
    let id = RecordId { namespace: tool.namespace, key: key.as_str() };
    let record = store.read(id).await?.ok_or_else(|| StoreError::Corrupt("the record just reserved is gone".into()))?;
    let run = Run {
        namespace: id.namespace.into(),
        key: id.key.into(),
        token,
        created_at_ms: record.created_at_ms,
        awaits_approval: false,
    };
    task_of(tool, store, &run).await
}

/// The task of a call that waits for the approval `asked`: one per request, so every call
/// made while it waits answers with the same task.
async fn awaiting_task(
    tool: &Tool,
    key: &Key,
    asked: &Request,
    store: &dyn DynStore,
) -> Result<CreateTaskResult, StoreError> {
    let run = Run {
        namespace: tool.namespace.into(),
        key: key.as_str().into(),
        token: Token(0),
        created_at_ms: asked.asked_at_ms,
        awaits_approval: true,
    };
    let mut task = task_of(tool, store, &run).await?;
    task.status = TaskStatus::InputRequired;
    task.status_message = Some(format!("waiting for a person's approval: {}", asked.text));
    task.poll_interval_ms = Some(millis(in_band::MOST_BETWEEN_READS));
    Ok(CreateTaskResult::new(task))
}

/// The task of `run`, made (with its record in the store) unless it exists.
async fn task_of(tool: &Tool, store: &dyn DynStore, run: &Run) -> Result<Task, StoreError> {
    let secret = records::secret(store).await?;
    let id = if run.awaits_approval {
        super::ids::approval_task_id(&secret, &run.namespace, &run.key, run.created_at_ms)
    } else {
        super::ids::task_id(&secret, &run.namespace, &run.key, run.token)
    };
    records::put_run(store, &id, run, std::time::Duration::from_millis(kept(tool))).await?;
    let created = rfc3339(run.created_at_ms);
    Ok(Task::new(id, TaskStatus::Working, created.clone(), created).with_ttl_ms(kept(tool)))
}

/// The handle a call answers with: the task, working, polled as `running` says.
fn handle(mut task: Task, running: &Running) -> CreateTaskResult {
    task.poll_interval_ms = Some(millis(running.retry_after));
    task.status_message = running.progress.clone();
    CreateTaskResult::new(task)
}

/// A task that could not be recorded: the call answers as it would without tasks.
fn unrecorded(tool: &Tool, error: &StoreError) {
    tracing::warn!(target: "idem", tool = tool.name, %error, "the call's task could not be recorded; it answers without a task");
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
