//! MCP Tasks (SEP-2663) through rmcp's own client: a slow call answers a client that takes
//! tasks with the task of its run, and a client that does not with TIMEOUT. The task is a
//! view of the record: the same for every retry of the run, read from the store by
//! `tasks/get`, and still there (with the same times) after the server is rebuilt on the
//! same store. Its id reveals nothing and cannot be computed; an ended task stays ended.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use crate::support::mcp::served;
use idem::{MemoryStore, idempotent};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities, ClientConfig,
    ErrorCode, GetTaskParams, GetTaskResult, Implementation, TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::service::{RoleClient, RunningService, ServiceError, ServiceExt};
use rmcp::{ErrorData, ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

/// Shared by every server of this file, as a database outlives a server's restarts. Each
/// test uses its own months, so their records never meet.
static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);

#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct Export {
    /// The month to export, e.g. 2026-10.
    month: String,
}

#[derive(Clone)]
struct Ledger {
    /// Exports the body finished: the effect, counted.
    exports: Arc<AtomicUsize>,
    /// Opened by the test when an export may finish.
    gate: Arc<Semaphore>,
    /// Set by the test to make a running export fail.
    fail: Arc<AtomicBool>,
}

#[idem::status_tools]
#[tool_router]
impl Ledger {
    /// Export one month of the ledger. Slow: after 50 ms the caller gets a task (or
    /// TIMEOUT) and the export goes on.
    #[idempotent(key = "export:<req.month>", timeout = "50ms", store = *STORE)]
    #[tool]
    async fn export_ledger(&self, Parameters(req): Parameters<Export>) -> Result<CallToolResult, ErrorData> {
        loop {
            if idem::cancel_requested() {
                return Err(ErrorData::internal_error("export cancelled", None));
            }
            if self.fail.load(Ordering::SeqCst) {
                return Err(ErrorData::internal_error("the ledger is locked", None));
            }
            idem::progress(format!("exporting {}", req.month));
            tokio::select! {
                permit = self.gate.acquire() => {
                    permit.expect("the gate stays open").forget();
                    break;
                }
                () = tokio::time::sleep(Duration::from_millis(5)) => {}
            }
        }
        self.exports.fetch_add(1, Ordering::SeqCst);
        Ok(CallToolResult::structured(json!({"month": req.month, "rows": 3})))
    }
}

#[tool_handler]
#[idem::tasks]
impl ServerHandler for Ledger {}

impl Ledger {
    fn new() -> Ledger {
        Ledger { exports: Arc::default(), gate: Arc::new(Semaphore::new(0)), fail: Arc::default() }
    }
}

type Client = RunningService<RoleClient, ClientConfig>;

/// Serves `ledger` over an in-process pipe to rmcp's client, which declares the tasks
/// extension when `tasks`.
async fn connect(ledger: Ledger, tasks: bool) -> Client {
    let client_io = served(ledger);
    let capabilities =
        if tasks { ClientCapabilities::builder().enable_tasks().build() } else { ClientCapabilities::default() };
    let info = ClientConfig::new(capabilities, Implementation::new("idem-tests", "0"));
    info.serve(client_io).await.expect("the client connects")
}

async fn call(client: &Client, month: &str) -> CallToolResponse {
    let args = json!({"month": month}).as_object().unwrap().clone();
    client
        .call_tool_once(CallToolRequestParams::new("export_ledger").with_arguments(args))
        .await
        .expect("an answer, not a protocol error")
}

fn task_id(response: &CallToolResponse) -> String {
    match response {
        CallToolResponse::Task(created) => {
            assert_eq!(created.task.status, TaskStatus::Working);
            assert!(created.task.poll_interval_ms.is_some_and(|ms| ms > 0), "{created:?}");
            created.task.task_id.clone()
        }
        other => panic!("a task, got {other:?}"),
    }
}

async fn get(client: &Client, id: &str) -> GetTaskResult {
    client.get_task(GetTaskParams::new(id)).await.expect("tasks/get answers")
}

/// Polls `tasks/get` until the task leaves `working`, as a client does.
async fn settled(client: &Client, id: &str) -> GetTaskResult {
    for _ in 0..1000 {
        let state = get(client, id).await;
        if state.task.status() != TaskStatus::Working {
            return state;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("task {id} still working after 1000 polls")
}

fn completed(state: &GetTaskResult) -> &serde_json::Map<String, Value> {
    match &state.task.payload {
        TaskPayload::Completed { result } => result,
        other => panic!("completed, got {other:?}"),
    }
}

#[tokio::test]
async fn a_slow_call_is_one_task_for_every_retry_and_outlives_its_server() {
    let ledger = Ledger::new();
    let client = connect(ledger.clone(), true).await;
    let tasks = client.peer_info().expect("initialized").capabilities.supports_tasks();
    assert!(tasks, "the server declares the tasks extension");

    let first = task_id(&call(&client, "2026-01").await);
    // The model retries the same action, before and after the body reported progress.
    let again = task_id(&call(&client, "2026-01").await);
    assert_eq!(again, first, "a retry is the same task, never a second one");
    let working = get(&client, &first).await;
    assert_eq!(working.task.status(), TaskStatus::Working);
    assert!(working.task.task.poll_interval_ms.is_some());
    let second = task_id(&call(&client, "2026-02").await);
    assert_ne!(second, first, "another action is another task");

    ledger.gate.add_permits(2);
    let done = settled(&client, &first).await;
    assert_eq!(completed(&done)["structuredContent"]["rows"], 3, "{done:?}");
    assert_eq!(completed(&done)["structuredContent"]["month"], "2026-01");
    // Once it finished, a retry gets the recorded result itself.
    let CallToolResponse::Complete(replay) = call(&client, "2026-01").await else { panic!("a result") };
    assert_eq!(replay.structured_content.unwrap()["replayed"], true);
    client.cancel().await.unwrap();

    // The server goes away; a new one on the same store still answers for the task.
    let rebuilt = Ledger::new();
    let client = connect(rebuilt.clone(), true).await;
    let after = get(&client, &first).await;
    assert_eq!(completed(&after)["structuredContent"]["rows"], 3);
    assert!(!first.contains("2026") && !first.contains("export"), "the id reveals no key text: {first}");
    settled(&client, &second).await;
    assert_eq!(ledger.exports.load(Ordering::SeqCst), 2, "one export per action");
    assert_eq!(rebuilt.exports.load(Ordering::SeqCst), 0, "the rebuilt server ran nothing");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn clients_without_tasks_get_timeout_and_the_status_tool() {
    let ledger = Ledger::new();
    let client = connect(ledger.clone(), false).await;
    let CallToolResponse::Complete(timeout) = call(&client, "2026-03").await else { panic!("no task for this client") };
    assert_eq!(timeout.is_error, Some(true));
    let error = &timeout.structured_content.as_ref().unwrap()["error"];
    assert_eq!(error["code"], "TIMEOUT", "{error}");
    assert!(error["suggestion"].as_str().unwrap().contains("export_ledger_status"), "{error}");
    let CallToolResponse::Complete(repeat) = call(&client, "2026-03").await else { panic!("no task") };
    assert_eq!(repeat.structured_content.unwrap()["error"]["code"], "IN_PROGRESS");
    let refused = client.get_task(GetTaskParams::new("idem2.AAAAAAAAAAAAAAAAAAAAAA")).await;
    assert!(refused.is_err(), "tasks/get needs the extension: {refused:?}");

    ledger.gate.add_permits(1);
    let args = json!({"month": "2026-03"}).as_object().unwrap().clone();
    let mut status = Value::Null;
    for _ in 0..1000 {
        let read = client
            .call_tool(CallToolRequestParams::new("export_ledger_status").with_arguments(args.clone()))
            .await
            .unwrap();
        status = read.structured_content.unwrap();
        if status["status"] != "in_progress" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(status["status"], "completed", "{status}");
    assert_eq!(ledger.exports.load(Ordering::SeqCst), 1);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn cancel_asks_the_body_to_stop_and_releases_nothing_itself() {
    let ledger = Ledger::new();
    let client = connect(ledger.clone(), true).await;
    let id = task_id(&call(&client, "2026-04").await);
    client.cancel_task(CancelTaskParams::new(&id)).await.expect("cancel is acknowledged");
    let state = settled(&client, &id).await;
    assert_eq!(state.task.status(), TaskStatus::Cancelled, "{state:?}");
    assert_eq!(ledger.exports.load(Ordering::SeqCst), 0, "the body stopped before its effect");
    client.cancel().await.unwrap();

    // Cancelled is final: after a restart, and on another server sharing the store.
    let rebuilt = Ledger::new();
    let client = connect(rebuilt.clone(), true).await;
    assert_eq!(get(&client, &id).await.task.status(), TaskStatus::Cancelled);

    // The action was not done: calling again runs it, as a new task; the old one stays cancelled.
    let again = task_id(&call(&client, "2026-04").await);
    assert_ne!(again, id, "a new run is a new task");
    rebuilt.gate.add_permits(1);
    assert_eq!(completed(&settled(&client, &again).await)["structuredContent"]["rows"], 3);
    assert_eq!(rebuilt.exports.load(Ordering::SeqCst), 1);
    assert_eq!(get(&client, &id).await.task.status(), TaskStatus::Cancelled, "an ended task never runs again");
    // Cancelling a task that ended changes nothing.
    client.cancel_task(CancelTaskParams::new(&again)).await.expect("acknowledged");
    assert_eq!(get(&client, &again).await.task.status(), TaskStatus::Completed);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn times_are_the_reservation_and_its_last_change_on_every_read() {
    let ledger = Ledger::new();
    let client = connect(ledger.clone(), true).await;
    let CallToolResponse::Task(handle) = call(&client, "2026-05").await else { panic!("a task") };
    let id = handle.task.task_id.clone();
    let working = get(&client, &id).await;
    let again = task_id(&call(&client, "2026-05").await);
    assert_eq!(again, id);
    ledger.gate.add_permits(1);
    let done = settled(&client, &id).await;
    client.cancel().await.unwrap();
    let client = connect(Ledger::new(), true).await;
    let after_restart = get(&client, &id).await;

    let created = &handle.task.created_at;
    for read in [&working.task.task, &done.task.task, &after_restart.task.task] {
        assert_eq!(&read.created_at, created, "createdAt is the reservation's time on every read: {read:?}");
        assert!(read.last_updated_at >= *created, "{read:?}");
        assert!(read.ttl_ms.is_some_and(|ttl| ttl > 0), "{read:?}");
    }
    assert_eq!(after_restart.task.task.last_updated_at, done.task.task.last_updated_at, "the completion's time");
    assert!(done.task.task.last_updated_at >= working.task.task.last_updated_at);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_failed_run_ends_its_task_and_a_new_call_is_a_new_task() {
    let ledger = Ledger::new();
    let client = connect(ledger.clone(), true).await;
    let id = task_id(&call(&client, "2026-06").await);
    ledger.fail.store(true, Ordering::SeqCst);
    let failed = settled(&client, &id).await;
    assert_eq!(failed.task.status(), TaskStatus::Failed, "{failed:?}");
    ledger.fail.store(false, Ordering::SeqCst);

    let again = task_id(&call(&client, "2026-06").await);
    assert_ne!(again, id, "the failure released the key: a new run, a new task");
    assert_eq!(get(&client, &id).await.task.status(), TaskStatus::Failed, "the failed task stays failed");
    ledger.gate.add_permits(1);
    settled(&client, &again).await;
    assert_eq!(get(&client, &id).await, failed, "an ended task reads the same, whatever came after");
    assert_eq!(ledger.exports.load(Ordering::SeqCst), 1);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn unknown_and_made_up_ids_are_invalid_params_for_every_method() {
    let ledger = Ledger::new();
    let client = connect(ledger.clone(), true).await;
    let id = task_id(&call(&client, "2026-07").await);
    client.update_task(UpdateTaskParams::new(&id, Default::default())).await.expect("a known task is acknowledged");
    let forged = format!("{}{}", &id[..id.len() - 1], if id.ends_with('A') { 'B' } else { 'A' });
    for unknown in ["550e8400-e29b-41d4-a716-446655440000", "idem2.AAAAAAAAAAAAAAAAAAAAAA", forged.as_str(), ""] {
        let get = client.get_task(GetTaskParams::new(unknown)).await;
        let cancel = client.cancel_task(CancelTaskParams::new(unknown)).await;
        let update = client.update_task(UpdateTaskParams::new(unknown, Default::default())).await;
        for (method, answer) in [("get", get.map(drop)), ("cancel", cancel), ("update", update)] {
            match answer {
                Err(ServiceError::McpError(error)) => {
                    assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "tasks/{method} {unknown:?}: {error:?}")
                }
                other => panic!("tasks/{method} {unknown:?}: {other:?}"),
            }
        }
    }
    ledger.gate.add_permits(1);
    settled(&client, &id).await;
    client.cancel().await.unwrap();
}
