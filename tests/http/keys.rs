//! Which requests the layer refuses before the service runs, and which it lets through.

use std::sync::atomic::Ordering;

use idem::MemoryStore;
use idem::http::{Fingerprint, IdempotencyLayer};

use crate::support::{app, post_invoice, send, serve};

const INVOICE: &str = r#"{"customer":"acme","amount":120}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_broken_key_rule_is_a_400_problem_and_nothing_runs() {
    let (router, billing) = app(IdempotencyLayer::new(MemoryStore::new()));
    let addr = serve(router).await;
    let too_long = "k".repeat(256);
    let cases: [(&[(&str, &str)], &str); 9] = [
        (&[], "key-missing"),
        (&[("idempotency-key", "")], "key-empty"),
        (&[("idempotency-key", "\"\"")], "key-empty"),
        (&[("idempotency-key", "a,b")], "key-comma"),
        (&[("idempotency-key", "\"a,b\"")], "key-comma"),
        (&[("idempotency-key", &too_long)], "key-too-long"),
        (&[("idempotency-key", "k1"), ("idempotency-key", "k1")], "key-repeated"),
        (&[("idempotency-key", "\"unterminated")], "key-not-a-string"),
        (&[("idempotency-key", "two words")], "key-not-a-string"),
    ];
    for (headers, rule) in cases {
        let reply = send(addr, "POST", "/v1/invoices", headers, INVOICE).await;
        assert_eq!(reply.status, 400, "{headers:?}: {reply:?}");
        assert_eq!(reply.problem(), rule, "{headers:?}");
    }
    assert_eq!(billing.handler_calls.load(Ordering::SeqCst), 0, "no refused request reached the service");
    // The longest key allowed, and the quoted and bare forms of one key, are taken.
    let longest = "k".repeat(255);
    assert_eq!(post_invoice(addr, &longest, INVOICE).await.status, 201);
    assert_eq!(post_invoice(addr, "\"k-1\"", INVOICE).await.status, 201);
    assert!(post_invoice(addr, "k-1", INVOICE).await.replayed(), "\"k-1\" and k-1 are one key");
    assert_eq!(billing.total_invoices(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_methods_pass_through_untouched_even_with_a_key() {
    let (router, billing) = app(IdempotencyLayer::new(MemoryStore::new()));
    let addr = serve(router).await;
    for _ in 0..3 {
        let reply = send(addr, "GET", "/v1/invoices", &[("idempotency-key", "k")], "").await;
        assert_eq!(reply.status, 200);
        assert!(!reply.replayed());
    }
    assert_eq!(billing.listed.load(Ordering::SeqCst), 3, "each GET ran");
    // PUT is not among the default methods: it needs no key and is never replayed.
    assert_eq!(send(addr, "PUT", "/v1/invoices", &[], INVOICE).await.status, 201);
    let put = send(addr, "PUT", "/v1/invoices", &[("idempotency-key", "p")], INVOICE).await;
    assert!(put.status == 201 && !put.replayed());
    // PATCH is.
    assert_eq!(send(addr, "PATCH", "/v1/invoices", &[], INVOICE).await.problem(), "key-missing");
    let patch = send(addr, "PATCH", "/v1/invoices", &[("idempotency-key", "p")], INVOICE).await;
    assert_eq!(patch.status, 201);
    let again = send(addr, "PATCH", "/v1/invoices", &[("idempotency-key", "p")], INVOICE).await;
    assert!(again.replayed());
    assert_eq!(billing.invoices("p"), 2, "the PUT and the first PATCH; the second PATCH was a replay");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_methods_and_optional_keys() {
    let layer = IdempotencyLayer::new(MemoryStore::new()).methods([axum::http::Method::PUT]).key_optional();
    let (router, billing) = app(layer);
    let addr = serve(router).await;
    // POST is no longer covered; PUT without a key passes, unprotected.
    assert_eq!(send(addr, "POST", "/v1/invoices", &[], INVOICE).await.status, 201);
    assert_eq!(send(addr, "PUT", "/v1/invoices", &[], INVOICE).await.status, 201);
    assert_eq!(send(addr, "PUT", "/v1/invoices", &[], INVOICE).await.status, 201);
    // A key that is present is still checked and honoured.
    assert_eq!(send(addr, "PUT", "/v1/invoices", &[("idempotency-key", "a,b")], INVOICE).await.problem(), "key-comma");
    assert_eq!(send(addr, "PUT", "/v1/invoices", &[("idempotency-key", "u")], INVOICE).await.status, 201);
    assert!(send(addr, "PUT", "/v1/invoices", &[("idempotency-key", "u")], INVOICE).await.replayed());
    assert_eq!(billing.total_invoices(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_body_path_or_method_with_the_same_key_is_a_422() {
    let (router, billing) = app(IdempotencyLayer::new(MemoryStore::new()));
    let addr = serve(router).await;
    assert_eq!(post_invoice(addr, "k", INVOICE).await.status, 201);
    let other_amount = post_invoice(addr, "k", r#"{"customer":"acme","amount":150}"#).await;
    assert_eq!((other_amount.status, other_amount.problem().as_str()), (422, "key-reused"));
    assert!(other_amount.json()["detail"].as_str().unwrap().contains("another body"), "{}", other_amount.body);
    let other_path = send(addr, "POST", "/v1/other", &[("idempotency-key", "k")], INVOICE).await;
    assert_eq!((other_path.status, other_path.problem().as_str()), (422, "key-reused"));
    assert!(other_path.json()["detail"].as_str().unwrap().contains("path"), "{}", other_path.body);
    let other_query = send(addr, "POST", "/v1/invoices?draft=1", &[("idempotency-key", "k")], INVOICE).await;
    assert_eq!(other_query.status, 422);
    let patch = send(addr, "PATCH", "/v1/invoices", &[("idempotency-key", "k")], INVOICE).await;
    assert_eq!(patch.status, 422);
    // The first request is untouched: it still replays.
    assert!(post_invoice(addr, "k", INVOICE).await.replayed());
    assert_eq!(billing.total_invoices(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fingerprint_of_selected_json_fields_ignores_the_rest() {
    let layer = IdempotencyLayer::new(MemoryStore::new()).fingerprint(Fingerprint::json_fields(["customer", "amount"]));
    let (router, billing) = app(layer);
    let addr = serve(router).await;
    let first = post_invoice(addr, "k", r#"{"customer":"acme","amount":120,"sent_at":"10:00:00"}"#).await;
    assert_eq!(first.status, 201);
    let retry = post_invoice(addr, "k", r#"{"sent_at":"10:00:05","amount":120,"customer":"acme"}"#).await;
    assert!(retry.replayed(), "a new client timestamp is the same request");
    assert_eq!(retry.body, first.body);
    let changed = post_invoice(addr, "k", r#"{"customer":"acme","amount":121,"sent_at":"10:00:00"}"#).await;
    assert_eq!(changed.status, 422);
    let not_json = post_invoice(addr, "k2", "amount=120").await;
    assert_eq!((not_json.status, not_json.problem().as_str()), (400, "body-not-json"));
    assert_eq!(billing.total_invoices(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_body_is_a_request_like_any_other() {
    let (router, billing) = app(IdempotencyLayer::new(MemoryStore::new()));
    let addr = serve(router).await;
    let first = send(addr, "POST", "/v1/ping", &[("idempotency-key", "e")], "").await;
    assert_eq!((first.status, first.body.as_str()), (204, ""));
    let again = send(addr, "POST", "/v1/ping", &[("idempotency-key", "e")], "").await;
    assert_eq!((again.status, again.body.as_str(), again.replayed()), (204, "", true));
    assert_eq!(post_invoice(addr, "e2", "").await.status, 201);
    assert!(post_invoice(addr, "e2", "").await.replayed());
    assert_eq!(post_invoice(addr, "e2", "{}").await.status, 422, "an empty body is not {{}}");
    assert_eq!(billing.handler_calls.load(Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_over_max_body_is_a_413_and_nothing_runs() {
    let (router, billing) = app(IdempotencyLayer::new(MemoryStore::new()).max_body(64));
    let addr = serve(router).await;
    let big = format!(r#"{{"customer":"{}"}}"#, "a".repeat(100));
    let reply = post_invoice(addr, "big", &big).await;
    assert_eq!((reply.status, reply.problem().as_str()), (413, "body-too-large"));
    assert_eq!(billing.handler_calls.load(Ordering::SeqCst), 0);
    // Nothing was reserved: the same key with a body that fits runs.
    assert_eq!(post_invoice(addr, "big", INVOICE).await.status, 201);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_one_route_only_with_route_layer() {
    use axum::routing::post;
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = std::sync::Arc::clone(&calls);
    let count = move || {
        let counted = std::sync::Arc::clone(&counted);
        async move { counted.fetch_add(1, Ordering::SeqCst).to_string() }
    };
    let router = axum::Router::new()
        .route("/keyed", post(count.clone()).route_layer(IdempotencyLayer::new(MemoryStore::new())))
        .route("/open", post(count));
    let addr = serve(router).await;
    assert_eq!(send(addr, "POST", "/keyed", &[], "").await.problem(), "key-missing");
    let first = send(addr, "POST", "/keyed", &[("idempotency-key", "k")], "").await;
    let again = send(addr, "POST", "/keyed", &[("idempotency-key", "k")], "").await;
    assert!(again.replayed() && again.body == first.body);
    assert_eq!(send(addr, "POST", "/open", &[], "").await.status, 200, "the other route needs no key");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}
