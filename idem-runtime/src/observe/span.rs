//! The `execute_tool <tool>` span of one call: opened (or an outer one reused) before the
//! reservation, entered around everything the call does, and given its outcome last.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};

use tracing::callsite::{Callsite, DefaultCallsite, Identifier};
use tracing::field::{DisplayValue, Field, FieldSet, Value};
use tracing::metadata::Kind;
use tracing::subscriber::Interest;
use tracing::{Level, Metadata, Span};

use super::conventions::{
    ERROR_TYPE, EXECUTE_TOOL, KEY, LATE_OUTCOME, NAMESPACE, OTEL_STATUS_CODE, OUTCOME, SPAN_FIELDS, TOOL_TYPE_FUNCTION,
};
use super::{Failure, Outcome, Subject, TelemetryKey};
use crate::key::Key;

/// Builds a tool's [`Instruments`](super::Instruments) in its `static`: the span's
/// callsite has to be a static of its own, named `execute_tool <tool>` at compile time.
/// Only the two statics are expanded in the tool's crate (metadata and callsite, the
/// fields being [`SPAN_FIELDS`](super::conventions::SPAN_FIELDS)); the runtime builds the
/// span, so that each tool costs its crate little to compile.
#[doc(hidden)]
#[macro_export]
macro_rules! __idem_instruments {
    ($name:literal) => {{
        use $crate::__private::tracing as __tracing;
        static META: __tracing::Metadata<'static> = __tracing::Metadata::new(
            ::core::concat!("execute_tool ", $name),
            "idem",
            __tracing::Level::INFO,
            ::core::option::Option::Some(::core::file!()),
            ::core::option::Option::Some(::core::line!()),
            ::core::option::Option::Some(::core::module_path!()),
            __tracing::field::FieldSet::new(
                &$crate::__private::SPAN_FIELDS,
                __tracing::callsite::Identifier(&CALLSITE),
            ),
            __tracing::metadata::Kind::SPAN,
        );
        static CALLSITE: __tracing::callsite::DefaultCallsite = __tracing::callsite::DefaultCallsite::new(&META);
        $crate::__private::Instruments::new($crate::__private::SpanCallsite::Static(&CALLSITE))
    }};
}

/// Where a tool's span comes from: a static callsite named at compile time (every
/// `#[idempotent]` tool), or one named at run time (an HTTP layer, named when it is built).
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub enum SpanCallsite {
    /// `__idem_instruments!`'s static callsite.
    Static(&'static DefaultCallsite),
    /// A callsite leaked once per named layer.
    Runtime(&'static NamedAtRuntime),
}

impl SpanCallsite {
    fn metadata(self) -> &'static Metadata<'static> {
        match self {
            SpanCallsite::Static(callsite) => callsite.metadata(),
            SpanCallsite::Runtime(callsite) => callsite.metadata(),
        }
    }

    fn interest(self) -> Interest {
        match self {
            SpanCallsite::Static(callsite) => callsite.interest(),
            SpanCallsite::Runtime(callsite) => callsite.interest(),
        }
    }
}

/// A span callsite whose name is known only at run time. `tracing`'s own callsites are
/// statics whose metadata names them, a cycle only statics can tie; this one is leaked
/// first and given its metadata after, so it stays safe code. Build one per name, once.
#[doc(hidden)]
#[derive(Debug)]
pub struct NamedAtRuntime {
    meta: OnceLock<Metadata<'static>>,
    /// 0: never, 1: sometimes, 2: always, as the subscribers last said.
    interest: AtomicU8,
}

impl NamedAtRuntime {
    /// A registered callsite for the span `execute_tool <tool>` (the name is leaked too).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn leak(tool: &str) -> &'static NamedAtRuntime {
        let callsite: &'static NamedAtRuntime =
            Box::leak(Box::new(NamedAtRuntime { meta: OnceLock::new(), interest: AtomicU8::new(1) }));
        let name: &'static str = Box::leak(format!("{EXECUTE_TOOL} {tool}").into_boxed_str());
        let fields = FieldSet::new(&SPAN_FIELDS, Identifier(callsite));
        let meta = Metadata::new(name, "idem", Level::INFO, None, None, None, fields, Kind::SPAN);
        callsite.meta.set(meta).expect("a new callsite has no metadata yet");
        tracing::callsite::register(callsite);
        callsite
    }

    fn interest(&self) -> Interest {
        match self.interest.load(Ordering::Relaxed) {
            0 => Interest::never(),
            2 => Interest::always(),
            _ => Interest::sometimes(),
        }
    }
}

impl Callsite for NamedAtRuntime {
    fn set_interest(&self, interest: Interest) {
        let level = if interest.is_never() {
            0
        } else if interest.is_always() {
            2
        } else {
            1
        };
        self.interest.store(level, Ordering::Relaxed);
    }

    fn metadata(&self) -> &Metadata<'_> {
        self.meta.get().expect("metadata is set before the callsite is registered")
    }
}

/// Opens the span of a tool's call: `None` unless a subscriber takes it.
pub(super) fn open_span(
    callsite: SpanCallsite,
    namespace: &'static str,
    key: Option<DisplayValue<TelemetryKey<'_>>>,
) -> Option<Span> {
    let meta = callsite.metadata();
    let interest = callsite.interest();
    if interest.is_never() || !(interest.is_always() || tracing::dispatcher::get_default(|d| d.enabled(meta))) {
        return None;
    }
    let fields = meta.fields();
    let mut declared = fields.iter();
    let mut next = || declared.next().expect("the callsite declares SPAN_FIELDS");
    let fields_in_order: [Field; SPAN_FIELDS.len()] = std::array::from_fn(|_| next());
    let [
        kind,
        operation,
        tool,
        tool_type,
        call_id,
        ns,
        key_field,
        outcome,
        error,
        status,
        token,
        reserve,
        body,
        settle,
        late,
    ] = &fields_in_order;
    let tool_name = meta.name().strip_prefix("execute_tool ").unwrap_or_default();
    let values: [(&Field, Option<&dyn Value>); SPAN_FIELDS.len()] = [
        (kind, Some(&"internal")),
        (operation, Some(&EXECUTE_TOOL)),
        (tool, Some(&tool_name)),
        (tool_type, Some(&TOOL_TYPE_FUNCTION)),
        (call_id, None),
        (ns, Some(&namespace)),
        (key_field, key.as_ref().map(|key| key as &dyn Value)),
        (outcome, None),
        (error, None),
        (status, None),
        (token, None),
        (reserve, None),
        (body, None),
        (settle, None),
        (late, None),
    ];
    Some(Span::new(meta, &fields.value_set(&values)))
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
        let span = open_span(subject.instruments.span, subject.namespace, key)?;
        Some(CallSpan { span, outer: false })
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
