//! One call as observation follows it: its span, the times of its phases, and, once
//! answered, its event, counters, metrics and the observation for [`observe`](super::observe).

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tracing::Instrument;

use super::conventions::{BODY_US, LEASE_TOKEN, RESERVE_US, SETTLE_US};
use super::span::CallSpan;
use super::{Failure, Outcome, Subject, TelemetryKey, counters};
use crate::key::Key;

/// A call, from its start to its answer. Without a subscriber that takes INFO spans, a
/// call opens no span and reads the clock once, as it always has.
pub(crate) struct ObservedCall {
    subject: Subject,
    started: Instant,
    /// The call's span, when a subscriber takes it (or an outer span is reused).
    span: Option<CallSpan>,
    /// When the current phase began, in nanoseconds since `started`. Atomic so that an
    /// async call's future stays `Send`.
    phase_began: AtomicU64,
}

impl ObservedCall {
    /// Opens the call's span (or reuses an outer one) before anything else happens.
    pub(crate) fn start(subject: Subject, key: Option<&Key>, started: Instant) -> ObservedCall {
        let span = CallSpan::open(subject, key);
        ObservedCall { subject, started, span, phase_began: AtomicU64::new(0) }
    }

    /// The tool.
    pub(crate) fn subject(&self) -> Subject {
        self.subject
    }

    /// The same call, for a future that [`instrument`](Self::instrument) already runs
    /// inside its span: it does not enter the span again.
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    pub(crate) fn already_entered(&self) -> ObservedCall {
        let span = self.span.as_ref().map(|span| CallSpan { span: span.span.clone(), outer: true });
        let phase_began = AtomicU64::new(self.phase_began.load(Ordering::Relaxed));
        ObservedCall { subject: self.subject, started: self.started, span, phase_began }
    }

    /// Runs `f` inside the call's span (an outer span is current already).
    pub(crate) fn in_scope<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.span {
            Some(span) if !span.outer => span.span.in_scope(f),
            _ => f(),
        }
    }

    /// `future`, polled inside the call's span.
    pub(crate) fn instrument<F: Future>(&self, future: F) -> tracing::instrument::Instrumented<F> {
        let span = match &self.span {
            Some(span) if !span.outer => span.span.clone(),
            _ => tracing::Span::none(),
        };
        future.instrument(span)
    }

    /// The store answered the reservation.
    pub(crate) fn reserved(&self) {
        self.phase_ended(RESERVE_US);
    }

    /// The call holds the key under `token`: its body runs next.
    pub(crate) fn holds(&self, token: u64) {
        if let Some(span) = &self.span {
            span.span.record(LEASE_TOKEN, token);
        }
    }

    /// The body returned.
    pub(crate) fn body_ended(&self) {
        self.phase_ended(BODY_US);
    }

    fn phase_ended(&self, field: &'static str) {
        if let Some(span) = &self.span {
            let began = self.phase_began.load(Ordering::Relaxed);
            let now = nanos(self.started.elapsed());
            span.span.record(field, now.saturating_sub(began) / 1000);
            self.phase_began.store(now, Ordering::Relaxed);
        }
    }

    /// The call's answer: the span's outcome, its event (inside the span), its counts and
    /// its duration.
    pub(crate) fn answered(&self, key: Option<&Key>, outcome: Outcome, failure: Option<Failure>) {
        if let Some(span) = &self.span {
            if outcome.ran_body() {
                self.phase_ended(SETTLE_US);
            }
            span.answered(outcome, failure);
        }
        self.in_scope(|| event(self.subject, key, outcome, self.started));
        counters::count(self.subject, outcome);
        #[cfg(feature = "metrics")]
        super::facade::answered(self.subject, outcome, failure, self.started.elapsed());
    }

    /// What a call whose caller already got TIMEOUT came to: counted as its own outcome
    /// (so [`metrics`](super::metrics) sees both), with an event, but no second duration.
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    pub(crate) fn settled_late(&self, key: Option<&Key>, outcome: Outcome) {
        if let Some(span) = &self.span {
            self.phase_ended(SETTLE_US);
            span.settled_late(outcome);
        }
        self.in_scope(|| event(self.subject, key, outcome, self.started));
        counters::count(self.subject, outcome);
        #[cfg(feature = "metrics")]
        super::facade::counted(self.subject, outcome);
    }
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// The `tracing` event of one call. The latency since `started` is read only when a
/// subscriber takes the event (`tracing` evaluates fields lazily).
fn event(subject: Subject, key: Option<&Key>, outcome: Outcome, started: Instant) {
    let tool = subject.name;
    let key = tracing::field::display(key.map_or(TelemetryKey::NONE, TelemetryKey::of));
    let latency_us = || micros(started.elapsed());
    match outcome {
        Outcome::StoreUnavailable | Outcome::Unreadable | Outcome::Unrecorded | Outcome::Fenced => {
            tracing::error!(target: "idem", tool, key, outcome = outcome.as_str(), latency_us = latency_us(), "idempotent call")
        }
        Outcome::Unknown | Outcome::TimedOut => {
            tracing::warn!(target: "idem", tool, key, outcome = outcome.as_str(), latency_us = latency_us(), "idempotent call")
        }
        _ => {
            tracing::info!(target: "idem", tool, key, outcome = outcome.as_str(), latency_us = latency_us(), "idempotent call")
        }
    }
}
