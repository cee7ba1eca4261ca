//! The `metrics` facade (feature `metrics`), read through `metrics-util`'s debugging
//! recorder after a known sequence of calls.

use idem::telemetry::conventions::{CALLS_METRIC, DURATION_METRIC};
use idem::{MemoryStore, idempotent};
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use metrics_util::{CompositeKey, MetricKind};

#[idempotent(key = "charge:<order>", compare = [cents], store = store, namespace = "telemetry::charge")]
fn charge(store: &MemoryStore, order: u32, cents: u64, decline: bool) -> Result<u64, idem::Error> {
    if decline { Err(idem::Error::new(idem::ErrorCode::InvalidKey, "declined")) } else { Ok(cents) }
}

type Snapshot = Vec<(CompositeKey, Option<metrics::Unit>, Option<metrics::SharedString>, DebugValue)>;

/// The value of the metric `name` whose labels include every pair of `labels`, and its
/// full label set; panics unless exactly one metric matches.
fn metric<'a>(snapshot: &'a Snapshot, kind: MetricKind, name: &str, labels: &[(&str, &str)]) -> &'a DebugValue {
    let found: Vec<_> = snapshot
        .iter()
        .filter(|(key, ..)| key.kind() == kind && key.key().name() == name)
        .filter(|(key, ..)| {
            labels.iter().all(|(k, v)| key.key().labels().any(|label| label.key() == *k && label.value() == *v))
        })
        .collect();
    assert_eq!(found.len(), 1, "one {name} with {labels:?} in {snapshot:#?}");
    &found[0].3
}

#[test]
fn a_known_sequence_gives_known_counts_and_one_duration_per_call() {
    let (store, recorder) = (MemoryStore::new(), DebuggingRecorder::new());
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        idem::telemetry::describe_metrics();
        charge(&store, 1, 500, false).unwrap();
        charge(&store, 1, 500, false).unwrap();
        charge(&store, 1, 500, false).unwrap();
        charge(&store, 1, 900, false).unwrap_err();
        charge(&store, 2, 100, true).unwrap_err();
    });
    let snapshot: Snapshot = snapshotter.snapshot().into_vec();
    let tool = [("gen_ai.tool.name", "charge"), ("idem.namespace", "telemetry::charge")];
    let count = |outcome: &str| {
        let labels = [tool[0], tool[1], ("idem.outcome", outcome)];
        metric(&snapshot, MetricKind::Counter, CALLS_METRIC, &labels)
    };
    assert_eq!(count("fresh"), &DebugValue::Counter(1));
    assert_eq!(count("replayed"), &DebugValue::Counter(2));
    assert_eq!(count("conflict"), &DebugValue::Counter(1));
    assert_eq!(count("released"), &DebugValue::Counter(1));
    let calls = snapshot.iter().filter(|(key, ..)| key.key().name() == CALLS_METRIC).count();
    assert_eq!(calls, 4, "no other outcome was counted");

    let durations = |outcome: &str, error: Option<&str>| {
        let mut labels = vec![tool[0], tool[1], ("idem.outcome", outcome), ("gen_ai.operation.name", "execute_tool")];
        labels.extend(error.map(|error| ("error.type", error)));
        match metric(&snapshot, MetricKind::Histogram, DURATION_METRIC, &labels) {
            DebugValue::Histogram(values) => values.iter().map(|value| value.into_inner()).collect::<Vec<f64>>(),
            other => panic!("{DURATION_METRIC} is a histogram, not {other:?}"),
        }
    };
    assert_eq!(durations("fresh", None).len(), 1);
    assert_eq!(durations("replayed", None).len(), 2);
    assert_eq!(durations("conflict", Some("CONFLICT")).len(), 1);
    assert_eq!(durations("released", Some("tool_error")).len(), 1);
    let all: Vec<f64> = ["fresh", "replayed"].iter().flat_map(|outcome| durations(outcome, None)).collect();
    assert!(all.iter().all(|seconds| (0.0..10.0).contains(seconds)), "seconds, not nanoseconds: {all:?}");
    let histograms = snapshot.iter().filter(|(key, ..)| key.key().name() == DURATION_METRIC).count();
    assert_eq!(histograms, 4, "one series per outcome and error type");
    let unit = snapshot.iter().find(|(key, ..)| key.key().name() == DURATION_METRIC).and_then(|(_, unit, ..)| *unit);
    assert_eq!(unit, Some(metrics::Unit::Seconds), "describe_metrics gives the unit");
}

#[test]
fn the_facade_and_idem_metrics_count_the_same_answers() {
    let (store, recorder) = (MemoryStore::new(), DebuggingRecorder::new());
    let snapshotter = recorder.snapshotter();
    let before = in_process("telemetry::count_me");
    metrics::with_local_recorder(&recorder, || {
        for _ in 0..3 {
            count_me(&store, 1).unwrap();
        }
    });
    let after = in_process("telemetry::count_me");
    let snapshot: Snapshot = snapshotter.snapshot().into_vec();
    for (outcome, wanted) in [(idem::telemetry::Outcome::Fresh, 1), (idem::telemetry::Outcome::Replayed, 2)] {
        let labels = [("idem.namespace", "telemetry::count_me"), ("idem.outcome", outcome.as_str())];
        assert_eq!(metric(&snapshot, MetricKind::Counter, CALLS_METRIC, &labels), &DebugValue::Counter(wanted));
        assert_eq!(after[outcome as usize] - before[outcome as usize], wanted);
    }
}

#[idempotent(key = "count:<order>", store = store, namespace = "telemetry::count_me")]
fn count_me(store: &MemoryStore, order: u32) -> Result<u32, idem::Error> {
    Ok(order)
}

/// `idem::telemetry::metrics()`'s counts for the tool of `namespace`, by outcome.
fn in_process(namespace: &str) -> Vec<u64> {
    let tool = idem::telemetry::metrics().into_iter().find(|tool| tool.namespace == namespace);
    idem::telemetry::Outcome::ALL.iter().map(|&outcome| tool.as_ref().map_or(0, |tool| tool.count(outcome))).collect()
}
