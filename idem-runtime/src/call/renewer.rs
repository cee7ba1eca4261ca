//! The one thread per process that keeps running calls' reservations.
//!
//! Every call registers a [`Slot`] while its body runs. The thread sleeps until the
//! earliest renewal is due (a third of the lease after the last one), then renews a sync
//! tool's lease itself, through the store the call lent it, and wakes an async call to
//! renew on its own task. A body that finishes within a third of its lease is registered
//! and deregistered under a mutex and never renewed: no store round trip, no wake-up.
//! Renewal stops after the tool's `max_hold`, so a hung body frees its key one lease later.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::task::Waker;
use std::time::{Duration, Instant};

use crate::key::Key;
use crate::store::StoreError;

use super::Tool;

/// The soonest a progress message is written after it is set, and the least time between
/// two writes of one: a body that reports progress in a loop costs one write a second.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// The longest progress message kept, in bytes; a longer one is cut at a character
/// boundary.
pub(crate) const PROGRESS_MAX: usize = 256;

/// Renews a sync tool's lease through its store (see `Blocking::hold`).
pub(crate) trait RenewNow: Send {
    fn renew(&self, progress: Option<&str>) -> Result<(), StoreError>;
}

/// How a due renewal reaches the store.
enum Target {
    /// The renewer thread renews through the store; `None` once the call ended, which waits
    /// for a renewal in flight, so the store is never used after the call returned.
    Sync(Mutex<Option<Box<dyn RenewNow>>>),
    /// The renewer wakes the call, which renews on its own task (see `hold::renewing`).
    Async,
}

/// One running call, as the renewer sees it.
pub(crate) struct Slot {
    tool: &'static Tool,
    key: Key,
    /// A third of the lease: a renewal that fails has two more chances before the lease ends.
    every: Duration,
    /// When renewal stops for good: the reservation's start plus the tool's `max_hold`.
    stop_at: Instant,
    state: Mutex<SlotState>,
    target: Target,
}

struct SlotState {
    /// When the next renewal is due; `None` once renewal ended (the body finished, the key
    /// was lost, or `max_hold` passed).
    next_due: Option<Instant>,
    /// For an async call: a renewal is due and the call has not started it yet.
    due: bool,
    waker: Option<Waker>,
    progress: Option<Arc<str>>,
    /// Whether `progress` is not yet written.
    progress_unsent: bool,
    progress_written_at: Option<Instant>,
}

impl Slot {
    fn new(tool: &'static Tool, key: Key, target: Target) -> Slot {
        let now = Instant::now();
        let every = (tool.lease / 3).max(Duration::from_millis(1));
        Slot {
            tool,
            key,
            every,
            stop_at: now.checked_add(tool.max_hold).unwrap_or(now + Duration::from_secs(86_400 * 365)),
            state: Mutex::new(SlotState {
                next_due: Some(now + every),
                due: false,
                waker: None,
                progress: None,
                progress_unsent: false,
                progress_written_at: None,
            }),
            target,
        }
    }

    /// A slot whose renewals the renewer thread makes through `target`.
    pub(crate) fn for_sync(tool: &'static Tool, key: Key, target: Box<dyn RenewNow>) -> Arc<Slot> {
        Arc::new(Slot::new(tool, key, Target::Sync(Mutex::new(Some(target)))))
    }

    /// A slot whose call renews itself when woken.
    pub(crate) fn for_async(tool: &'static Tool, key: Key) -> Arc<Slot> {
        Arc::new(Slot::new(tool, key, Target::Async))
    }

    fn lock(&self) -> MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn next_due(&self) -> Option<Instant> {
        self.lock().next_due
    }

    /// Ends renewal: no renewal starts after this returns, and a sync renewal in flight has
    /// finished, so the store it borrowed is no longer used.
    pub(crate) fn end(&self) {
        self.lock().next_due = None;
        if let Target::Sync(target) = &self.target {
            target.lock().unwrap_or_else(PoisonError::into_inner).take();
        }
    }

    /// Keeps `message` with the reservation: written with a renewal about a second from now
    /// (or a second after the last one written), at most once a second.
    pub(crate) fn set_progress(&self, message: &str) {
        let mut cut = message.len().min(PROGRESS_MAX);
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        let now = Instant::now();
        let pulled = {
            let mut state = self.lock();
            state.progress = Some(Arc::from(&message[..cut]));
            state.progress_unsent = true;
            let write_at = state.progress_written_at.map_or(now, |at| at.max(now)) + PROGRESS_EVERY;
            match state.next_due {
                Some(due) if due > write_at => {
                    state.next_due = Some(write_at);
                    Some(write_at)
                }
                _ => None,
            }
        };
        if let Some(due) = pulled {
            renewer().schedule(due);
        }
    }

    /// For an async call, at each poll: whether a renewal is due, with the progress to
    /// write (`Some(None)`: due, nothing new to say). Keeps `waker` to be woken by.
    pub(crate) fn take_due(&self, waker: &Waker) -> Option<Option<Arc<str>>> {
        let mut state = self.lock();
        if !state.waker.as_ref().is_some_and(|kept| kept.will_wake(waker)) {
            state.waker = Some(waker.clone());
        }
        if !std::mem::take(&mut state.due) {
            return None;
        }
        Some(take_progress(&mut state))
    }

    /// What a renewal came to. `sent` is the progress it wrote, if any.
    pub(crate) fn renewed(&self, result: Result<(), StoreError>, sent: Option<Arc<str>>) {
        let now = Instant::now();
        let retry = {
            let mut state = self.lock();
            match result {
                Ok(()) => {
                    if sent.is_some() {
                        state.progress_written_at = Some(now);
                    }
                    None
                }
                Err(StoreError::Fenced) => {
                    state.next_due = None;
                    tracing::error!(
                        target: "idem", tool = self.tool.name, key = self.key.as_str(),
                        "the running call lost its key: its lease ended and another call took it over; \
                         its result will not be recorded"
                    );
                    None
                }
                Err(error) => {
                    if sent.is_some_and(|sent| state.progress.as_ref().is_some_and(|now| Arc::ptr_eq(now, &sent))) {
                        state.progress_unsent = true;
                    }
                    tracing::warn!(
                        target: "idem", tool = self.tool.name, key = self.key.as_str(), %error,
                        "could not renew the running call's lease; trying again"
                    );
                    let retry = now + self.every / 3;
                    match state.next_due {
                        Some(due) if due > retry => {
                            state.next_due = Some(retry);
                            Some(retry)
                        }
                        _ => None,
                    }
                }
            }
        };
        if let Some(due) = retry {
            renewer().schedule(due);
        }
    }

    /// Called by the renewer thread when the slot may be due.
    fn renew_if_due(&self, now: Instant) {
        let (waker, progress) = {
            let mut state = self.lock();
            match state.next_due {
                Some(due) if due <= now => {}
                _ => return,
            }
            if now >= self.stop_at {
                state.next_due = None;
                tracing::warn!(
                    target: "idem", tool = self.tool.name, key = self.key.as_str(),
                    max_hold = ?self.tool.max_hold,
                    "the body has run past the tool's max_hold: its lease is no longer renewed, so the key \
                     counts as abandoned when the lease ends"
                );
                return;
            }
            state.next_due = Some(now + self.every);
            match &self.target {
                Target::Async => {
                    state.due = true;
                    (state.waker.take(), None)
                }
                Target::Sync(_) => (None, Some(take_progress(&mut state))),
            }
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        let (Target::Sync(target), Some(progress)) = (&self.target, progress) else { return };
        let result = {
            let target = target.lock().unwrap_or_else(PoisonError::into_inner);
            let Some(target) = target.as_ref() else { return };
            target.renew(progress.as_deref())
        };
        self.renewed(result, progress);
    }
}

fn take_progress(state: &mut SlotState) -> Option<Arc<str>> {
    if std::mem::take(&mut state.progress_unsent) { state.progress.clone() } else { None }
}

/// A running call's place with the renewer; dropping it ends renewal.
pub(crate) struct Registration {
    slot: Arc<Slot>,
    index: usize,
}

impl Registration {
    pub(crate) fn new(slot: Arc<Slot>) -> Registration {
        let index = renewer().register(&slot);
        Registration { slot, index }
    }

    pub(crate) fn slot(&self) -> &Arc<Slot> {
        &self.slot
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.slot.end();
        renewer().deregister(self.index);
    }
}

struct Renewer {
    registry: Mutex<Registry>,
    wake: Condvar,
}

#[derive(Default)]
struct Registry {
    slots: Vec<Option<Arc<Slot>>>,
    free: Vec<usize>,
    /// When the thread wakes next; `None` while it waits for a registration. It only moves
    /// earlier between passes, so a stream of fast calls wakes the thread once a period.
    wake_at: Option<Instant>,
    started: bool,
}

fn renewer() -> &'static Renewer {
    static RENEWER: OnceLock<Renewer> = OnceLock::new();
    RENEWER.get_or_init(|| Renewer { registry: Mutex::default(), wake: Condvar::new() })
}

impl Renewer {
    fn lock(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn register(&'static self, slot: &Arc<Slot>) -> usize {
        let due = slot.next_due();
        let mut registry = self.lock();
        if !registry.started {
            registry.started = true;
            let spawned = std::thread::Builder::new().name("idem-renewer".to_owned()).spawn(|| self.run());
            if let Err(error) = spawned {
                tracing::error!(
                    target: "idem", %error,
                    "could not start the thread that renews running calls' leases: a body that runs past its \
                     lease can be taken over"
                );
            }
        }
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
            Self::wake_by(&mut registry, &self.wake, due);
        }
        index
    }

    fn deregister(&self, index: usize) {
        let mut registry = self.lock();
        registry.slots[index] = None;
        registry.free.push(index);
    }

    fn schedule(&self, due: Instant) {
        Self::wake_by(&mut self.lock(), &self.wake, due);
    }

    fn wake_by(registry: &mut Registry, wake: &Condvar, due: Instant) {
        if registry.wake_at.is_none_or(|at| due < at) {
            registry.wake_at = Some(due);
            wake.notify_one();
        }
    }

    fn run(&self) {
        let mut registry = self.lock();
        loop {
            let now = Instant::now();
            registry = match registry.wake_at {
                None => self.wake.wait(registry).unwrap_or_else(PoisonError::into_inner),
                Some(at) if now < at => {
                    self.wake.wait_timeout(registry, at - now).unwrap_or_else(PoisonError::into_inner).0
                }
                Some(_) => {
                    let slots: Vec<Arc<Slot>> = registry.slots.iter().flatten().cloned().collect();
                    drop(registry);
                    slots.iter().for_each(|slot| slot.renew_if_due(now));
                    drop(slots);
                    let mut registry = self.lock();
                    registry.wake_at = registry.slots.iter().flatten().filter_map(|slot| slot.next_due()).min();
                    registry
                }
            };
        }
    }
}
