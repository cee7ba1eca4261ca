//! An HTTP layer's requests are calls of a tool named after the layer: its span, counters
//! and lifecycle events are a tool's.

use idem::MemoryStore;
use idem::http::IdempotencyLayer;

use crate::capture::Capture;
use crate::support::{app, post_invoice, serve};

#[test]
fn a_layers_requests_have_the_spans_and_counters_of_a_tool() {
    let capture = Capture::default();
    // One thread runs the server, its request tasks and the client, so the capture sees all.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    capture.run(|| {
        runtime.block_on(async {
            let (router, _) = app(IdempotencyLayer::new(MemoryStore::new()).name("billing_api").namespace("billing"));
            let addr = serve(router).await;
            let body = r#"{"customer":"acme","amount":120}"#;
            assert_eq!(post_invoice(addr, "t-1", body).await.status, 201);
            assert!(post_invoice(addr, "t-1", body).await.replayed());
            assert_eq!(post_invoice(addr, "t-1", "{}").await.status, 422);
        })
    });
    let seen = capture.seen();
    let spans: Vec<_> = seen.spans_named("execute_tool billing_api").map(|(_, span)| span).collect();
    let outcomes: Vec<_> = spans.iter().map(|span| span.field("idem.outcome")).collect();
    assert_eq!(outcomes, [Some("fresh"), Some("replayed"), Some("conflict")], "{spans:#?}");
    for span in &spans {
        assert_eq!(span.target, "idem");
        assert_eq!(span.field("gen_ai.tool.name"), Some("billing_api"));
        assert_eq!(span.field("idem.namespace"), Some("billing"));
        assert!(span.closed);
    }
    assert_eq!(spans[2].field("error.type"), Some("CONFLICT"));
    let metrics =
        idem::telemetry::metrics().into_iter().find(|tool| tool.tool == "billing_api").expect("the layer's counters");
    assert_eq!(metrics.namespace, "billing");
    assert_eq!(
        [idem::telemetry::Outcome::Fresh, idem::telemetry::Outcome::Replayed, idem::telemetry::Outcome::Conflict]
            .map(|outcome| metrics.count(outcome)),
        [1, 1, 1]
    );
}
