//! Observation, in one layer the call driver uses and that uses nothing of it: how each
//! call was answered ([`observe`]), a `tracing` span and event per call, in-process
//! counters ([`metrics`](crate::telemetry::metrics)), the `metrics` facade (feature `metrics`), and
//! lifecycle events for code ([`Observer`]).

pub mod conventions;
mod counters;
#[cfg(feature = "metrics")]
mod facade;
mod key_text;
mod observed_call;
mod observer;
mod span;

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::error::ErrorCode;
use crate::key::Key;
use crate::scope::{Scope, Scoped, in_scope};

pub(crate) use counters::Counters;
pub use counters::{ToolMetrics, metrics};
#[cfg(feature = "metrics")]
pub use facade::describe_metrics;
pub(crate) use key_text::TelemetryKey;
pub use key_text::{KeyInTelemetry, key_hash, set_key_in_telemetry};
pub(crate) use observed_call::ObservedCall;
pub(crate) use observer::notify;
pub use observer::{
    AbandonedBy, Happened, LifecycleEvent, Observer, ObserverId, Phase, Verdict, add_observer, remove_observer,
};
#[cfg(feature = "http")]
pub(crate) use span::NamedAtRuntime;
pub use span::SpanCallsite;

/// What observation keeps of one tool, in the tool's `static`: its counters and its
/// span's callsite. Built by the expansion with `__idem_instruments!`.
#[doc(hidden)]
#[derive(Debug)]
pub struct Instruments {
    pub(crate) counters: Counters,
    pub(crate) span: SpanCallsite,
    #[cfg(feature = "metrics")]
    pub(crate) series: facade::SeriesKeys,
}

impl Instruments {
    /// Zero counts and the tool's span callsite; usable in a `static`.
    pub const fn new(span: SpanCallsite) -> Self {
        Instruments {
            counters: Counters::new(),
            span,
            #[cfg(feature = "metrics")]
            series: facade::SeriesKeys::new(),
        }
    }
}

/// A tool as observation sees it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Subject {
    pub(crate) name: &'static str,
    pub(crate) namespace: &'static str,
    pub(crate) instruments: &'static Instruments,
}

/// Why an answer is an error: `error.type` in the span and the duration histogram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// idem answered with its own error.
    Idem(ErrorCode),
    /// The tool's own error: its body failed, or a kept error was replayed.
    Tool,
}

impl Failure {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Failure::Idem(code) => code.as_str(),
            Failure::Tool => conventions::TOOL_ERROR,
        }
    }
}

/// How one call of an idempotent tool was answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[repr(usize)]
pub enum Outcome {
    /// The key was new: the body ran and its result was stored.
    Fresh,
    /// The key was new, the body returned an error, and the reservation was released.
    Released,
    /// The body ran but its result could not be recorded, and the body's result was
    /// returned. The reservation is never released (the effect happened): when the store
    /// failed, it stays in place for reconciliation; when the result cannot be stored
    /// (it does not serialize, or does not read back from its JSON, see [`ToolOutput`](crate::frameworks::ToolOutput)),
    /// it is marked abandoned, so retries answer OUTCOME_UNKNOWN or run the reconcile hook.
    Unrecorded,
    /// The body ran but its lease had been taken over meanwhile: its completion was
    /// refused (fenced) and the newer holder's record stands. The body's result was
    /// returned.
    Fenced,
    /// An abandoned call was reconciled: the hook found the action done and its result
    /// was returned as a replay.
    Reconciled,
    /// The caller's `timeout` passed first: TIMEOUT. The body goes on and completes the key.
    TimedOut,
    /// A first call had completed: its stored result was returned.
    Replayed,
    /// A first call is still running: IN_PROGRESS.
    InProgress,
    /// A first call completed or is running with different compared fields: CONFLICT.
    Conflict,
    /// A first call was abandoned and its lease ended: OUTCOME_UNKNOWN.
    Unknown,
    /// The store failed; the body did not run.
    StoreUnavailable,
    /// A key field was empty; the body did not run.
    InvalidKey,
    /// The stored record could not be read back.
    Unreadable,
    /// The action needs a person's approval, which is asked for (or was already):
    /// APPROVAL_REQUIRED. Nothing ran.
    ApprovalRequired,
    /// A person declined the action: DECLINED. Nothing ran.
    Declined,
    /// The action's approval request expired without a decision: APPROVAL_EXPIRED.
    ApprovalExpired,
    /// The tool's budget had no room in its window: BUDGET_EXCEEDED. Nothing ran.
    BudgetExceeded,
}

impl Outcome {
    /// Every outcome, in a stable order.
    pub const ALL: [Outcome; 17] = [
        Outcome::Fresh,
        Outcome::Released,
        Outcome::Unrecorded,
        Outcome::Fenced,
        Outcome::Reconciled,
        Outcome::TimedOut,
        Outcome::Replayed,
        Outcome::InProgress,
        Outcome::Conflict,
        Outcome::Unknown,
        Outcome::StoreUnavailable,
        Outcome::InvalidKey,
        Outcome::Unreadable,
        Outcome::ApprovalRequired,
        Outcome::Declined,
        Outcome::ApprovalExpired,
        Outcome::BudgetExceeded,
    ];

    /// The outcome's name in events, e.g. `"replayed"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Outcome::Fresh => "fresh",
            Outcome::Released => "released",
            Outcome::Unrecorded => "unrecorded",
            Outcome::Fenced => "fenced",
            Outcome::Reconciled => "reconciled",
            Outcome::TimedOut => "timed_out",
            Outcome::Replayed => "replayed",
            Outcome::InProgress => "in_progress",
            Outcome::Conflict => "conflict",
            Outcome::Unknown => "unknown",
            Outcome::StoreUnavailable => "store_unavailable",
            Outcome::InvalidKey => "invalid_key",
            Outcome::Unreadable => "unreadable",
            Outcome::ApprovalRequired => "approval_required",
            Outcome::Declined => "declined",
            Outcome::ApprovalExpired => "approval_expired",
            Outcome::BudgetExceeded => "budget_exceeded",
        }
    }

    /// Whether the body ran on this call.
    pub const fn ran_body(self) -> bool {
        matches!(self, Outcome::Fresh | Outcome::Released | Outcome::Unrecorded | Outcome::Fenced)
    }
}

/// One observed call of an idempotent tool. Non-exhaustive: it may gain fields.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Observation {
    /// The tool's name.
    pub tool: &'static str,
    /// The derived key; `None` when it could not be built (INVALID_KEY).
    pub key: Option<Key>,
    /// How the call was answered.
    pub outcome: Outcome,
}

thread_local!(static OBSERVED: RefCell<Option<Vec<Observation>>> = const { RefCell::new(None) });

struct Collect(Vec<Observation>);

impl Scope for Collect {
    type Saved = Option<Vec<Observation>>;
    fn enter(&mut self) -> Self::Saved {
        OBSERVED.with(|slot| slot.replace(Some(std::mem::take(&mut self.0))))
    }
    fn exit(&mut self, saved: Self::Saved) {
        self.0 = OBSERVED.with(|slot| slot.replace(saved)).unwrap_or_default();
    }
}

/// Runs `f` and returns what it returned with every idempotent call it made on this
/// thread, in order: whether each ran its body or was answered from the store.
///
/// ```
/// # use idem_runtime as idem;
/// let (_, calls) = idem::telemetry::observe(|| ());
/// assert!(calls.is_empty());
/// ```
pub fn observe<R>(f: impl FnOnce() -> R) -> (R, Vec<Observation>) {
    let mut collect = Collect(Vec::new());
    let result = in_scope(&mut collect, f);
    (result, collect.0)
}

/// The async form of [`observe`]: awaits `future` and returns its output with the
/// idempotent calls made while it was polled (not those of tasks it spawned).
pub fn observe_async<F: Future>(future: F) -> ObserveFuture<F> {
    ObserveFuture { scoped: Scoped::new(future, Collect(Vec::new())) }
}

pin_project_lite::pin_project! {
    /// The future [`observe_async`] returns.
    pub struct ObserveFuture<F> {
        #[pin]
        scoped: Scoped<F, Collect>,
    }
}

impl<F: Future> Future for ObserveFuture<F> {
    type Output = (F::Output, Vec<Observation>);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut scoped = self.project().scoped;
        let output = std::task::ready!(scoped.as_mut().poll(cx));
        Poll::Ready((output, std::mem::take(&mut scoped.scope_mut().0)))
    }
}

/// The observation of one call, for an enclosing [`observe`] on this thread.
pub(crate) fn observed(tool: &'static str, key: Option<&Key>, outcome: Outcome) {
    OBSERVED.with(|slot| {
        if let Some(calls) = slot.borrow_mut().as_mut() {
            calls.push(Observation { tool, key: key.cloned(), outcome });
        }
    });
}
