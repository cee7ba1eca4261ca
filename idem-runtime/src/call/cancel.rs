//! Cooperative cancellation: a request to stop a running call (MCP's `tasks/cancel`) that
//! its body sees through [`cancel_requested`](super::cancel_requested). The requests this process knows of: those
//! it received, and those a front end found in the store (see `Serving::renewed`). A
//! request never releases the key: the body decides what stopping means (return an error,
//! which releases the key under the default `on_error`, or finish what it started).

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The calls asked to stop, by namespace and key, oldest first. Few at a time: requests
/// past [`REMEMBERED`] forget the oldest.
static REQUESTED: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());
/// How many entries [`REQUESTED`] holds, read without the lock: a call that starts while
/// nobody asked anything to stop pays one atomic load.
static PENDING: AtomicUsize = AtomicUsize::new(0);
const REMEMBERED: usize = 1024;

/// Asks the call recorded under `namespace` and `key` to stop, if it runs in this process:
/// for a request a front end received, or one it found in the store (see
/// `Serving::renewed`, whose answer the driver passes on here).
pub(crate) fn request(namespace: &str, key: &str) {
    let mut requested = REQUESTED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if !requested.iter().any(|(n, k)| n == namespace && k == key) {
        if requested.len() == REMEMBERED {
            requested.remove(0);
        }
        requested.push((namespace.to_owned(), key.to_owned()));
    }
    PENDING.store(requested.len(), Ordering::Release);
}

/// Whether the call under `namespace` and `key` was asked to stop.
pub(crate) fn is_requested(namespace: &str, key: &str) -> bool {
    PENDING.load(Ordering::Acquire) > 0 && {
        let requested = REQUESTED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        requested.iter().any(|(n, k)| n == namespace && k == key)
    }
}

/// Forgets a request, as a new call for the key starts: it was meant for an earlier one.
pub(crate) fn forget(namespace: &str, key: &str) {
    if PENDING.load(Ordering::Acquire) == 0 {
        return;
    }
    let mut requested = REQUESTED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    requested.retain(|(n, k)| !(n == namespace && k == key));
    PENDING.store(requested.len(), Ordering::Release);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_per_record_and_forgotten_when_the_key_runs_again() {
        request("cancel-tests", "a");
        assert!(is_requested("cancel-tests", "a"));
        assert!(!is_requested("cancel-tests", "b"));
        assert!(!is_requested("cancel-tests-other", "a"));
        forget("cancel-tests", "a");
        assert!(!is_requested("cancel-tests", "a"));
    }
}
