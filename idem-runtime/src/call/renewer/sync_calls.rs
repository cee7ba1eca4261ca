//! Sync calls, on their own thread's list: registering one takes an uncontended mutex and
//! no allocation, and the renewer thread renews them through the store they lend it.

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

/// A sync call on its thread's list.
struct SyncCall {
    id: u64,
    /// Points into the call's `with_blocking` frame; valid while the call is on the list,
    /// since the frame removes it (under the list's lock) before it ends.
    target: *const (dyn RenewNow + 'static),
    schedule: Schedule,
}

// SAFETY: `target` is only dereferenced under the list's lock while the call is on it, and
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
                // SAFETY: see `SyncCall::target`.
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

/// Puts a sync call on this thread's list; `target` must stay valid until
/// [`deregister_sync`] removes it (see [`SyncCall::target`]).
pub(crate) fn register_sync(
    tool: &'static Tool,
    key: Key,
    started: Instant,
    target: *const (dyn RenewNow + 'static),
) -> u64 {
    let schedule = Schedule::new(tool, key, started);
    let due = schedule.next_due;
    let id = THREAD_CALLS.with(|thread| {
        let mut calls = lock(&thread.calls);
        let id = calls.next_id;
        calls.next_id += 1;
        calls.running.push(SyncCall { id, target, schedule });
        id
    });
    if let Some(due) = due {
        renewer().wake_by(due);
    }
    id
}

/// Takes a sync call off this thread's list; a renewal of it in flight has finished when
/// this returns.
pub(crate) fn deregister_sync(id: u64) {
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
