//! What happened on each call: one `tracing` event per call, and an in-code way for the
//! caller to see whether its call ran the body or was answered from the store.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use crate::call::Tool;
use crate::key::Key;
use crate::scope::{Scope, Scoped, in_scope};

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
    /// (it does not serialize, or does not read back from its JSON, see [`ToolOutput`](crate::ToolOutput)),
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
}

impl Outcome {
    /// Every outcome, in a stable order.
    pub const ALL: [Outcome; 13] = [
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
        }
    }

    /// Whether the body ran on this call.
    pub const fn ran_body(self) -> bool {
        matches!(self, Outcome::Fresh | Outcome::Released | Outcome::Unrecorded | Outcome::Fenced)
    }
}

/// One observed call of an idempotent tool.
#[derive(Clone, Debug, PartialEq, Eq)]
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
/// let (_, calls) = idem::observe(|| ());
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

/// The future [`observe_async`] returns.
pub struct ObserveFuture<F> {
    scoped: Scoped<F, Collect>,
}

impl<F: Future> Future for ObserveFuture<F> {
    type Output = (F::Output, Vec<Observation>);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `scoped` is structurally pinned and never moved; only the observations
        // (not pinned) are taken out of it.
        let this = unsafe { self.get_unchecked_mut() };
        let output = std::task::ready!(unsafe { Pin::new_unchecked(&mut this.scoped) }.poll(cx));
        Poll::Ready((output, std::mem::take(&mut this.scoped.scope.0)))
    }
}

/// Records one call: a `tracing` event, its tool's counter, and the observation for an
/// enclosing [`observe`].
pub(crate) fn record(tool: &'static Tool, key: Option<&Key>, outcome: Outcome, started: Instant) {
    emit(tool, key, outcome, started);
    observed(tool, key, outcome);
}

/// The `tracing` event and the counter of one call. The latency since `started` is read
/// only when a subscriber takes the event (`tracing` evaluates fields lazily).
pub(crate) fn emit(tool: &'static Tool, key: Option<&Key>, outcome: Outcome, started: Instant) {
    crate::metrics::count(tool, outcome);
    let tool = tool.name;
    let key_text = key.map_or("", Key::as_str);
    let latency_us = || u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    match outcome {
        Outcome::StoreUnavailable | Outcome::Unreadable | Outcome::Unrecorded | Outcome::Fenced => {
            tracing::error!(target: "idem", tool, key = key_text, outcome = outcome.as_str(), latency_us = latency_us(), "idempotent call")
        }
        Outcome::Unknown | Outcome::TimedOut => {
            tracing::warn!(target: "idem", tool, key = key_text, outcome = outcome.as_str(), latency_us = latency_us(), "idempotent call")
        }
        _ => {
            tracing::info!(target: "idem", tool, key = key_text, outcome = outcome.as_str(), latency_us = latency_us(), "idempotent call")
        }
    }
}

/// The observation of one call, for an enclosing [`observe`] on this thread.
pub(crate) fn observed(tool: &'static Tool, key: Option<&Key>, outcome: Outcome) {
    OBSERVED.with(|slot| {
        if let Some(calls) = slot.borrow_mut().as_mut() {
            calls.push(Observation { tool: tool.name, key: key.cloned(), outcome });
        }
    });
}
