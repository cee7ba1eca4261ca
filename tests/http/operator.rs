//! An operator settles a key the layer left unknown, with the same operations as the `idem`
//! command (`idem list`, `idem resolve`), on the SQLite file the layer writes.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use idem::SqliteStore;
use idem::http::IdempotencyLayer;
use idem::store::{Admin, ListQuery, RecordId, StateFilter};

use crate::support::{app, send, serve};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_outcome_is_listed_and_settled_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path().join("keys.db")).unwrap());
    let (router, billing) = app(IdempotencyLayer::new(Arc::clone(&store)).max_body(1024));
    let addr = serve(router).await;
    let export =
        |key: &'static str| async move { send(addr, "POST", "/v1/export", &[("idempotency-key", key)], "").await };
    assert_eq!(export("exp:1").await.status, 200);
    assert_eq!(export("exp:2").await.status, 200);
    assert_eq!(export("exp:1").await.problem(), "outcome-unknown");

    let query = ListQuery { state: StateFilter::Abandoned, namespace: Some("http"), ..ListQuery::default() };
    let stuck: Vec<String> = store.list(&query).unwrap().into_iter().map(|listed| listed.key).collect();
    // Keys are stored escaped, as a tool's key fields are.
    assert_eq!(stuck, ["exp%3A1", "exp%3A2"]);

    // Checked what happened: export 1 finished (record its response), export 2 did not.
    let response = r#"{"status":200,"headers":[["content-type","text/plain"]],"body":"exported by hand"}"#;
    store.resolve_done(RecordId { namespace: "http", key: "exp%3A1" }, response, idem::store::DEFAULT_RETAIN).unwrap();
    store.resolve_release(RecordId { namespace: "http", key: "exp%3A2" }).unwrap();
    let settled = export("exp:1").await;
    assert_eq!((settled.status, settled.body.as_str(), settled.replayed()), (200, "exported by hand", true));
    assert_eq!(settled.header("content-type"), Some("text/plain"));
    assert_eq!(export("exp:2").await.status, 200, "released: the export runs again");
    assert_eq!(billing.handler_calls.load(Ordering::SeqCst), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_callers_records_are_listed_by_their_scope() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path().join("keys.db")).unwrap());
    let layer = IdempotencyLayer::new(Arc::clone(&store))
        .scope(|parts| parts.headers.get("x-caller").map(|c| c.to_str().unwrap().to_owned()).unwrap_or_default());
    let (router, _) = app(layer);
    let addr = serve(router).await;
    for caller in ["alice", "bob", "alice"] {
        let headers = [("x-caller", caller), ("idempotency-key", if caller == "bob" { "b" } else { "a" })];
        send(addr, "POST", "/v1/ping", &headers, "").await;
    }
    let alice = idem::store::scope_prefix("alice");
    let query = ListQuery { namespace: Some("http"), key_prefix: Some(&alice), ..ListQuery::default() };
    let keys: Vec<String> = store.list(&query).unwrap().into_iter().map(|listed| listed.key).collect();
    assert_eq!(keys, [format!("{alice}a")], "what `idem list --scope alice` lists");
}
