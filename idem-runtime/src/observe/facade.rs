//! The `metrics` facade (feature `metrics`): the call counter and the duration histogram,
//! for whatever recorder the application installed (Prometheus, OpenTelemetry, ...).

use std::sync::Mutex;
use std::time::Duration;

use metrics::{Key, Label, Level, Metadata, Unit, describe_counter, describe_histogram};

use super::conventions::{
    CALLS_METRIC, DURATION_METRIC, ERROR_TYPE, EXECUTE_TOOL, NAMESPACE, OPERATION_NAME, OUTCOME, TOOL_NAME, TOOL_TYPE,
    TOOL_TYPE_FUNCTION,
};
use super::{Failure, Outcome, Subject};

/// Gives the installed recorder the unit and description of idem's metrics, for
/// exporters that show them (Prometheus' `# HELP`). Call it once after installing the
/// recorder; metrics are recorded without it too.
pub fn describe_metrics() {
    describe_counter!(CALLS_METRIC, Unit::Count, "Answers of idempotent tool calls, by tool, namespace and outcome.");
    describe_histogram!(
        DURATION_METRIC,
        Unit::Seconds,
        "Duration of idempotent tool calls, from the call to its answer, by tool and outcome."
    );
}

static METADATA: Metadata<'static> = Metadata::new("idem", Level::INFO, Some(module_path!()));

/// One tool's series, each built once: a recorder gets the same key for every call, and
/// a call neither allocates nor hashes labels. At most a few dozen per tool (outcomes
/// times error types), so they live for the process.
#[derive(Debug, Default)]
pub(crate) struct SeriesKeys {
    built: Mutex<Vec<Series>>,
}

impl SeriesKeys {
    pub(crate) const fn new() -> Self {
        SeriesKeys { built: Mutex::new(Vec::new()) }
    }
}

#[derive(Debug)]
struct Series {
    outcome: Outcome,
    failure: Option<Failure>,
    calls: &'static Key,
    duration: &'static Key,
}

/// The keys of `tool`'s series for an answer.
fn series(tool: Subject, outcome: Outcome, failure: Option<Failure>) -> (&'static Key, &'static Key) {
    let mut built = tool.instruments.series.built.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(series) = built.iter().find(|series| series.outcome == outcome && series.failure == failure) {
        return (series.calls, series.duration);
    }
    let label = |key: &'static str, value: &'static str| Label::from_static_parts(key, value);
    let calls = vec![label(TOOL_NAME, tool.name), label(NAMESPACE, tool.namespace), label(OUTCOME, outcome.as_str())];
    let mut duration = vec![
        label(OPERATION_NAME, EXECUTE_TOOL),
        label(TOOL_NAME, tool.name),
        label(TOOL_TYPE, TOOL_TYPE_FUNCTION),
        label(NAMESPACE, tool.namespace),
        label(OUTCOME, outcome.as_str()),
    ];
    duration.extend(failure.map(|failure| label(ERROR_TYPE, failure.as_str())));
    let calls: &'static Key = Box::leak(Box::new(Key::from_parts(CALLS_METRIC, calls)));
    let duration: &'static Key = Box::leak(Box::new(Key::from_parts(DURATION_METRIC, duration)));
    built.push(Series { outcome, failure, calls, duration });
    (calls, duration)
}

/// One answer: its count, and its duration.
pub(super) fn answered(tool: Subject, outcome: Outcome, failure: Option<Failure>, took: Duration) {
    let (calls, duration) = series(tool, outcome, failure);
    metrics::with_recorder(|recorder| {
        recorder.register_counter(calls, &METADATA).increment(1);
        recorder.register_histogram(duration, &METADATA).record(took.as_secs_f64());
    });
}

/// One count, without a duration (a timed-out call's late outcome).
pub(super) fn counted(tool: Subject, outcome: Outcome) {
    let (calls, _) = series(tool, outcome, None);
    metrics::with_recorder(|recorder| recorder.register_counter(calls, &METADATA).increment(1));
}
