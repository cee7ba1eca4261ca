//! The same rules on SQLite, PostgreSQL and Redis, and a store that fails.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use idem::SqliteStore;
use idem::http::IdempotencyLayer;
use idem::store::Store;
use tokio::sync::Barrier;

use crate::broken_store::BrokenStore;
use crate::postgres::{fresh_schema, test_url};
use crate::support::{app, post_invoice, send, serve};

const INVOICE: &str = r#"{"customer":"acme","amount":120}"#;

/// First request, replay, 422, a 5xx released, a 409 while running, a storm: one invoice
/// per key, and a second process (another layer on the same store) sees the same records.
async fn the_rules_hold_on<St: Store + 'static>(store: Arc<St>) {
    let (router, billing) = app(IdempotencyLayer::new(Arc::clone(&store)).namespace("billing"));
    let addr = serve(router).await;
    assert_eq!(post_invoice(addr, "a", INVOICE).await.status, 201);
    assert!(post_invoice(addr, "a", INVOICE).await.replayed());
    assert_eq!(post_invoice(addr, "a", r#"{"customer":"acme","amount":1}"#).await.status, 422);
    billing.fail_next.store(500, Ordering::SeqCst);
    assert_eq!(post_invoice(addr, "b", INVOICE).await.status, 500);
    assert_eq!(post_invoice(addr, "b", INVOICE).await.status, 201);

    let slow = tokio::spawn(async move { send(addr, "POST", "/v1/slow", &[("idempotency-key", "c")], INVOICE).await });
    billing.entered.notified().await;
    let during = send(addr, "POST", "/v1/slow", &[("idempotency-key", "c")], INVOICE).await;
    assert_eq!((during.status, during.problem().as_str()), (409, "request-in-progress"));
    assert!(during.header("retry-after").is_some());
    billing.go.notify_one();
    assert_eq!(slow.await.unwrap().status, 201);

    let barrier = Arc::new(Barrier::new(6));
    let storm: Vec<_> = (0..6)
        .map(|_| {
            let barrier = Arc::clone(&barrier);
            tokio::spawn(async move {
                barrier.wait().await;
                post_invoice(addr, "d", INVOICE).await.status
            })
        })
        .collect();
    for client in storm {
        assert!(matches!(client.await.unwrap(), 201 | 409));
    }
    for key in ["a", "b", "c", "d"] {
        assert_eq!(billing.invoices(key), 1, "{key}");
    }

    // Another worker on the same store: it replays what the first answered.
    let (router, other) = app(IdempotencyLayer::new(store).namespace("billing"));
    let other_addr = serve(router).await;
    assert!(post_invoice(other_addr, "a", INVOICE).await.replayed());
    assert_eq!(other.total_invoices(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("keys.db")).unwrap();
    the_rules_hold_on(Arc::new(store)).await;
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cluster() {
    let Some(url) = crate::redis::test_cluster_url("http::stores::redis_cluster") else { return };
    let store = idem::RedisStore::builder(&url).prefix(&fresh_schema("idem_http")).build().unwrap();
    the_rules_hold_on(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres() {
    let Some(url) = test_url("http::stores::postgres") else { return };
    let schema = fresh_schema("idem_http");
    let store = idem::PgStore::builder(&url).schema(&schema).build().unwrap();
    store.migrate().await.unwrap();
    the_rules_hold_on(Arc::new(store)).await;
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client.batch_execute(&format!("DROP SCHEMA {schema} CASCADE")).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_fails_is_a_503_and_the_service_does_not_run() {
    let (router, billing) = app(IdempotencyLayer::new(BrokenStore));
    let addr = serve(router).await;
    let reply = post_invoice(addr, "k", INVOICE).await;
    assert_eq!((reply.status, reply.problem().as_str()), (503, "store-unavailable"));
    assert_eq!(reply.header("retry-after"), Some("1"));
    assert_eq!(billing.handler_calls.load(Ordering::SeqCst), 0);
    // Requests the layer does not cover never touch the store.
    assert_eq!(send(addr, "GET", "/v1/list", &[], "").await.status, 200);
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis() {
    let Some(url) = crate::redis::test_url("http::stores::redis") else { return };
    let store = idem::RedisStore::builder(&url).prefix(&fresh_schema("idem_http")).build().unwrap();
    the_rules_hold_on(Arc::new(store)).await;
}
