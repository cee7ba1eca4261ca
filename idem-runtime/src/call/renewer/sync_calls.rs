//! Sync calls, on their own thread's list: registering one takes an uncontended mutex and
//! no allocation, and the renewer thread renews them through the store they lend it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::schedule::Schedule;
use super::{lock, renewer};
use crate::call::Tool;
use crate::key::Key;
use crate::store::StoreError;

/// Renews a sync tool's lease through the store it borrows (see `Blocking::hold`).
pub(crate) trait RenewNow: Sync {
    fn renew(&self, key: &Key, progress: Option<&str>) -> Result<(), StoreError>;
}

/// A `with_blocking` scope's note of the call it registered, which whichever of the scope
/// and the [`Registration`](super::Registration) ends first takes off the list. Only the
/// call's own thread touches it (an atomic so that async drivers, which hold the same
/// `Registration` type, stay `Send`; plain loads and stores, no read-modify-write).
pub(crate) struct Registered(AtomicU64);

impl Registered {
    const NONE: u64 = u64::MAX;

    pub(crate) fn new() -> Registered {
        Registered(AtomicU64::new(Self::NONE))
    }

    /// Only [`register_sync`] notes an id, before the call it names is listed.
    fn set(&self, id: u64) {
        self.0.store(id, Ordering::Relaxed);
    }

    /// Takes the noted call off the list, if one is noted and still there.
    pub(crate) fn end(&self) {
        let id = self.0.load(Ordering::Relaxed);
        if id != Self::NONE {
            self.0.store(Self::NONE, Ordering::Relaxed);
            deregister_sync(id);
        }
    }
}

/// A sync call on its thread's list.
struct SyncCall {
    id: u64,
    /// Points into the call's `with_blocking` frame; valid while the call is on the list,
    /// since the frame removes it (under the list's lock) before it ends: [`register_sync`]
    /// notes the id in the frame's [`Registered`] before listing the call, and its caller
    /// ends what is noted before the target goes (its safety contract).
    target: *const (dyn RenewNow + 'static),
    schedule: Schedule,
}

// SAFETY: `target` is only dereferenced by `renew_due`, under the list's lock, while the
// call is on the list, which is while its frame lives (see `SyncCall::target`); and
// `RenewNow: Sync`, so using it from the renewer thread is sound.
unsafe impl Send for SyncCall {}

/// One thread's running sync calls: a stack, since a tool's body may call another tool.
#[derive(Default)]
pub(super) struct ThreadCalls {
    calls: Mutex<Calls>,
}

#[derive(Default)]
struct Calls {
    running: Vec<SyncCall>,
    next_id: u64,
}

impl ThreadCalls {
    /// Renews this thread's due calls (holding the list's lock, so none can end meanwhile);
    /// returns when the next is due.
    pub(super) fn renew_due(&self, now: Instant) -> Option<Instant> {
        let mut calls = lock(&self.calls);
        for call in calls.running.iter_mut() {
            if let Some(progress) = call.schedule.take_due(now) {
                // SAFETY: the call is on the list and the list is locked, so its frame has not
                // ended and cannot end before this returns (see `SyncCall::target`).
                let result = unsafe { &*call.target }.renew(&call.schedule.key, progress.as_deref());
                call.schedule.renewed(result, progress);
            }
        }
        calls.running.iter().filter_map(|call| call.schedule.next_due).min()
    }
}

thread_local! {
    static THREAD_CALLS: Arc<ThreadCalls> = {
        let calls = Arc::<ThreadCalls>::default();
        renewer().add_thread(Arc::downgrade(&calls));
        calls
    };
}

/// Puts a sync call on this thread's list, noting its id in `registered` first.
///
/// That order is what keeps `target` from dangling (see [`SyncCall::target`]): whatever
/// panics at any step of this, the call is either not on the list yet, or on it with its id
/// already in `registered`, whose owner takes it off as it unwinds. There is no moment
/// where the call is listed and nobody knows to remove it.
///
/// # Safety
///
/// `target` must stay valid until `registered` is [ended](Registered::end): the renewer
/// thread calls it until then. So the caller must end `registered` before `target` goes,
/// whether it returns or unwinds (`with_blocking`'s guard does).
pub(crate) unsafe fn register_sync<'t>(
    tool: &'static Tool,
    key: Key,
    started: Instant,
    target: &'t (dyn RenewNow + 't),
    registered: &Registered,
) -> u64 {
    let target: *const (dyn RenewNow + 't) = target;
    // SAFETY: only the lifetime is erased, for the list's element type; the caller keeps
    // `target` valid for as long as the call can be on the list (this function's contract).
    let target: *const (dyn RenewNow + 'static) = unsafe { std::mem::transmute(target) };
    let schedule = Schedule::new(tool, key, started);
    let due = schedule.next_due;
    reached(Step::Scheduled);
    let id = THREAD_CALLS.with(|thread| {
        let mut calls = lock(&thread.calls);
        let id = calls.next_id;
        calls.next_id += 1;
        reached(Step::Numbered);
        registered.set(id);
        reached(Step::Noted);
        calls.running.push(SyncCall { id, target, schedule });
        reached(Step::Listed);
        id
    });
    reached(Step::Unlocked);
    if let Some(due) = due {
        renewer().wake_by(due);
    }
    reached(Step::Planned);
    id
}

/// Takes a sync call off this thread's list; a renewal of it in flight has finished when
/// this returns.
fn deregister_sync(id: u64) {
    // During the thread's teardown the list is gone, and so is every call on it.
    let _ = THREAD_CALLS.try_with(|thread| {
        let mut calls = lock(&thread.calls);
        if let Some(at) = calls.running.iter().rposition(|call| call.id == id) {
            calls.running.remove(at);
        }
    });
}

pub(super) fn progress_sync(id: u64, message: &str) {
    let pulled = THREAD_CALLS.with(|thread| {
        let mut calls = lock(&thread.calls);
        let call = calls.running.iter_mut().rev().find(|call| call.id == id);
        call.and_then(|call| call.schedule.set_progress(message))
    });
    if let Some(due) = pulled {
        renewer().wake_by(due);
    }
}

/// The steps of [`Blocking::hold`](crate::call::blocking::Blocking) and [`register_sync`], in
/// order: where a test makes registration panic to show that no step leaves the call listed
/// with nobody to take it off. Outside tests [`reached`] does nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// The store is lent (`Blocking`'s target set).
    Lent,
    /// The call's schedule is made.
    Scheduled,
    /// The list is locked and the call has its id.
    Numbered,
    /// The id is noted in `Registered`.
    Noted,
    /// The call is on the list (still locked).
    Listed,
    /// The list is unlocked.
    Unlocked,
    /// The renewer thread knows when the call is due.
    Planned,
    /// `register_sync` returned to `Blocking::hold`.
    Returned,
}

impl Step {
    #[cfg(test)]
    pub(crate) const ALL: [Step; 8] = [
        Step::Lent,
        Step::Scheduled,
        Step::Numbered,
        Step::Noted,
        Step::Listed,
        Step::Unlocked,
        Step::Planned,
        Step::Returned,
    ];
}

#[cfg(test)]
thread_local!(static PANIC_AT: std::cell::Cell<Option<Step>> = const { std::cell::Cell::new(None) });

/// Registration reached `step`: panics there if a test on this thread asked for it.
#[inline(always)]
pub(crate) fn reached(_step: Step) {
    #[cfg(test)]
    if PANIC_AT.get() == Some(_step) {
        PANIC_AT.set(None);
        panic!("injected panic at {_step:?}");
    }
}

/// Makes the next registration on this thread panic at `step`.
#[cfg(test)]
pub(crate) fn panic_at(step: Step) {
    PANIC_AT.set(Some(step));
}

/// How many sync calls are on this thread's list.
#[cfg(test)]
pub(crate) fn listed_here() -> usize {
    THREAD_CALLS.with(|thread| lock(&thread.calls).running.len())
}
