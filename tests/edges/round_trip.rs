//! A result must read back as what it was. A value JSON cannot hold (`f64::NAN`, the
//! infinities) serializes as `null`; stored, it would answer RECORD_UNREADABLE to every
//! retry, forever. It is caught when the body finishes: the caller gets its result, the
//! result is not stored, and the key is kept (the effect happened) and marked abandoned,
//! so retries answer OUTCOME_UNKNOWN, or run the reconcile hook, never the body blindly.

use std::sync::atomic::{AtomicUsize, Ordering};

use idem::telemetry::Outcome;
use idem::{Abandoned, ErrorCode, MemoryStore, Reconciled, Status, idempotent};
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize)]
struct Reading {
    sensor: String,
    celsius: f64,
}

static READINGS: AtomicUsize = AtomicUsize::new(0);

/// Records a reading with the provider (the effect), then returns it.
#[idempotent(key = "reading:<sensor>", store = store)]
fn record_reading(store: &MemoryStore, sensor: String) -> Result<Reading, idem::Error> {
    READINGS.fetch_add(1, Ordering::SeqCst);
    Ok(Reading { sensor, celsius: f64::NAN })
}

#[test]
fn a_result_that_does_not_survive_its_round_trip_is_not_stored_and_never_poisons_the_key() {
    let store = MemoryStore::new();
    let (first, calls) = idem::telemetry::observe(|| record_reading(&store, "s1".into()));
    let first = first.expect("the caller still gets its result");
    assert!(first.celsius.is_nan() && first.sensor == "s1");
    assert_eq!(calls[0].outcome, Outcome::Unrecorded);
    for retry in 0..3 {
        let error = record_reading(&store, "s1".into()).unwrap_err();
        assert_eq!(error.code(), ErrorCode::OutcomeUnknown, "retry {retry}: {error}");
        assert!(!error.retryable());
    }
    assert!(matches!(record_reading_status(&store, "s1".into()).unwrap(), Status::Unknown { .. }));
    assert_eq!(READINGS.load(Ordering::SeqCst), 1, "the body ran once: the effect happened");
}

static SAMPLES: AtomicUsize = AtomicUsize::new(0);

#[idempotent(key = "sample:<probe>", store = store, reconcile = |_: Abandoned| async { Reconciled::Done(21.5) })]
async fn sample(store: &MemoryStore, probe: u32) -> Result<f64, idem::Error> {
    SAMPLES.fetch_add(1, Ordering::SeqCst);
    Ok(f64::INFINITY)
}

/// With a reconcile hook, the next call asks the provider, whose answer is recorded.
#[test]
fn with_a_reconcile_hook_the_next_call_settles_the_key() {
    let store = MemoryStore::new();
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    runtime.block_on(async {
        assert_eq!(sample(&store, 7).await.unwrap(), f64::INFINITY, "the caller gets its result");
        assert!(matches!(sample_status(&store, 7).await.unwrap(), Status::Unknown { .. }));
        assert_eq!(sample(&store, 7).await.unwrap(), 21.5, "the hook's answer");
        assert!(matches!(sample_status(&store, 7).await.unwrap(), Status::Completed(21.5)));
        assert_eq!(sample(&store, 7).await.unwrap(), 21.5);
    });
    assert_eq!(SAMPLES.load(Ordering::SeqCst), 1);
}

#[idempotent(key = "lookup:<id>", store = store)]
fn lookup(store: &MemoryStore, id: u32) -> Result<Option<Option<u32>>, idem::Error> {
    Ok(Some(None))
}

/// What JSON cannot tell apart reads back as something else, and is stored as it reads:
/// `Some(None)` and `None` are both `null`, so `Some(None)` replays as `None`.
#[test]
fn what_json_cannot_tell_apart_replays_as_json_reads_it() {
    let store = MemoryStore::new();
    assert_eq!(lookup(&store, 1).unwrap(), Some(None));
    assert_eq!(lookup(&store, 1).unwrap(), None);
}
