//! Lifecycle events for code: what a user alerts on ("a late finisher was fenced")
//! without parsing logs.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use super::Subject;
use crate::key::Key;

/// Where in a call an event happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Phase {
    /// Reserving the key: a repeat's answer (replay, conflict, in progress) comes here.
    Reserve,
    /// Taking over an abandoned reservation and asking the reconcile hook about it.
    Reconcile,
    /// While the body runs.
    Body,
    /// Renewing the lease of a running body.
    Renew,
    /// Recording the body's result after it returned.
    Settle,
}

/// What a reconcile hook said of an abandoned call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Verdict {
    /// The action was done: its result was recorded and returned as a replay.
    Done,
    /// The action was not done: the body runs now.
    NotDone,
    /// The hook could not tell: the key stays abandoned, OUTCOME_UNKNOWN.
    Unknown,
}

/// Why a body that ran left no answer in the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AbandonedBy {
    /// The body panicked.
    Panic,
    /// The body's future was dropped before it finished.
    Cancellation,
    /// The body's result (or kept error) cannot be stored or does not read back: the key
    /// was marked abandoned.
    UnrecordableResult,
}

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Happened {
    /// A repeat got the stored result of a completed call.
    Replayed,
    /// A repeat's compared fields differ from the first call's: CONFLICT.
    Conflict,
    /// A repeat came while the first call was running: IN_PROGRESS.
    InProgress,
    /// The caller's `timeout` passed; the body goes on and records its outcome.
    TimedOut,
    /// A body that ran left no answer: its key stays reserved and counts as abandoned
    /// when its lease ends.
    Abandoned(AbandonedBy),
    /// A call found an abandoned reservation whose lease had ended. Without a reconcile
    /// hook it answers OUTCOME_UNKNOWN; with one, [`Happened::TakenOver`] follows.
    FoundAbandoned,
    /// This call took over an abandoned reservation: its reconcile hook runs next.
    TakenOver,
    /// The reconcile hook answered for an abandoned call.
    Reconciled(Verdict),
    /// The store refused a completion ([`Phase::Settle`]) or a renewal ([`Phase::Renew`])
    /// because the lease had been taken over: the newer holder's record stands.
    Fenced,
    /// The body succeeded but the store failed to record it: the reservation stays for
    /// reconciliation, and the caller got the body's result.
    Unrecorded,
    /// The body ran past the tool's `max_hold`: its lease is no longer renewed.
    HoldEnded,
    /// This call asked a person to approve the action: once per request, however many
    /// calls race.
    ApprovalRequested,
    /// This call runs the action under a person's approval.
    Approved,
    /// The action was declined: this call answered DECLINED.
    Declined,
    /// This call found the action's approval request expired without a decision, and
    /// answered APPROVAL_EXPIRED: once per request.
    ApprovalExpired,
    /// This call's reservation was charged to its tool's budget: it runs the action.
    BudgetSpent,
    /// This call's body failed and released its key: its charge went back to the budget.
    BudgetRefunded,
    /// The tool's budget had no room: this call answered BUDGET_EXCEEDED.
    BudgetExceeded,
}

/// One lifecycle event of an idempotent call.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct LifecycleEvent<'a> {
    /// The tool's function name.
    pub tool: &'static str,
    /// The tool's record namespace.
    pub namespace: &'static str,
    /// The call's key, as derived (the observer sees the key itself, whatever
    /// [`set_key_in_telemetry`](crate::telemetry::set_key_in_telemetry) says).
    pub key: &'a Key,
    /// Where in the call it happened.
    pub phase: Phase,
    /// What happened.
    pub happened: Happened,
}

/// Told of every [`LifecycleEvent`] of every idempotent call in the process, on the
/// thread where it happened (a call's own, or idem's renewer thread for
/// [`Phase::Renew`]): keep it quick, and hand slow work to a channel. A panic in an
/// observer is caught and logged; the call goes on. Closures taking a
/// `&LifecycleEvent` are observers.
pub trait Observer: Send + Sync + 'static {
    /// Called once per event.
    fn notice(&self, event: &LifecycleEvent<'_>);
}

impl<F: Fn(&LifecycleEvent<'_>) + Send + Sync + 'static> Observer for F {
    fn notice(&self, event: &LifecycleEvent<'_>) {
        self(event)
    }
}

/// Names an observer added with [`add_observer`], to remove it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ObserverId(u64);

type Observers = Arc<Vec<(ObserverId, Arc<dyn Observer>)>>;

static OBSERVERS: RwLock<Option<Observers>> = RwLock::new(None);
/// Whether any observer is registered: a call checks this one load and nothing else.
static ANY: AtomicBool = AtomicBool::new(false);
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Adds an observer for the rest of the process, or until [`remove_observer`].
///
/// ```
/// # use idem_runtime as idem;
/// use idem::telemetry::{Happened, LifecycleEvent, add_observer, remove_observer};
///
/// let id = add_observer(|event: &LifecycleEvent<'_>| {
///     if event.happened == Happened::Fenced {
///         eprintln!("{} finished late for {}; its result was not recorded", event.tool, event.key);
///     }
/// });
/// assert!(remove_observer(id));
/// ```
pub fn add_observer(observer: impl Observer) -> ObserverId {
    let id = ObserverId(NEXT_ID.fetch_add(1, Ordering::Relaxed));
    let mut slot = OBSERVERS.write().unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut observers = slot.as_deref().cloned().unwrap_or_default();
    observers.push((id, Arc::new(observer)));
    *slot = Some(Arc::new(observers));
    ANY.store(true, Ordering::Release);
    id
}

/// Removes an observer; `false` if it was not there.
pub fn remove_observer(id: ObserverId) -> bool {
    let mut slot = OBSERVERS.write().unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut observers = slot.as_deref().cloned().unwrap_or_default();
    let before = observers.len();
    observers.retain(|(kept, _)| *kept != id);
    let removed = observers.len() < before;
    ANY.store(!observers.is_empty(), Ordering::Release);
    *slot = Some(Arc::new(observers));
    removed
}

/// Tells every observer of one event.
#[inline]
pub(crate) fn notify(subject: Subject, key: &Key, phase: Phase, happened: Happened) {
    if ANY.load(Ordering::Acquire) {
        notify_all(subject, key, phase, happened);
    }
}

#[cold]
fn notify_all(subject: Subject, key: &Key, phase: Phase, happened: Happened) {
    // A snapshot, so that an observer may add or remove observers.
    let observers = OBSERVERS.read().unwrap_or_else(|poisoned| poisoned.into_inner()).clone();
    let event = LifecycleEvent { tool: subject.name, namespace: subject.namespace, key, phase, happened };
    for (_, observer) in observers.iter().flat_map(|observers| observers.iter()) {
        if catch_unwind(AssertUnwindSafe(|| observer.notice(&event))).is_err() {
            tracing::error!(
                target: "idem", tool = subject.name, key = %super::TelemetryKey::of(key), ?phase, ?happened,
                "an idem observer panicked; the call goes on"
            );
        }
    }
}
