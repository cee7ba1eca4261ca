//! Approvals as an exporter sees them: each call's span outcome, the counters of
//! `idem::telemetry::metrics()`, and one lifecycle event per request, approval, decline and expiry.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use idem::approval::blocking;
use idem::store::RecordId;
use idem::telemetry::{Happened, LifecycleEvent, Outcome, add_observer, remove_observer};
use idem::{MemoryStore, idempotent};

use super::capture::Capture;

const NAMESPACE: &str = "telemetry::transfer";

#[idempotent(
    key = "transfer:<to>",
    compare = [amount],
    approval(when = amount > 100, ttl = "20ms"),
    store = store,
    namespace = "telemetry::transfer"
)]
fn transfer(store: &MemoryStore, to: &str, amount: u32) -> Result<u32, idem::Error> {
    Ok(amount)
}

/// Calls `transfer` once; its span's outcome and the outcome `observe` reports.
fn call(store: &MemoryStore, capture: &Capture, to: &str, amount: u32) -> (String, Outcome) {
    let (_, calls) = capture.run(|| idem::telemetry::observe(|| transfer(store, to, amount)));
    let seen = capture.seen();
    let (_, span) = seen.spans_named("execute_tool transfer").last().expect("the call's span");
    (span.field("idem.outcome").expect("an outcome").to_owned(), calls[0].outcome)
}

fn count(outcome: Outcome) -> u64 {
    let metrics = idem::telemetry::metrics();
    metrics.iter().find(|tool| tool.namespace == NAMESPACE).map_or(0, |tool| tool.count(outcome))
}

fn id(to: &str) -> String {
    format!("transfer:{to}")
}

#[test]
fn approvals_show_in_spans_counters_and_lifecycle_events() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&events);
    let observer = add_observer(move |event: &LifecycleEvent<'_>| {
        if event.namespace == NAMESPACE {
            kept.lock().unwrap().push((event.key.to_string(), event.happened));
        }
    });
    let (store, capture) = (MemoryStore::new(), Capture::default());
    let before: Vec<u64> = [Outcome::ApprovalRequired, Outcome::Declined, Outcome::ApprovalExpired].map(count).to_vec();

    // Asked once, however often it is called; then approved, it runs once and replays.
    for _ in 0..3 {
        assert_eq!(call(&store, &capture, "alice", 500), ("approval_required".into(), Outcome::ApprovalRequired));
    }
    let key = id("alice");
    blocking::approve(&store, RecordId { namespace: NAMESPACE, key: &key }, "ops", None).unwrap();
    assert_eq!(call(&store, &capture, "alice", 500), ("fresh".into(), Outcome::Fresh));
    assert_eq!(call(&store, &capture, "alice", 500), ("replayed".into(), Outcome::Replayed));

    // Declined: every call answers DECLINED.
    call(&store, &capture, "bob", 500);
    let key = id("bob");
    blocking::decline(&store, RecordId { namespace: NAMESPACE, key: &key }, "ops", Some("no")).unwrap();
    for _ in 0..2 {
        assert_eq!(call(&store, &capture, "bob", 500), ("declined".into(), Outcome::Declined));
    }

    // Unanswered past its 20 ms: the next call is told it expired, the one after asks anew.
    call(&store, &capture, "carol", 500);
    std::thread::sleep(Duration::from_millis(25)); // past the request's time to live, by the clock it is judged by
    assert_eq!(call(&store, &capture, "carol", 500), ("approval_expired".into(), Outcome::ApprovalExpired));
    assert_eq!(call(&store, &capture, "carol", 500), ("approval_required".into(), Outcome::ApprovalRequired));

    // Below the threshold: no approval, no event.
    assert_eq!(call(&store, &capture, "dave", 50), ("fresh".into(), Outcome::Fresh));

    assert!(remove_observer(observer));
    let after: Vec<u64> = [Outcome::ApprovalRequired, Outcome::Declined, Outcome::ApprovalExpired].map(count).to_vec();
    let counted: Vec<u64> = after.iter().zip(&before).map(|(after, before)| after - before).collect();
    assert_eq!(counted, [3 + 1 + 2, 2, 1], "approval_required, declined, approval_expired");
    let events = events.lock().unwrap().clone();
    let expected = [
        (id("alice"), Happened::ApprovalRequested),
        (id("alice"), Happened::Approved),
        (id("alice"), Happened::Replayed),
        (id("bob"), Happened::ApprovalRequested),
        (id("bob"), Happened::Declined),
        (id("bob"), Happened::Declined),
        (id("carol"), Happened::ApprovalRequested),
        (id("carol"), Happened::ApprovalExpired),
        (id("carol"), Happened::ApprovalRequested),
    ];
    assert_eq!(events, expected);
}
