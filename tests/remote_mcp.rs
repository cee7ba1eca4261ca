//! A remote MCP server as users deploy one: `examples/remote_mcp` workers (separate
//! processes) serving rmcp's streamable HTTP behind an authentication layer, one store
//! they share, rmcp's own streamable HTTP client. The store is PostgreSQL when
//! IDEM_TEST_DATABASE_URL is set (as under CI) and the `postgres` feature is on, else one
//! SQLite file; effects are lines the workers append to one file, counted here.
//!
//! A worker is this test binary run again (the ignored test `remote_mcp_worker`), serving
//! the example's own `worker::serve`: the test runs what its own build made, however it is
//! run (`cargo test -p idem-tools --features rmcp --test remote_mcp` alone too).

#[path = "../examples/remote_mcp/billing.rs"]
#[allow(dead_code)]
mod billing;
#[path = "../examples/remote_mcp/cluster.rs"]
mod cluster;
#[path = "support/postgres.rs"]
mod postgres;
#[path = "../examples/remote_mcp/proxy.rs"]
mod proxy;
#[path = "../examples/remote_mcp/worker.rs"]
mod worker;

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use billing::Effects;
use cluster::{Client, Worker, connect};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ErrorCode, GetTaskParams, GetTaskResult, TaskPayload,
    TaskStatus, UpdateTaskParams,
};
use rmcp::service::ServiceError;
use serde_json::{Value, json};

/// Two workers on one store, and where their effects go.
struct Cluster {
    workers: Vec<Worker>,
    effects: Effects,
    /// The PostgreSQL schema to drop at the end.
    schema: Option<(String, String)>,
    _dir: tempfile::TempDir,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.workers.clear(); // stopped first: nothing uses the schema any more
        let Some((url, schema)) = self.schema.take() else { return };
        // Tests run on tokio runtimes, where this thread must not block on another one.
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async {
                let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
                tokio::spawn(connection);
                client.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).await.unwrap();
            });
        })
        .join()
        .unwrap();
    }
}

impl Cluster {
    /// Two workers; each export page takes `page_ms`.
    fn start(test: &str, page_ms: u64) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let effects = Effects { path: dir.path().join("effects.log") };
        let (db, schema, on_pg) = match std::env::var("IDEM_TEST_DATABASE_URL") {
            Ok(url) if !url.is_empty() && cfg!(feature = "postgres") => (url, postgres::fresh_schema("remote"), true),
            _ => {
                eprintln!("{test}: on one SQLite file (IDEM_TEST_DATABASE_URL is not set)");
                (dir.path().join("idem.db").display().to_string(), "idem".to_owned(), false)
            }
        };
        let (effects_path, page) = (effects.path.display().to_string(), page_ms.to_string());
        let args = ["--db", &db, "--schema", &schema, "--effects", &effects_path, "--page-ms", &page];
        let workers = (0..2).map(|_| Worker::start(&mut worker_process(&args)).unwrap()).collect();
        Cluster { workers, effects, schema: on_pg.then_some((db, schema)), _dir: dir }
    }

    fn url(&self, worker: usize) -> String {
        format!("http://{}/mcp", self.workers[worker].address)
    }

    /// One address in front of both workers, each request to the next.
    async fn balanced(&self) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(proxy::round_robin(listener, self.workers.iter().map(|worker| worker.address).collect()));
        url
    }

    fn effects(&self, kind: &str) -> Vec<String> {
        self.effects.lines().into_iter().filter(|line| line.starts_with(kind)).collect()
    }
}

/// Where a worker process finds its arguments.
const WORKER_ARGS: &str = "IDEM_TEST_REMOTE_MCP_WORKER";

/// A worker: this binary run again as `remote_mcp_worker`, which serves `args`.
fn worker_process(args: &[&str]) -> Command {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.args(["remote_mcp_worker", "--exact", "--ignored", "--nocapture", "--test-threads=1"]);
    command.env(WORKER_ARGS, args.join("\n"));
    command
}

/// A worker process's body: the example's `serve`, until the test stops it.
#[test]
#[ignore = "a worker process of this file's tests"]
fn remote_mcp_worker() {
    let args: Vec<String> = std::env::var(WORKER_ARGS).expect("run by a test").split('\n').map(str::to_owned).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(worker::serve(&args)).unwrap();
}

async fn call(client: &Client, tool: &str, arguments: Value) -> CallToolResponse {
    let Value::Object(arguments) = arguments else { panic!("arguments are an object") };
    client
        .call_tool_once(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
        .expect("an answer, not a protocol error")
}

/// The structured content of a complete answer.
fn content(response: &CallToolResponse) -> Value {
    match response {
        CallToolResponse::Complete(result) => result.structured_content.clone().expect("structured content"),
        other => panic!("a complete answer, got {other:?}"),
    }
}

fn task_id(response: &CallToolResponse) -> String {
    match response {
        CallToolResponse::Task(created) => created.task.task_id.clone(),
        other => panic!("a task, got {other:?}"),
    }
}

async fn get(client: &Client, id: &str) -> Result<GetTaskResult, ServiceError> {
    client.get_task(GetTaskParams::new(id)).await
}

/// Polls until the task leaves `working`.
async fn settled(client: &Client, id: &str) -> GetTaskResult {
    for _ in 0..200 {
        let state = get(client, id).await.expect("tasks/get answers");
        if state.task.status() != TaskStatus::Working {
            return state;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {id} still working after 10 s")
}

fn invalid_params(answer: Result<impl std::fmt::Debug, ServiceError>) {
    match answer {
        Err(ServiceError::McpError(error)) => assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{error:?}"),
        other => panic!("-32602, got {other:?}"),
    }
}

#[tokio::test]
async fn tenants_replays_and_races_over_two_workers_behind_one_address() {
    let cluster = Cluster::start("tenants_replays_and_races", 100);
    let url = cluster.balanced().await;
    let (acme, beta) = (connect(&url, "acme-token").await.unwrap(), connect(&url, "beta-token").await.unwrap());
    let invoice = json!({"customer": "c1", "period": "2026-10", "amount": 120.0});

    // Two tenants, one business key: one effect each, each replayed its own.
    assert_eq!(content(&call(&acme, "send_invoice", invoice.clone()).await)["invoice"], "inv-acme-c1-2026-10");
    assert_eq!(content(&call(&beta, "send_invoice", invoice.clone()).await)["invoice"], "inv-beta-c1-2026-10");
    for _ in 0..2 {
        // The proxy alternates: one of these two repeats reaches each worker.
        let replay = content(&call(&acme, "send_invoice", invoice.clone()).await);
        assert_eq!(
            (replay["invoice"].as_str(), replay["replayed"].as_bool()),
            (Some("inv-acme-c1-2026-10"), Some(true))
        );
    }
    let other_amount = json!({"customer": "c1", "period": "2026-10", "amount": 150.0});
    assert_eq!(content(&call(&beta, "send_invoice", other_amount).await)["error"]["code"], "CONFLICT");
    let status = content(&call(&beta, "send_invoice_status", json!({"customer": "c1", "period": "2026-10"})).await);
    assert_eq!(status["result"]["invoice"], "inv-beta-c1-2026-10", "beta's status reads beta's record: {status}");
    let unknown = content(&call(&beta, "send_invoice_status", json!({"customer": "c9", "period": "2026-10"})).await);
    assert_eq!(unknown["status"], "not_found");
    assert_eq!(cluster.effects("invoice").len(), 2, "{:?}", cluster.effects("invoice"));

    // 8 racing first calls for one action, over both workers: one effect.
    let c2 = json!({"customer": "c2", "period": "2026-10", "amount": 80.0});
    let racing: Vec<_> = (0..8)
        .map(|_| {
            let (peer, c2) = (acme.peer().clone(), c2.clone());
            tokio::spawn(async move {
                let Value::Object(arguments) = c2 else { unreachable!() };
                peer.call_tool_once(CallToolRequestParams::new("send_invoice").with_arguments(arguments)).await.unwrap()
            })
        })
        .collect();
    let mut answers = Vec::new();
    for call in racing {
        answers.push(call.await.unwrap());
    }
    let fresh = answers.iter().filter(|answer| matches!(answer, CallToolResponse::Complete(r) if r.structured_content.as_ref().is_some_and(|c| c.get("replayed").is_none() && c.get("error").is_none()))).count();
    assert_eq!(fresh, 1, "{answers:?}");
    assert_eq!(cluster.effects("invoice").len(), 3, "{:?}", cluster.effects("invoice"));
    acme.cancel().await.unwrap();
    beta.cancel().await.unwrap();
}

#[tokio::test]
async fn a_scoped_task_works_on_every_worker_for_its_tenant_only() {
    let cluster = Cluster::start("a_scoped_task_works_on_every_worker", 400);
    let (acme1, acme2) =
        (connect(&cluster.url(0), "acme-token").await.unwrap(), connect(&cluster.url(1), "acme-token").await.unwrap());
    let beta2 = connect(&cluster.url(1), "beta-token").await.unwrap();
    let id = task_id(&call(&acme1, "export_ledger", json!({"month": "2026-10"})).await);
    assert!(!id.contains("2026") && !id.contains("export") && !id.contains("acme"), "the id reveals no key text: {id}");
    // A retry on the other worker is the same task.
    assert_eq!(task_id(&call(&acme2, "export_ledger", json!({"month": "2026-10"})).await), id);
    // Another tenant gets the answer for an unknown id, for every method.
    invalid_params(get(&beta2, &id).await);
    invalid_params(beta2.cancel_task(CancelTaskParams::new(&id)).await);
    let done = settled(&acme2, &id).await;
    let TaskPayload::Completed { result } = &done.task.payload else { panic!("completed, got {done:?}") };
    assert_eq!(result["structuredContent"]["export"], "export-acme-2026-10");
    assert_eq!(get(&acme1, &id).await.unwrap(), done, "the same on both workers");
    invalid_params(get(&beta2, &id).await);
    // Beta's own export of the same month is its own action.
    let beta_id = task_id(&call(&beta2, "export_ledger", json!({"month": "2026-10"})).await);
    assert_ne!(beta_id, id);
    invalid_params(get(&acme1, &beta_id).await);
    settled(&beta2, &beta_id).await;
    assert_eq!(cluster.effects("export").len(), 2, "{:?}", cluster.effects("export"));
    for client in [acme1, acme2, beta2] {
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn a_cancel_received_by_one_worker_stops_the_body_on_the_other() {
    let cluster = Cluster::start("a_cancel_received_by_one_worker", 2000);
    let (acme1, acme2) =
        (connect(&cluster.url(0), "acme-token").await.unwrap(), connect(&cluster.url(1), "acme-token").await.unwrap());
    let id = task_id(&call(&acme1, "export_ledger", json!({"month": "2026-11"})).await);
    acme2.cancel_task(CancelTaskParams::new(&id)).await.expect("acknowledged");
    // Worker 0's body sees the cancel at its next renewal (a third of its 3 s lease) and
    // stops before its second page: the task ends cancelled, with no export.
    let ended = settled(&acme1, &id).await;
    assert_eq!(ended.task.status(), TaskStatus::Cancelled, "{ended:?}");
    assert_eq!(get(&acme2, &id).await.unwrap().task.status(), TaskStatus::Cancelled);
    assert!(cluster.effects("export").is_empty(), "{:?}", cluster.effects("export"));
    // The action did not happen: calling again is a new run, a new task.
    let again = task_id(&call(&acme2, "export_ledger", json!({"month": "2026-11"})).await);
    assert_ne!(again, id);
    acme1.cancel().await.unwrap();
    acme2.cancel().await.unwrap();
}

#[tokio::test]
async fn a_worker_killed_mid_task_leaves_an_unknown_outcome_and_no_second_effect() {
    let mut cluster = Cluster::start("a_worker_killed_mid_task", 1500);
    let acme1 = connect(&cluster.url(0), "acme-token").await.unwrap();
    let acme2 = connect(&cluster.url(1), "acme-token").await.unwrap();
    let id = task_id(&call(&acme1, "export_ledger", json!({"month": "2026-12"})).await);
    cluster.workers[0].process.kill().unwrap(); // SIGKILL: no cleanup, the reservation stays
    cluster.workers[0].process.wait().unwrap();
    // Until its 3 s lease ends the export reads as running; then as abandoned.
    let ended = settled(&acme2, &id).await;
    let TaskPayload::Failed { error } = &ended.task.payload else { panic!("failed, got {ended:?}") };
    assert_eq!(error["data"]["error"]["code"], "OUTCOME_UNKNOWN", "{error:?}");
    let again = content(&call(&acme2, "export_ledger", json!({"month": "2026-12"})).await);
    assert_eq!(again["error"]["code"], "OUTCOME_UNKNOWN", "never a blind re-run: {again}");
    let status = content(&call(&acme2, "export_ledger_status", json!({"month": "2026-12"})).await);
    assert_eq!(status["status"], "unknown", "{status}");
    assert!(cluster.effects("export").is_empty(), "{:?}", cluster.effects("export"));
    acme2.cancel().await.unwrap();
    drop(acme1);
}

#[tokio::test]
async fn a_refund_waits_on_one_worker_and_its_user_approves_through_the_other() {
    let cluster = Cluster::start("a_refund_waits_on_one_worker", 100);
    let (acme1, acme2) =
        (connect(&cluster.url(0), "acme-token").await.unwrap(), connect(&cluster.url(1), "acme-token").await.unwrap());
    let beta2 = connect(&cluster.url(1), "beta-token").await.unwrap();
    let refund = json!({"invoice": "inv-acme-c1-2026-10", "amount": 900.0});
    let waiting = call(&acme1, "refund", refund.clone()).await;
    let CallToolResponse::Task(created) = &waiting else { panic!("a task, got {waiting:?}") };
    assert_eq!(created.task.status, TaskStatus::InputRequired, "{created:?}");
    let id = created.task.task_id.clone();
    // A retry on the other worker waits for the same decision: the same task.
    assert_eq!(task_id(&call(&acme2, "refund", refund.clone()).await), id);
    let state = get(&acme2, &id).await.unwrap();
    let TaskPayload::InputRequired { input_requests } = &state.task.payload else { panic!("{state:?}") };
    assert!(input_requests.contains_key(idem::frameworks::rmcp::APPROVAL_INPUT), "{input_requests:?}");
    // Another tenant can neither see nor answer it.
    let accept = || [(idem::frameworks::rmcp::APPROVAL_INPUT.to_owned(), json!({"action": "accept"}))].into();
    invalid_params(get(&beta2, &id).await);
    invalid_params(beta2.update_task(UpdateTaskParams::new(&id, accept())).await);
    assert!(cluster.effects("refund").is_empty(), "nothing before a decision: {:?}", cluster.effects("refund"));
    // A small refund needs nobody.
    let small = content(&call(&acme2, "refund", json!({"invoice": "inv-acme-c2-2026-10", "amount": 20.0})).await);
    assert_eq!(small["refund"], "refund-acme-inv-acme-c2-2026-10", "{small}");

    // Acme's user accepts through worker 1; one of the two calls waiting (one per worker)
    // runs the refund, the other finds it done.
    acme2.update_task(UpdateTaskParams::new(&id, accept())).await.expect("acknowledged");
    let mut done = get(&acme1, &id).await.unwrap();
    for _ in 0..200 {
        if !matches!(done.task.status(), TaskStatus::InputRequired | TaskStatus::Working) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        done = get(&acme1, &id).await.unwrap();
    }
    let TaskPayload::Completed { result } = &done.task.payload else { panic!("completed, got {done:?}") };
    assert_eq!(result["structuredContent"]["refund"], "refund-acme-inv-acme-c1-2026-10", "{result:?}");
    let refunds = cluster.effects("refund");
    assert_eq!(refunds.len(), 2, "{refunds:?}");
    assert_eq!(refunds.iter().filter(|line| line.contains(" 900.00 ")).count(), 1, "{refunds:?}");
    // Every later call replays it, on either worker.
    let again = content(&call(&acme2, "refund", refund).await);
    assert_eq!(again["replayed"], true, "{again}");
    assert_eq!(cluster.effects("refund").len(), 2);
    for client in [acme1, acme2, beta2] {
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn a_request_without_a_principal_is_refused_before_anything_is_reserved() {
    // The example's endpoint answers 401 to a request without a token: the client cannot
    // even connect.
    let cluster = Cluster::start("a_request_without_a_principal", 100);
    assert!(connect(&cluster.url(0), "no-such-token").await.is_err(), "no token, no session");

    // An endpoint that forgot the authentication layer: the tool refuses, nothing is kept.
    let store = Arc::new(idem::MemoryStore::new());
    let dir = tempfile::tempdir().unwrap();
    let effects = Effects { path: dir.path().join("effects.log") };
    let server = billing::Billing {
        store: store.clone(),
        effects: effects.clone(),
        invoice: Duration::ZERO,
        page: Duration::ZERO,
    };
    let config = rmcp::transport::StreamableHttpServerConfig::default().with_legacy_session_mode(false);
    let never = Arc::new(rmcp::transport::streamable_http_server::session::never::NeverSessionManager::default());
    let mcp = rmcp::transport::StreamableHttpService::new(move || Ok(server.clone()), never, config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, axum::Router::new().route_service("/mcp", mcp)).await });
    let client = connect(&url, "acme-token").await.unwrap();
    let Value::Object(arguments) = json!({"customer": "c1", "period": "2026-10", "amount": 1.0}) else {
        unreachable!()
    };
    let refused = client.call_tool_once(CallToolRequestParams::new("send_invoice").with_arguments(arguments)).await;
    match refused {
        Err(ServiceError::McpError(error)) => {
            assert_eq!(error.code, ErrorCode::INVALID_REQUEST, "{error:?}");
            assert!(error.message.contains("Principal"), "{error:?}");
        }
        other => panic!("refused, got {other:?}"),
    }
    let listed = idem::store::Admin::list(&*store, &idem::store::ListQuery::default()).unwrap();
    assert!(listed.is_empty(), "nothing reserved: {listed:?}");
    assert!(effects.lines().is_empty());
    client.cancel().await.unwrap();
}
