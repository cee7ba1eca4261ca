//! The one thread per process that keeps running calls' reservations.
//!
//! Every call is registered while its body runs. The thread sleeps until the earliest
//! renewal is due (a third of the lease after the last one), then renews a sync tool's
//! lease itself, through the store the call lent it, and wakes an async call to renew on
//! its own task. Renewal stops after the tool's `max_hold`, so a hung body frees its key
//! one lease later.
//!
//! A body that finishes within a third of its lease is never renewed, and registering it
//! is cheap: a sync call goes on its own thread's list (an uncontended mutex, no
//! allocation) and only looks at one atomic to learn whether the thread must be woken
//! earlier; an async call, which may move between threads, gets a slot of its own.

mod schedule;
mod sync_calls;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::task::Waker;
use std::time::Instant;

use crate::key::Key;
use crate::store::StoreError;

use super::Tool;
use schedule::Schedule;
pub(crate) use sync_calls::{Registered, RenewNow, Step, reached, register_sync};
use sync_calls::{ThreadCalls, progress_sync};
#[cfg(test)]
pub(crate) use sync_calls::{listed_here, panic_at};

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section leaves its data consistent before anything can panic.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An async call's schedule, with what it needs to be woken.
pub(crate) struct Slot {
    state: Mutex<SlotState>,
}

struct SlotState {
    schedule: Schedule,
    /// A renewal is due and the call has not started it yet.
    due: Option<Option<Arc<str>>>,
    waker: Option<Waker>,
}

impl Slot {
    /// For the renewer: marks a due renewal and wakes the call. Returns the next due.
    fn wake_if_due(&self, now: Instant) -> Option<Instant> {
        let waker = {
            let mut state = lock(&self.state);
            if let Some(progress) = state.schedule.take_due(now) {
                state.due = Some(progress);
            }
            let waker = if state.due.is_some() { state.waker.take() } else { None };
            (waker, state.schedule.next_due)
        };
        if let Some(waker) = waker.0 {
            waker.wake();
        }
        waker.1
    }

    /// For the call, at each poll: whether a renewal is due, with the progress to write.
    /// Keeps `waker` to be woken by.
    pub(crate) fn take_due(&self, waker: &Waker) -> Option<Option<Arc<str>>> {
        let mut state = lock(&self.state);
        if !state.waker.as_ref().is_some_and(|kept| kept.will_wake(waker)) {
            state.waker = Some(waker.clone());
        }
        state.due.take()
    }

    /// For the call: what its renewal came to.
    pub(crate) fn renewed(&self, result: Result<(), StoreError>, sent: Option<Arc<str>>) {
        let pulled = lock(&self.state).schedule.renewed(result, sent);
        if let Some(due) = pulled {
            renewer().wake_by(due);
        }
    }
}

/// A running call's place with the renewer; dropping it ends renewal.
pub(crate) enum Registration<'b> {
    /// On its thread's list; `registered` is its `with_blocking` scope's note of it, which
    /// whichever of the two ends first clears, so the call is taken off once.
    Sync {
        id: u64,
        registered: &'b Registered,
    },
    Async {
        slot: Arc<Slot>,
        index: usize,
    },
}

/// Which call [`progress`](super::progress) reports for.
#[derive(Clone)]
pub(crate) enum CallRef {
    Sync(u64),
    Async(Arc<Slot>),
}

impl Registration<'_> {
    /// Registers an async call, which renews its own lease when woken.
    pub(crate) fn new_async(tool: &'static Tool, key: Key, started: Instant) -> Registration<'static> {
        let schedule = Schedule::new(tool, key, started);
        let due = schedule.next_due;
        let slot = Arc::new(Slot { state: Mutex::new(SlotState { schedule, due: None, waker: None }) });
        let index = renewer().add_slot(&slot, due);
        Registration::Async { slot, index }
    }

    pub(crate) fn call_ref(&self) -> CallRef {
        match self {
            Registration::Sync { id, .. } => CallRef::Sync(*id),
            Registration::Async { slot, .. } => CallRef::Async(Arc::clone(slot)),
        }
    }

    /// An async call's slot, which its task polls beside the body; a sync call has none:
    /// the renewer thread renews it.
    pub(crate) fn slot(&self) -> Option<&Slot> {
        match self {
            Registration::Sync { .. } => None,
            Registration::Async { slot, .. } => Some(slot),
        }
    }
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        match self {
            Registration::Sync { registered, .. } => registered.end(),
            Registration::Async { slot, index } => {
                // The renewer may still hold the slot from its last look: with no renewal
                // due, it neither marks one nor wakes the call.
                lock(&slot.state).schedule.next_due = None;
                renewer().remove_slot(*index);
            }
        }
    }
}

impl CallRef {
    pub(crate) fn set_progress(&self, message: &str) {
        match self {
            CallRef::Sync(id) => progress_sync(*id, message),
            CallRef::Async(slot) => {
                let pulled = lock(&slot.state).schedule.set_progress(message);
                if let Some(due) = pulled {
                    renewer().wake_by(due);
                }
            }
        }
    }
}

/// `PLANNED` when the thread has no wake-up planned (it waits for a registration, or it is
/// looking at every call and will see a new one).
const UNPLANNED: u64 = u64::MAX;

struct Renewer {
    registry: Mutex<Registry>,
    wake: Condvar,
    /// When the thread wakes next, in nanoseconds since `epoch`: a registration due later
    /// need not take the lock.
    planned: AtomicU64,
    epoch: Instant,
}

#[derive(Default)]
struct Registry {
    threads: Vec<Weak<ThreadCalls>>,
    slots: Vec<Option<Arc<Slot>>>,
    free: Vec<usize>,
    /// When the thread wakes next; `None` while it waits for a registration.
    wake_at: Option<Instant>,
    started: bool,
}

fn renewer() -> &'static Renewer {
    static RENEWER: OnceLock<Renewer> = OnceLock::new();
    RENEWER.get_or_init(|| Renewer {
        registry: Mutex::default(),
        wake: Condvar::new(),
        planned: AtomicU64::new(UNPLANNED),
        epoch: Instant::now(),
    })
}

impl Renewer {
    fn nanos(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.epoch).as_nanos()).unwrap_or(UNPLANNED - 1)
    }

    fn start(&'static self, registry: &mut Registry) {
        if std::mem::replace(&mut registry.started, true) {
            return;
        }
        if let Err(error) = std::thread::Builder::new().name("idem-renewer".to_owned()).spawn(|| self.run()) {
            tracing::error!(
                target: "idem", %error,
                "could not start the thread that renews running calls' leases: a body that runs past its lease \
                 can be taken over"
            );
        }
    }

    fn add_thread(&'static self, thread: Weak<ThreadCalls>) {
        let mut registry = lock(&self.registry);
        self.start(&mut registry);
        registry.threads.retain(|thread| thread.strong_count() > 0);
        registry.threads.push(thread);
    }

    fn add_slot(&'static self, slot: &Arc<Slot>, due: Option<Instant>) -> usize {
        let mut registry = lock(&self.registry);
        self.start(&mut registry);
        let index = match registry.free.pop() {
            Some(index) => {
                registry.slots[index] = Some(Arc::clone(slot));
                index
            }
            None => {
                registry.slots.push(Some(Arc::clone(slot)));
                registry.slots.len() - 1
            }
        };
        if let Some(due) = due {
            self.plan_earlier(&mut registry, due);
        }
        index
    }

    fn remove_slot(&self, index: usize) {
        let mut registry = lock(&self.registry);
        registry.slots[index] = None;
        registry.free.push(index);
    }

    /// Makes sure the thread wakes by `due`. Costs one atomic load unless it must wake
    /// earlier than planned (or has nothing planned).
    fn wake_by(&self, due: Instant) {
        if self.nanos(due) < self.planned.load(Ordering::SeqCst) {
            self.plan_earlier(&mut lock(&self.registry), due);
        }
    }

    /// The thread looks at every call at or before `planned`, so a call due later need not
    /// tell it (a call registered during a look may be missed by it, and is seen by the next).
    fn plan_earlier(&self, registry: &mut Registry, due: Instant) {
        if registry.wake_at.is_none_or(|at| due < at) {
            registry.wake_at = Some(due);
            self.planned.store(self.nanos(due), Ordering::SeqCst);
            self.wake.notify_one();
        }
    }

    fn run(&self) {
        let mut registry = lock(&self.registry);
        loop {
            let now = Instant::now();
            match registry.wake_at {
                None => registry = self.wake.wait(registry).unwrap_or_else(PoisonError::into_inner),
                Some(at) if now < at => {
                    registry = self.wake.wait_timeout(registry, at - now).unwrap_or_else(PoisonError::into_inner).0;
                }
                Some(_) => {
                    // Registrations from now until the new plan take the lock (see `wake_by`),
                    // so none is missed by the look at every call below.
                    registry.wake_at = None;
                    self.planned.store(UNPLANNED, Ordering::SeqCst);
                    let slots: Vec<Arc<Slot>> = registry.slots.iter().flatten().cloned().collect();
                    let threads: Vec<Arc<ThreadCalls>> = registry.threads.iter().filter_map(Weak::upgrade).collect();
                    drop(registry);
                    let next = slots
                        .iter()
                        .filter_map(|slot| slot.wake_if_due(now))
                        .chain(threads.iter().filter_map(|thread| thread.renew_due(now)))
                        .min();
                    drop((slots, threads));
                    registry = lock(&self.registry);
                    let plan = next.into_iter().chain(registry.wake_at).min();
                    registry.wake_at = plan;
                    self.planned.store(plan.map_or(UNPLANNED, |at| self.nanos(at)), Ordering::SeqCst);
                }
            }
        }
    }
}

#[cfg(test)]
/// `cargo test --release -p idem-runtime --lib registration_cost -- --ignored --nocapture`
mod measure {
    #[test]
    #[ignore = "a measurement"]
    fn registration_cost() {
        struct Nothing;
        impl super::RenewNow for Nothing {
            fn renew(&self, _: &crate::key::Key, _: Option<&str>) -> Result<(), crate::store::StoreError> {
                Ok(())
            }
        }
        static TOOL: &crate::call::Tool = &crate::call::tests::SENSOR;
        let key = crate::key::build_key("t", TOOL.template, &[&"acme"]).unwrap();
        let n = 1_000_000;
        let started = std::time::Instant::now();
        for _ in 0..n {
            let registered = super::Registered::new();
            // SAFETY: `Nothing` is a unit value that outlives `registered`, ended just below.
            unsafe { super::register_sync(TOOL, key.clone(), std::time::Instant::now(), &Nothing, &registered) };
            registered.end();
        }
        eprintln!("register + deregister: {:?}", started.elapsed() / n);
        let now = std::time::Instant::now();
        let started = std::time::Instant::now();
        for _ in 0..n {
            let registered = super::Registered::new();
            // SAFETY: `Nothing` is a unit value that outlives `registered`, ended just below.
            unsafe { super::register_sync(TOOL, key.clone(), now, &Nothing, &registered) };
            registered.end();
        }
        eprintln!("without the clock: {:?}", started.elapsed() / n);
        let started = std::time::Instant::now();
        for _ in 0..n {
            std::hint::black_box(std::time::Instant::now());
        }
        eprintln!("Instant::now: {:?}", started.elapsed() / n);
        let started = std::time::Instant::now();
        for _ in 0..n {
            let m = std::sync::Mutex::new(1);
            drop(std::hint::black_box(m.lock()));
        }
        eprintln!("lock+unlock: {:?}", started.elapsed() / n);
    }
}
