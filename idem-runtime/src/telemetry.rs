//! What idem tells you about calls, beyond their answers.
//!
//! - **In code, per call:** [`observe`] (or [`observe_async`]) runs a closure and returns
//!   how each idempotent call inside it was answered, as an [`Observation`] with its
//!   [`Outcome`]: whether the body ran or the store answered.
//! - **Counts:** [`metrics()`] returns every tool's outcome counts in this process
//!   ([`ToolMetrics`]); the `metrics` feature also records a call counter and the
//!   `gen_ai.execute_tool.duration` histogram through the `metrics` facade
//!   ([`describe_metrics`] describes them to the installed recorder).
//! - **Spans:** each call runs in a `tracing` span `execute_tool <tool>` with
//!   OpenTelemetry's GenAI attributes and idem's own; [`conventions`] names them, and
//!   [`set_key_in_telemetry`] decides whether keys appear as they are or hashed
//!   ([`key_hash`]).
//! - **Lifecycle events:** an [`Observer`] added with [`add_observer`] hears of replays,
//!   conflicts, fenced completions, abandoned and taken-over calls and reconciliations
//!   ([`LifecycleEvent`]).

pub use crate::observe::conventions;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub use crate::observe::describe_metrics;
pub use crate::observe::{
    AbandonedBy, Happened, KeyInTelemetry, LifecycleEvent, Observation, ObserveFuture, Observer, ObserverId, Outcome,
    Phase, ToolMetrics, Verdict, add_observer, key_hash, metrics, observe, observe_async, remove_observer,
    set_key_in_telemetry,
};
