//! The `execute_tool <tool>` span of one call: opened (or an outer one reused) before the
//! reservation, entered around everything the call does, and given its outcome last.

use tracing::Span;

use super::conventions::{ERROR_TYPE, EXECUTE_TOOL, KEY, LATE_OUTCOME, NAMESPACE, OTEL_STATUS_CODE, OUTCOME};
use super::{Failure, Outcome, Subject, TelemetryKey};
use crate::key::Key;

/// Builds a tool's [`Instruments`](super::Instruments) in its `static`: the span's
/// callsite has to be a static of its own, named `execute_tool <tool>` at compile time,
/// so the expansion instantiates `tracing`'s own macro here (its cheap "nobody listens"
/// check included) rather than idem building spans by hand.
#[doc(hidden)]
#[macro_export]
macro_rules! __idem_instruments {
    ($name:literal) => {{
        fn open(
            namespace: &'static str,
            key: ::core::option::Option<$crate::__private::tracing::field::DisplayValue<$crate::__private::TelemetryKey<'_>>>,
        ) -> $crate::__private::tracing::Span {
            $crate::__private::tracing::span!(
                target: "idem",
                $crate::__private::tracing::Level::INFO,
                ::core::concat!("execute_tool ", $name),
                "otel.kind" = "internal",
                "gen_ai.operation.name" = "execute_tool",
                "gen_ai.tool.name" = $name,
                "gen_ai.tool.type" = "function",
                "gen_ai.tool.call.id" = $crate::__private::tracing::field::Empty,
                "idem.namespace" = namespace,
                "idem.key" = key,
                "idem.outcome" = $crate::__private::tracing::field::Empty,
                "error.type" = $crate::__private::tracing::field::Empty,
                "otel.status_code" = $crate::__private::tracing::field::Empty,
                "idem.lease_token" = $crate::__private::tracing::field::Empty,
                "idem.reserve_us" = $crate::__private::tracing::field::Empty,
                "idem.body_us" = $crate::__private::tracing::field::Empty,
                "idem.settle_us" = $crate::__private::tracing::field::Empty,
                "idem.late_outcome" = $crate::__private::tracing::field::Empty,
            )
        }
        $crate::__private::Instruments::new(open)
    }};
}

/// A call's span, and whether idem opened it.
pub(crate) struct CallSpan {
    pub(super) span: Span,
    /// Whether the span is an outer one (the caller's), which idem neither opened nor
    /// enters.
    pub(super) outer: bool,
}

impl CallSpan {
    /// Reuses the current span when it is another library's (or the user's) span for
    /// this tool, `execute_tool <tool>`; otherwise opens one. `None` when no subscriber
    /// takes INFO spans: then a call costs one atomic load here.
    #[inline]
    pub(super) fn open(subject: Subject, key: Option<&Key>) -> Option<CallSpan> {
        if tracing::level_enabled!(tracing::Level::INFO) { Self::open_when_listened(subject, key) } else { None }
    }

    fn open_when_listened(subject: Subject, key: Option<&Key>) -> Option<CallSpan> {
        let key = key.map(|key| tracing::field::display(TelemetryKey::of(key)));
        let current = Span::current();
        if let Some(meta) = current.metadata()
            && meta.target() != "idem"
            && names_tool(meta.name(), subject.name)
        {
            current.record(NAMESPACE, subject.namespace);
            current.record(KEY, key.clone());
            return Some(CallSpan { span: current, outer: true });
        }
        let span = (subject.instruments.open_span)(subject.namespace, key);
        (!span.is_disabled()).then_some(CallSpan { span, outer: false })
    }

    /// The answer's outcome, and its error type on an error answer.
    pub(super) fn answered(&self, outcome: Outcome, failure: Option<Failure>) {
        self.span.record(OUTCOME, outcome.as_str());
        if let Some(failure) = failure {
            self.span.record(ERROR_TYPE, failure.as_str());
            self.span.record(OTEL_STATUS_CODE, "ERROR");
        }
    }

    /// What a call whose caller already got its answer (TIMEOUT) came to.
    pub(super) fn settled_late(&self, outcome: Outcome) {
        self.span.record(LATE_OUTCOME, outcome.as_str());
    }
}

/// Whether a span name is the conventions' name for `tool`'s span.
fn names_tool(span_name: &str, tool: &str) -> bool {
    span_name.strip_prefix(EXECUTE_TOOL).and_then(|rest| rest.strip_prefix(' ')).is_some_and(|named| named == tool)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_span_names_its_tool_after_one_space() {
        assert!(super::names_tool("execute_tool send_invoice", "send_invoice"));
        assert!(!super::names_tool("execute_tool send_invoice", "send"));
        assert!(!super::names_tool("execute_toolsend_invoice", "send_invoice"));
        assert!(!super::names_tool("execute_tool", "send_invoice"));
    }
}
