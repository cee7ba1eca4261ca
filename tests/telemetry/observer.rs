//! Lifecycle events for code: an observer sees a fenced completion, an abandoned body, a
//! take-over and a reconciliation, each with its tool, key and phase.

use std::sync::{Arc, Barrier, Mutex};

use idem::store::{Admin, RecordId};
use idem::telemetry::Outcome;
use idem::telemetry::{AbandonedBy, Happened, LifecycleEvent, Phase, Verdict, add_observer, remove_observer};
use idem::{Abandoned, MemoryStore, Reconciled, idempotent};

/// The events of one namespace's tool, as (key, phase, what happened).
type Events = Arc<Mutex<Vec<(String, Phase, Happened)>>>;

/// Runs `f` with an observer that keeps the events of `namespace`'s tool.
fn watching(namespace: &'static str, f: impl FnOnce()) -> Vec<(String, Phase, Happened)> {
    let events = Events::default();
    let kept = Arc::clone(&events);
    let id = add_observer(move |event: &LifecycleEvent<'_>| {
        if event.namespace == namespace {
            kept.lock().unwrap().push((event.key.to_string(), event.phase, event.happened));
        }
    });
    f();
    assert!(remove_observer(id));
    assert!(!remove_observer(id), "an observer is removed once");
    events.lock().unwrap().clone()
}

#[idempotent(key = "ship:<order>", store = store, namespace = "telemetry::ship")]
fn ship(store: &MemoryStore, order: u32, entered: &Barrier, release: &Barrier) -> Result<u32, idem::Error> {
    entered.wait();
    release.wait();
    Ok(order)
}

#[test]
fn a_late_finisher_is_fenced_and_the_observer_is_told() {
    let store = MemoryStore::new();
    let (entered, release) = (Barrier::new(2), Barrier::new(2));
    let events = watching("telemetry::ship", || {
        let (answer, calls) = std::thread::scope(|scope| {
            let first = scope.spawn(|| idem::telemetry::observe(|| ship(&store, 1, &entered, &release)));
            entered.wait();
            // An operator releases the running call's key: its completion is fenced.
            store.resolve_release(RecordId { namespace: "telemetry::ship", key: "ship:1" }).unwrap();
            release.wait();
            first.join().unwrap()
        });
        assert_eq!(answer.unwrap(), 1, "the late finisher's caller still gets its result");
        assert_eq!(calls[0].outcome, Outcome::Fenced);
    });
    assert_eq!(events, [("ship:1".to_owned(), Phase::Settle, Happened::Fenced)]);
}

#[idempotent(key = "refund:<order>", store = store, namespace = "telemetry::refund",
    reconcile = |abandoned: Abandoned| if abandoned.key().as_str() == "refund:2" {
        Reconciled::Done(200)
    } else {
        Reconciled::NotDone
    })]
fn refund(store: &MemoryStore, order: u32, panic: bool) -> Result<u32, idem::Error> {
    if panic {
        panic!("the refund body panicked");
    }
    Ok(order * 100)
}

#[test]
fn an_abandoned_call_is_taken_over_and_reconciled_and_the_observer_is_told() {
    let store = MemoryStore::new();
    let events = watching("telemetry::refund", || {
        // Order 1: the body panics, so its key stays reserved.
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| refund(&store, 1, true)));
        assert!(panicked.is_err());
        // Order 2 completed, then an operator reopened it: it reads as abandoned at once,
        // and the hook says it was done.
        refund(&store, 2, false).unwrap();
        store.reopen(RecordId { namespace: "telemetry::refund", key: "refund:2" }).unwrap();
        let (answer, calls) = idem::telemetry::observe(|| refund(&store, 2, false));
        assert_eq!((answer.unwrap(), calls[0].outcome), (200, Outcome::Reconciled));
    });
    let order = |key: &str| events.iter().filter(|(k, ..)| k == key).map(|(_, p, h)| (*p, *h)).collect::<Vec<_>>();
    assert_eq!(order("refund:1"), [(Phase::Body, Happened::Abandoned(AbandonedBy::Panic))]);
    assert_eq!(
        order("refund:2"),
        [
            (Phase::Reserve, Happened::FoundAbandoned),
            (Phase::Reconcile, Happened::TakenOver),
            (Phase::Reconcile, Happened::Reconciled(Verdict::Done)),
        ]
    );
}

#[test]
fn replays_and_conflicts_are_told_too_and_a_panicking_observer_changes_nothing() {
    let store = MemoryStore::new();
    let panicking = add_observer(|event: &LifecycleEvent<'_>| {
        if event.namespace == "telemetry::label" {
            panic!("a broken observer");
        }
    });
    let events = watching("telemetry::label", || {
        assert_eq!(label(&store, 1, 10).unwrap(), 10);
        assert_eq!(label(&store, 1, 10).unwrap(), 10, "the replay is answered despite the panicking observer");
        assert_eq!(label(&store, 1, 20).unwrap_err().code(), idem::ErrorCode::Conflict);
    });
    assert!(remove_observer(panicking));
    assert_eq!(
        events,
        [
            ("label:1".to_owned(), Phase::Reserve, Happened::Replayed),
            ("label:1".to_owned(), Phase::Reserve, Happened::Conflict),
        ]
    );
}

#[idempotent(key = "label:<order>", compare = [weight], store = store, namespace = "telemetry::label")]
fn label(store: &MemoryStore, order: u32, weight: u32) -> Result<u32, idem::Error> {
    Ok(weight)
}

#[idempotent(key = "void:<order>", store = store, namespace = "telemetry::void")]
fn void(store: &MemoryStore, order: u32) -> Result<u32, idem::Error> {
    Ok(order)
}

#[test]
fn without_a_hook_an_abandoned_call_is_found_and_answered_unknown() {
    let store = MemoryStore::new();
    let events = watching("telemetry::void", || {
        void(&store, 1).unwrap();
        store.reopen(RecordId { namespace: "telemetry::void", key: "void:1" }).unwrap();
        assert_eq!(void(&store, 1).unwrap_err().code(), idem::ErrorCode::OutcomeUnknown);
    });
    assert_eq!(events, [("void:1".to_owned(), Phase::Reserve, Happened::FoundAbandoned)]);
}

#[idempotent(key = "shape:<order>", store = store, namespace = "telemetry::shape")]
fn shape_as_text(store: &MemoryStore, order: u32) -> Result<String, idem::Error> {
    Ok(format!("order {order}"))
}

/// The same records, read as another type: a stored result that no longer fits.
#[idempotent(key = "shape:<order>", store = store, namespace = "telemetry::shape")]
fn shape_as_number(store: &MemoryStore, order: u32) -> Result<u32, idem::Error> {
    Ok(order)
}

#[test]
fn a_stored_result_that_no_longer_reads_is_not_told_as_a_replay() {
    let store = MemoryStore::new();
    let events = watching("telemetry::shape", || {
        shape_as_text(&store, 1).unwrap();
        assert_eq!(shape_as_number(&store, 1).unwrap_err().code(), idem::ErrorCode::RecordUnreadable);
        shape_as_text(&store, 1).unwrap();
    });
    assert_eq!(events, [("shape:1".to_owned(), Phase::Reserve, Happened::Replayed)], "only the real replay");
}
