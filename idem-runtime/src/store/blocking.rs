//! The sync entry of the stores that wait on a network (PostgreSQL, Redis): a sync call
//! parks its thread until the async operation ends, while the operation's IO runs on a
//! thread the store owns.

use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

thread_local! {
    /// Set while [`block_on`] polls on this thread: what it polls must not use connections
    /// driven by a runtime whose thread it may be blocking.
    static BLOCKING: Cell<bool> = const { Cell::new(false) };
}

/// Whether this thread is blocked in a store's sync entry now.
pub(crate) fn blocking() -> bool {
    BLOCKING.get()
}

/// Runs `future` to its end on the calling thread: the sync entry. Safe on any thread, a
/// tokio worker included, because the IO it waits for runs on the store's own thread.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.unpark();
        }
    }
    /// Restores the flag when the polling ends, by return or panic (a nested `block_on`
    /// leaves it set for its caller).
    struct Blocking(bool);
    impl Drop for Blocking {
        fn drop(&mut self) {
            BLOCKING.set(self.0);
        }
    }
    let _blocking = Blocking(BLOCKING.replace(true));
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    // Unconstrained: inside a tokio task, the task's cooperative budget must not make
    // tokio's own futures yield forever to an executor that never refills it.
    let mut future = pin!(tokio::task::unconstrained(future));
    loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(output) => return output,
            Poll::Pending => std::thread::park(),
        }
    }
}
