//! The names idem's telemetry uses, in one place.
//!
//! The tool-call names follow OpenTelemetry's GenAI semantic conventions for tool
//! execution (`semantic-conventions-genai`, `docs/gen-ai/execute-tool.md` and
//! `gen-ai-spans.md`, as of its v0.1.0 release). Those conventions are still in
//! "Development" status: a name that changes there changes here, and only here. The
//! conventions have no idempotency attributes, so idem's own are under `idem.`.
//!
//! The span a call opens is named `execute_tool <tool>`, with target `idem` and level
//! INFO; the `#[idempotent]` expansion declares its fields (see [`SPAN_FIELDS`]).

/// The span name's first word, and the value of [`OPERATION_NAME`].
pub const EXECUTE_TOOL: &str = "execute_tool";

/// `gen_ai.operation.name`: always [`EXECUTE_TOOL`].
pub const OPERATION_NAME: &str = "gen_ai.operation.name";
/// `gen_ai.tool.name`: the tool's function name.
pub const TOOL_NAME: &str = "gen_ai.tool.name";
/// `gen_ai.tool.type`: always [`TOOL_TYPE_FUNCTION`] (a tool the agent's own code runs).
pub const TOOL_TYPE: &str = "gen_ai.tool.type";
/// `gen_ai.tool.call.id`: the model's id for the call. idem does not see it; it is
/// declared empty for the body, or an outer span, to record.
pub const TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
/// `error.type`: for an error answer, the idem error code (`IN_PROGRESS`, `CONFLICT`,
/// ...), or [`TOOL_ERROR`] when the tool's own error was returned (its body failed, or a
/// kept error was replayed).
pub const ERROR_TYPE: &str = "error.type";
/// `otel.kind`: the span kind, for `tracing-opentelemetry`: always `internal`.
pub const OTEL_KIND: &str = "otel.kind";
/// `otel.status_code`: `ERROR` on an error answer, for `tracing-opentelemetry`.
pub const OTEL_STATUS_CODE: &str = "otel.status_code";

/// `idem.namespace`: the tool's record namespace.
pub const NAMESPACE: &str = "idem.namespace";
/// `idem.key`: the derived key, or its hash (see
/// [`set_key_in_telemetry`](crate::telemetry::set_key_in_telemetry)).
pub const KEY: &str = "idem.key";
/// `idem.outcome`: how the call was answered ([`Outcome::as_str`](crate::telemetry::Outcome::as_str)).
pub const OUTCOME: &str = "idem.outcome";
/// `idem.late_outcome`: for a call whose caller got TIMEOUT, what its body came to.
pub const LATE_OUTCOME: &str = "idem.late_outcome";
/// `idem.lease_token`: the fencing token of the reservation this call held.
pub const LEASE_TOKEN: &str = "idem.lease_token";
/// `idem.reserve_us`: microseconds from the call's start until the store answered the
/// reservation (a repeat's whole answer).
pub const RESERVE_US: &str = "idem.reserve_us";
/// `idem.body_us`: microseconds the body ran.
pub const BODY_US: &str = "idem.body_us";
/// `idem.settle_us`: microseconds to record the body's result (or release the key).
pub const SETTLE_US: &str = "idem.settle_us";

/// Every field of the span a call opens, in declaration order.
pub const SPAN_FIELDS: [&str; 15] = [
    OTEL_KIND,
    OPERATION_NAME,
    TOOL_NAME,
    TOOL_TYPE,
    TOOL_CALL_ID,
    NAMESPACE,
    KEY,
    OUTCOME,
    ERROR_TYPE,
    OTEL_STATUS_CODE,
    LEASE_TOKEN,
    RESERVE_US,
    BODY_US,
    SETTLE_US,
    LATE_OUTCOME,
];

/// The value of [`TOOL_TYPE`].
pub const TOOL_TYPE_FUNCTION: &str = "function";
/// The value of [`ERROR_TYPE`] when the tool's own error was returned, as MCP
/// instrumentation sets it for a result with `isError: true`.
pub const TOOL_ERROR: &str = "tool_error";

/// The duration histogram (seconds): one value per call, from its start to its caller's
/// answer. Labels: [`OPERATION_NAME`], [`TOOL_NAME`], [`TOOL_TYPE`], [`OUTCOME`],
/// [`NAMESPACE`] and, on an error answer, [`ERROR_TYPE`].
pub const DURATION_METRIC: &str = "gen_ai.execute_tool.duration";
/// The call counter: one per answer, as [`metrics()`](crate::telemetry::metrics) counts them.
/// Labels: [`TOOL_NAME`], [`NAMESPACE`], [`OUTCOME`].
pub const CALLS_METRIC: &str = "idem.calls";
