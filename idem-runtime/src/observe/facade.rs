//! The `metrics` facade (feature `metrics`): the call counter and the duration histogram,
//! for whatever recorder the application installed (Prometheus, OpenTelemetry, ...).

use std::time::Duration;

use metrics::{Unit, counter, describe_counter, describe_histogram, histogram};

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

/// One answer: its count, and its duration.
pub(super) fn answered(tool: Subject, outcome: Outcome, failure: Option<Failure>, took: Duration) {
    counted(tool, outcome);
    let seconds = took.as_secs_f64();
    let labels = [
        (OPERATION_NAME, EXECUTE_TOOL),
        (TOOL_NAME, tool.name),
        (TOOL_TYPE, TOOL_TYPE_FUNCTION),
        (NAMESPACE, tool.namespace),
        (OUTCOME, outcome.as_str()),
    ];
    match failure {
        None => histogram!(DURATION_METRIC, &labels).record(seconds),
        Some(failure) => {
            let [a, b, c, d, e] = labels;
            histogram!(DURATION_METRIC, &[a, b, c, d, e, (ERROR_TYPE, failure.as_str())]).record(seconds);
        }
    }
}

/// One count, without a duration (a timed-out call's late outcome).
pub(super) fn counted(tool: Subject, outcome: Outcome) {
    let labels = [(TOOL_NAME, tool.name), (NAMESPACE, tool.namespace), (OUTCOME, outcome.as_str())];
    counter!(CALLS_METRIC, &labels).increment(1);
}
