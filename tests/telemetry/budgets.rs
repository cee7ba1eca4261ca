//! Budgets as an exporter sees them: each call's span outcome, the counter of
//! `idem::telemetry::metrics()`, and a lifecycle event per charge, refund and refusal.

use std::sync::{Arc, Mutex};

use idem::budget::Budget;
use idem::telemetry::{Happened, LifecycleEvent, Outcome, add_observer, remove_observer};
use idem::{MemoryStore, idempotent};

use super::capture::Capture;

const NAMESPACE: &str = "telemetry::refund";
static REFUNDS: Budget = Budget::count("telemetry.refunds", 2).per_day();

#[idempotent(key = "refund:<order>", budget = REFUNDS, store = store, namespace = "telemetry::refund")]
fn refund(store: &MemoryStore, order: &str, fail: bool) -> Result<u32, idem::Error> {
    match fail {
        true => Err(idem::Error::new(idem::ErrorCode::Timeout, "the bank did not answer")),
        false => Ok(1),
    }
}

/// Calls `refund` once; its span's outcome and the outcome `observe` reports.
fn call(store: &MemoryStore, capture: &Capture, order: &str, fail: bool) -> (String, Outcome) {
    let (_, calls) = capture.run(|| idem::telemetry::observe(|| refund(store, order, fail)));
    let seen = capture.seen();
    let (_, span) = seen.spans_named("execute_tool refund").last().expect("the call's span");
    (span.field("idem.outcome").expect("an outcome").to_owned(), calls[0].outcome)
}

fn count(outcome: Outcome) -> u64 {
    let metrics = idem::telemetry::metrics();
    metrics.iter().find(|tool| tool.namespace == NAMESPACE).map_or(0, |tool| tool.count(outcome))
}

#[test]
fn budgets_show_in_spans_counters_and_lifecycle_events() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&events);
    let observer = add_observer(move |event: &LifecycleEvent<'_>| {
        let budget =
            matches!(event.happened, Happened::BudgetSpent | Happened::BudgetRefunded | Happened::BudgetExceeded);
        if event.namespace == NAMESPACE && budget {
            kept.lock().unwrap().push((event.key.to_string(), event.happened));
        }
    });
    let (store, capture) = (MemoryStore::new(), Capture::default());
    let before = count(Outcome::BudgetExceeded);

    assert_eq!(call(&store, &capture, "a", false), ("fresh".into(), Outcome::Fresh));
    // A failure that releases its key: charged, then refunded.
    let (failed, _) = call(&store, &capture, "b", true);
    assert_ne!(failed, "budget_exceeded");
    assert_eq!(call(&store, &capture, "c", false), ("fresh".into(), Outcome::Fresh));
    assert_eq!(call(&store, &capture, "a", false), ("replayed".into(), Outcome::Replayed), "a replay spends nothing");
    for _ in 0..2 {
        assert_eq!(call(&store, &capture, "d", false), ("budget_exceeded".into(), Outcome::BudgetExceeded));
    }

    assert!(remove_observer(observer));
    assert_eq!(count(Outcome::BudgetExceeded) - before, 2);
    let events = events.lock().unwrap().clone();
    let expected = [
        ("refund:a".to_owned(), Happened::BudgetSpent),
        ("refund:b".to_owned(), Happened::BudgetSpent),
        ("refund:b".to_owned(), Happened::BudgetRefunded),
        ("refund:c".to_owned(), Happened::BudgetSpent),
        ("refund:d".to_owned(), Happened::BudgetExceeded),
        ("refund:d".to_owned(), Happened::BudgetExceeded),
    ];
    assert_eq!(events, expected);
}
