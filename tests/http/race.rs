//! Concurrent duplicates: a repeat while the first request runs is a 409 with Retry-After,
//! and however many arrive at once, the service acts once per key; a request whose client
//! goes away while it runs still runs once, and its retry gets its response.

use std::future::poll_fn;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use idem::MemoryStore;
use idem::http::IdempotencyLayer;
use tokio::sync::Barrier;
use tower_service::Service;

use crate::support::{app, post_invoice, send, serve};

const INVOICE: &str = r#"{"customer":"acme","amount":120}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeat_while_the_first_runs_is_a_409_with_retry_after() {
    let (router, billing) = app(IdempotencyLayer::new(MemoryStore::new()));
    let addr = serve(router).await;
    let slow = |addr| async move { send(addr, "POST", "/v1/slow", &[("idempotency-key", "s")], INVOICE).await };
    let first = tokio::spawn(slow(addr));
    billing.entered.notified().await;
    // The first request is inside the service now: eight repeats at once, all while it runs.
    let barrier = Arc::new(Barrier::new(8));
    let repeats: Vec<_> = (0..8)
        .map(|_| {
            let barrier = Arc::clone(&barrier);
            tokio::spawn(async move {
                barrier.wait().await;
                slow(addr).await
            })
        })
        .collect();
    for repeat in repeats {
        let reply = repeat.await.unwrap();
        assert_eq!((reply.status, reply.problem().as_str()), (409, "request-in-progress"), "{reply:?}");
        let wait: u64 = reply.header("retry-after").expect("Retry-After").parse().unwrap();
        assert!((1..=10).contains(&wait), "a third of the 30 s lease at most: {wait}");
        assert!(reply.json()["detail"].as_str().unwrap().contains("being processed"), "{}", reply.body);
    }
    billing.go.notify_one();
    let first = first.await.unwrap();
    assert_eq!(first.status, 201);
    let after = slow(addr).await;
    assert!(after.replayed() && after.body == first.body);
    assert_eq!(billing.invoices("s"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_duplicates_make_one_invoice_per_key() {
    let (router, billing) = app(IdempotencyLayer::new(MemoryStore::new()));
    let addr = serve(router).await;
    const KEYS: usize = 25;
    const CLIENTS: usize = 6;
    for k in 0..KEYS {
        let key = format!("storm-{k}");
        let barrier = Arc::new(Barrier::new(CLIENTS));
        let clients: Vec<_> = (0..CLIENTS)
            .map(|_| {
                let (barrier, key) = (Arc::clone(&barrier), key.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    post_invoice(addr, &key, INVOICE).await
                })
            })
            .collect();
        let mut fresh = 0;
        for client in clients {
            let reply = client.await.unwrap();
            match (reply.status, reply.replayed()) {
                (201, false) => fresh += 1,
                (201, true) => {}
                (409, false) => assert_eq!(reply.problem(), "request-in-progress"),
                other => panic!("{key}: unexpected {other:?}: {reply:?}"),
            }
        }
        assert_eq!(fresh, 1, "{key}: one client got the fresh response");
        assert_eq!(billing.invoices(&key), 1, "{key}: one invoice");
    }
    assert_eq!(billing.total_invoices(), KEYS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_outlives_its_lease_keeps_its_key() {
    let (router, billing) = app(IdempotencyLayer::new(MemoryStore::new()).lease(Duration::from_secs(1)));
    let addr = serve(router).await;
    let slow = |addr| async move { send(addr, "POST", "/v1/slow", &[("idempotency-key", "long")], INVOICE).await };
    let first = tokio::spawn(slow(addr));
    billing.entered.notified().await;
    // Two and a half leases pass while the request runs: renewed every third of a lease, its
    // key is still held, and a repeat is told to wait, not run.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let during = slow(addr).await;
    assert_eq!((during.status, during.problem().as_str()), (409, "request-in-progress"), "{during:?}");
    assert_eq!(during.header("retry-after"), Some("1"), "a third of the lease, rounded up to a second");
    billing.go.notify_one();
    assert_eq!(first.await.unwrap().status, 201);
    assert!(slow(addr).await.replayed());
    assert_eq!(billing.invoices("long"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_whose_client_goes_away_still_runs_once_and_is_replayed() {
    let (mut router, billing) = app(IdempotencyLayer::new(MemoryStore::new()));
    let request = Request::post("/v1/slow")
        .header("idempotency-key", "gone")
        .header("content-type", "application/json")
        .body(Body::from(INVOICE))
        .unwrap();
    poll_fn(|cx| Service::<Request<Body>>::poll_ready(&mut router, cx)).await.unwrap();
    let mut first = Box::pin(router.call(request));
    // The request runs until the service waits; then its future is dropped, as a server
    // drops it when the client's connection closes.
    tokio::select! {
        _ = &mut first => panic!("the service answered before it was let go"),
        () = billing.entered.notified() => {}
    }
    drop(first);
    billing.go.notify_one();
    let addr = serve(router).await;
    // The request goes on without its client: repeats wait for it, then get its response.
    let deadline = Instant::now() + Duration::from_secs(10);
    let reply = loop {
        let reply = send(addr, "POST", "/v1/slow", &[("idempotency-key", "gone")], INVOICE).await;
        if reply.status != 409 || Instant::now() > deadline {
            break reply;
        }
        assert_eq!(reply.problem(), "request-in-progress", "{reply:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert_eq!((reply.status, reply.replayed()), (201, true), "{reply:?}");
    assert_eq!(billing.invoices("gone"), 1);
}
