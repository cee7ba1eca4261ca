//! What idem tells you about calls, beyond their answers: a `tracing` span per call,
//! metrics, lifecycle events for code, and how each call was answered.
//!
//! A rising rate of replayed or in-progress answers is the early sign of timeouts set too
//! short or a model that retries too eagerly. idem reports every call of every
//! `#[idempotent]` tool (and every keyed request of the HTTP layer, `idem::http`, which is
//! a tool named after the layer) in these ways:
//!
//! | what | for | where |
//! | --- | --- | --- |
//! | a `tracing` span `execute_tool <tool>` and an event `idempotent call` | logs and traces (OpenTelemetry through `tracing-opentelemetry`) | [The span](#the-span) |
//! | the counter `idem.calls` and the histogram `gen_ai.execute_tool.duration` (feature `metrics`) | dashboards: Prometheus, OpenTelemetry, any `metrics` recorder | [Metrics](#metrics) |
//! | in-process counts, [`metrics()`] | a health endpoint, tests; without any feature | [Metrics](#metrics) |
//! | lifecycle events, [`add_observer`] | code that alerts on "a late finisher was fenced" | [Lifecycle events](#lifecycle-events) |
//! | [`observe`] / [`observe_async`] | code (and tests) that must know how one call was answered | [In code](#in-code-how-each-call-was-answered) |
//!
//! `cargo run -p idem-examples --features metrics --bin dashboard` wires
//! `tracing-subscriber` and a Prometheus exporter and prints what a dashboard shows after
//! the article's five retry scenarios:
//!
//! ```text
//! idem_calls{gen_ai_tool_name="send_invoice",idem_namespace="dashboard::send_invoice",idem_outcome="in_progress"} 2
//! idem_calls{gen_ai_tool_name="send_invoice",idem_namespace="dashboard::send_invoice",idem_outcome="replayed"} 1
//! idem_calls{gen_ai_tool_name="send_invoice",idem_namespace="dashboard::send_invoice",idem_outcome="conflict"} 1
//! idem_calls{gen_ai_tool_name="send_invoice",idem_namespace="dashboard::send_invoice",idem_outcome="fresh"} 2
//! gen_ai_execute_tool_duration_count{...,idem_outcome="conflict",error_type="CONFLICT"} 1
//! ...
//! replay rate  50% (3 of 6 calls were repeats)
//! invoices sent: 2
//! ```
//!
//! # The span
//!
//! Each call runs in a span that follows OpenTelemetry's GenAI conventions for tool
//! execution (still "Development" status upstream; idem pins the names it follows in
//! [`conventions`], and changes them only there). The span opens before the reservation
//! and closes once the result is recorded, so the body's own spans and events nest inside
//! it, and so does idem's per-call event (`idempotent call`, with `tool`, `key`, `outcome`
//! and `latency_us`).
//!
//! | field | value |
//! | --- | --- |
//! | name | `execute_tool <tool>`, e.g. `execute_tool send_invoice` (target `idem`, level INFO) |
//! | `otel.kind` | `internal` (the span kind, as `tracing-opentelemetry` reads it) |
//! | `gen_ai.operation.name` | `execute_tool` |
//! | `gen_ai.tool.name` | the function's name |
//! | `gen_ai.tool.type` | `function` |
//! | `gen_ai.tool.call.id` | declared empty: idem does not see the model's call id; the body may record it, or an outer span carry it (below) |
//! | `idem.namespace` | the tool's record namespace |
//! | `idem.key` | the key as derived (fields marked `:hash` are already hashes); with [`set_key_in_telemetry`]`(`[`KeyInTelemetry::Hashed`]`)`, `sha256:` and 32 hex digits of the whole key ([`key_hash`]`(key)` computes it) |
//! | `idem.outcome` | how the call was answered ([`Outcome::as_str`]): `fresh`, `replayed`, `in_progress`, `conflict`, `released`, `timed_out`, `unknown`, `reconciled`, `fenced`, `unrecorded`, `store_unavailable`, `invalid_key`, `unreadable` |
//! | `error.type` | on every error answer: idem's code (`IN_PROGRESS`, `CONFLICT`, `TIMEOUT`, `OUTCOME_UNKNOWN`, `STORE_UNAVAILABLE`, `INVALID_KEY`, `RECORD_UNREADABLE`, `NAMESPACE_CLASH`), or `tool_error` when the tool's own error was returned (its body failed, or a kept error was replayed), as MCP instrumentation marks `isError: true`. Absent when the caller got a result (`fresh`, `replayed`, `reconciled`, and `fenced` or `unrecorded`, whose callers get the body's result) |
//! | `otel.status_code` | `ERROR` whenever `error.type` is set |
//! | `idem.lease_token` | the fencing token of the reservation the call held; absent for answers from the store |
//! | `idem.reserve_us`, `idem.body_us`, `idem.settle_us` | microseconds until the store answered the reservation (including a take-over and the reconcile hook), of the body, and of recording its result |
//! | `idem.late_outcome` | for a call that answered `TIMEOUT`: what its body came to (the span lasts until it finishes) |
//!
//! **An outer span is reused.** When the current span is named `execute_tool <the same
//! tool>` and is not idem's own (an agent runtime or MCP layer that already traces tool
//! calls, or yours, to carry `gen_ai.tool.call.id`), idem opens no second span: it records
//! its fields into that one and runs inside it. `tracing` cannot add fields to a span after
//! it was created, so the outer span keeps only the fields it declared: declare those you
//! want as `tracing::field::Empty`:
//!
//! ```
//! # fn send_invoice(_: String, _: String, _: f64, _: String) {}
//! # let (call_id, customer, period, amount, memo) = ("call_1", String::new(), String::new(), 1.0, String::new());
//! let span = tracing::info_span!("execute_tool send_invoice", "gen_ai.tool.call.id" = %call_id,
//!     "idem.outcome" = tracing::field::Empty, "idem.key" = tracing::field::Empty,
//!     "error.type" = tracing::field::Empty);
//! span.in_scope(|| send_invoice(customer, period, amount, memo))
//! # ;
//! ```
//!
//! Any other current span, such as another tool's `execute_tool plan_week`, is the parent
//! of idem's span. rmcp 3.11 and rig 0.44 open no tool spans of their own.
//!
//! **Keys in telemetry.** By default `idem.key` and the per-call event carry the key as
//! derived; a field marked `<field:hash>` in the template is already a hash there. Where
//! keys must not reach logs at all, [`set_key_in_telemetry`]`(`[`KeyInTelemetry::Hashed`]`)`
//! writes `sha256:` and 32 hex digits of the whole key instead ([`key_hash`] computes the
//! same text, to find a key's lines). Keys never appear in metrics. Lifecycle events carry
//! the key itself, whatever this setting says: they go to your code, not to a log.
//!
//! **Cost.** Without a subscriber, or with one that takes nothing at INFO, a call opens no
//! span and times no phase: one atomic load. BENCHMARKS.md in the repository measures
//! it, with the cost of a subscriber that records every span.
//!
//! # Metrics
//!
//! With the feature `metrics`, recorded through the [`metrics`](https://docs.rs/metrics)
//! facade for whatever recorder the application installs (Prometheus, OpenTelemetry, ...);
//! `describe_metrics()` gives the recorder their units and descriptions:
//!
//! | metric | kind | labels | recorded |
//! | --- | --- | --- | --- |
//! | `idem.calls` | counter | `gen_ai.tool.name`, `idem.namespace`, `idem.outcome` | once per answer; a call that answered `TIMEOUT` counts once more when its body finishes, under what it came to |
//! | `gen_ai.execute_tool.duration` | histogram, seconds | `gen_ai.operation.name`, `gen_ai.tool.name`, `gen_ai.tool.type`, `idem.namespace`, `idem.outcome`, and `error.type` on error answers | once per call, from the call to its caller's answer (for `TIMEOUT`, the timeout) |
//!
//! Prometheus writes them `idem_calls` and `gen_ai_execute_tool_duration`. Keys never
//! appear in metrics. With or without the feature, [`metrics()`] returns the same counts
//! in process, per tool and outcome ([`ToolMetrics`]).
//!
//! # Lifecycle events
//!
//! For code that alerts on "a late finisher was fenced" without parsing logs.
//! [`add_observer`]`(|event: &LifecycleEvent| ...)` sees every event of every idempotent
//! call in the process, with its `tool`, `namespace`, `key` (the key itself, whatever
//! [`set_key_in_telemetry`] says), `phase` and what `happened`, until [`remove_observer`]`(id)`.
//! It is called on the thread where the event happened (the call's own, or idem's renewer
//! thread for [`Phase::Renew`]), so keep it quick; a panicking observer is caught and
//! logged and the call goes on.
//!
//! | `happened` | `phase` | when |
//! | --- | --- | --- |
//! | `Replayed` | `Reserve` (`Reconcile` after losing a take-over) | a repeat got the stored result |
//! | `Conflict` | `Reserve` | a repeat's compared fields differ: CONFLICT |
//! | `InProgress` | `Reserve` | a repeat came while the first call runs |
//! | `TimedOut` | `Body` | the caller's `timeout` passed; the body goes on |
//! | `Abandoned(Panic)`, `Abandoned(Cancellation)` | `Body` | the body panicked, or its future was dropped: the key stays reserved |
//! | `Abandoned(UnrecordableResult)` | `Settle` | the result cannot be stored (it does not read back from its JSON) |
//! | `FoundAbandoned` | `Reserve` | a call found an abandoned reservation whose lease ended |
//! | `TakenOver` | `Reconcile` | this call took it over; its `reconcile` hook runs next |
//! | `Reconciled(Done)`, `Reconciled(NotDone)`, `Reconciled(Unknown)` | `Reconcile` | the hook's answer |
//! | `Fenced` | `Settle` or `Renew` | a completion or renewal was refused: the lease had been taken over, the newer record stands |
//! | `Unrecorded` | `Settle` | the body succeeded but the store failed to record it |
//! | `HoldEnded` | `Renew` | the body ran past `max_hold`: its lease is no longer renewed |
//!
//! # In code: how each call was answered
//!
//! [`observe`]`(|| tool(...))` runs a closure and returns, with its value, how each
//! idempotent call made inside it on this thread was answered, in order: an
//! [`Observation`] with the tool, the key and the [`Outcome`] (fresh, replayed, in
//! progress, conflict, ...), and so whether the body ran ([`Outcome::ran_body`]).
//! [`observe_async`] does the same for a future (the calls made while it is polled, not
//! those of tasks it spawns). This is how code tells a replay from a first call whatever
//! the tool's return type.

pub use crate::observe::conventions;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub use crate::observe::describe_metrics;
pub use crate::observe::{
    AbandonedBy, Happened, KeyInTelemetry, LifecycleEvent, Observation, ObserveFuture, Observer, ObserverId, Outcome,
    Phase, ToolMetrics, Verdict, add_observer, key_hash, metrics, observe, observe_async, remove_observer,
    set_key_in_telemetry,
};
