//! What a repeat gets after the first request was answered.

use std::sync::atomic::Ordering;

use idem::MemoryStore;
use idem::http::IdempotencyLayer;

use crate::support::{app, post_invoice, send, serve};

const INVOICE: &str = r#"{"customer":"acme","amount":120}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeat_gets_the_stored_response_with_allowed_headers_only() {
    let (router, billing) = app(IdempotencyLayer::new(MemoryStore::new()));
    let addr = serve(router).await;
    let first = post_invoice(addr, "r", INVOICE).await;
    assert_eq!(first.status, 201);
    assert!(!first.replayed());
    // The first caller gets every header the service sent.
    for name in ["set-cookie", "authorization", "x-request-id", "location", "content-type"] {
        assert!(first.header(name).is_some(), "{name} reaches the first caller: {first:?}");
    }
    for _ in 0..3 {
        let again = post_invoice(addr, "r", INVOICE).await;
        assert_eq!((again.status, again.body.as_str()), (201, first.body.as_str()));
        assert!(again.replayed(), "{again:?}");
        assert_eq!(again.header("location"), first.header("location"));
        assert_eq!(again.header("content-type"), Some("application/json"));
        for never in ["set-cookie", "authorization", "x-request-id"] {
            assert_eq!(again.header(never), None, "{never} is not replayed: {again:?}");
        }
    }
    assert_eq!(billing.invoices("r"), 1);
    assert_eq!(billing.handler_calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replayed_headers_are_configurable_but_never_credentials() {
    let layer = IdempotencyLayer::new(MemoryStore::new()).replay_headers([http_name("x-request-id")]);
    let (router, _) = app(layer);
    let addr = serve(router).await;
    let first = post_invoice(addr, "h", INVOICE).await;
    let again = post_invoice(addr, "h", INVOICE).await;
    assert_eq!(again.header("x-request-id"), first.header("x-request-id"));
    assert_eq!(again.header("location"), None, "only the listed headers are replayed");
    let refused = std::panic::catch_unwind(|| {
        IdempotencyLayer::new(MemoryStore::new()).replay_headers([http_name("set-cookie")]);
    });
    let message = *refused.expect_err("listing Set-Cookie panics").downcast::<String>().unwrap();
    assert!(message.contains("set-cookie is never stored"), "{message}");
}

fn http_name(name: &'static str) -> axum::http::HeaderName {
    axum::http::HeaderName::from_static(name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_5xx_releases_the_key_and_the_retry_runs() {
    let (router, billing) = app(IdempotencyLayer::new(MemoryStore::new()));
    let addr = serve(router).await;
    billing.fail_next.store(503, Ordering::SeqCst);
    let failed = post_invoice(addr, "f", INVOICE).await;
    assert_eq!((failed.status, failed.body.as_str()), (503, "try again"), "the service's own response");
    let retry = post_invoice(addr, "f", INVOICE).await;
    assert_eq!(retry.status, 201);
    assert!(!retry.replayed(), "the retry ran");
    assert!(post_invoice(addr, "f", INVOICE).await.replayed());
    assert_eq!(billing.handler_calls.load(Ordering::SeqCst), 2);
    assert_eq!(billing.invoices("f"), 1);
    // A 4xx is final: it is replayed, and the service is not asked again.
    billing.fail_next.store(402, Ordering::SeqCst);
    let declined = post_invoice(addr, "g", INVOICE).await;
    assert_eq!(declined.status, 402);
    let again = post_invoice(addr, "g", INVOICE).await;
    assert_eq!((again.status, again.body.as_str(), again.replayed()), (402, "try again", true));
    assert_eq!(billing.handler_calls.load(Ordering::SeqCst), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn which_responses_are_final_is_configurable() {
    let layer = IdempotencyLayer::new(MemoryStore::new()).final_when(|status| status.is_success());
    let (router, billing) = app(layer);
    let addr = serve(router).await;
    billing.fail_next.store(409, Ordering::SeqCst);
    assert_eq!(post_invoice(addr, "c", INVOICE).await.status, 409);
    assert_eq!(post_invoice(addr, "c", INVOICE).await.status, 201, "a 4xx released the key");
    assert_eq!(billing.handler_calls.load(Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_are_per_caller_when_scoped() {
    let layer = IdempotencyLayer::new(MemoryStore::new()).scope(|parts| {
        // As an auth layer would set it; here, straight from a header.
        parts.headers.get("x-caller").and_then(|caller| caller.to_str().ok()).unwrap_or_default().to_owned()
    });
    let (router, billing) = app(layer);
    let addr = serve(router).await;
    let as_caller = |caller: &'static str| [("x-caller", caller), ("idempotency-key", "same-key")];
    let alice = send(addr, "POST", "/v1/invoices", &as_caller("alice"), INVOICE).await;
    let bob = send(addr, "POST", "/v1/invoices", &as_caller("bob"), r#"{"customer":"bob","amount":5}"#).await;
    assert_eq!((alice.status, bob.status), (201, 201), "one key, two callers, two requests");
    assert_ne!(alice.body, bob.body);
    let alice_again = send(addr, "POST", "/v1/invoices", &as_caller("alice"), INVOICE).await;
    assert!(alice_again.replayed());
    assert_eq!(alice_again.body, alice.body, "alice gets her own response, never bob's");
    assert_eq!(billing.invoices("same-key"), 2);
    let nobody = send(addr, "POST", "/v1/invoices", &[("idempotency-key", "same-key")], INVOICE).await;
    assert_eq!((nobody.status, nobody.problem().as_str()), (500, "scope-missing"));
    assert_eq!(billing.invoices("same-key"), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_final_response_too_large_to_store_leaves_the_outcome_unknown() {
    let (router, billing) = app(IdempotencyLayer::new(MemoryStore::new()).max_body(1024));
    let addr = serve(router).await;
    let first = send(addr, "POST", "/v1/export", &[("idempotency-key", "x")], "").await;
    assert_eq!((first.status, first.body.len()), (200, 4096), "the first caller gets the whole response");
    let again = send(addr, "POST", "/v1/export", &[("idempotency-key", "x")], "").await;
    assert_eq!((again.status, again.problem().as_str()), (409, "outcome-unknown"));
    assert_eq!(again.header("retry-after"), None);
    assert_eq!(billing.handler_calls.load(Ordering::SeqCst), 1, "the export is not run again");
}
