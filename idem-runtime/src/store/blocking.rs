//! The sync entry to the store protocol: a sync caller (a sync tool, its status function,
//! the renewer thread, an operator's command) parks its thread until a store's future ends,
//! as reqwest's blocking client waits for its async one. A memory or SQLite store's futures
//! are ready at once, so this costs them one poll; the network stores (PostgreSQL, Redis)
//! run their IO on a thread they own while this one waits.

use std::cell::Cell;
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

thread_local! {
    /// Set while [`block_on`] polls on this thread: what it polls must not use connections
    /// driven by a runtime whose thread it may be blocking.
    static BLOCKING: Cell<bool> = const { Cell::new(false) };
    /// This thread's waker, made once: a sync tool's call over a local store allocates
    /// nothing to wait.
    static UNPARK: Waker = Waker::from(Arc::new(Unpark(std::thread::current())));
}

/// Wakes the thread that waits in [`block_on`].
struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Whether this thread is waiting in [`block_on`] now.
#[cfg_attr(not(any(feature = "postgres", feature = "redis")), allow(dead_code))]
pub(crate) fn blocking() -> bool {
    BLOCKING.get()
}

/// Runs `future` (a store operation, or anything that awaits them) to its end on the
/// calling thread, parking the thread while it waits: how sync code calls the async store
/// protocol, `block_on(store.read(id))`.
///
/// The bundled stores are safe to wait for this way on any thread, a tokio runtime's
/// included: while a thread waits here, the PostgreSQL and Redis stores run its operation's
/// IO on a thread of their own, never on a runtime this thread may be driving. A store of
/// your own whose futures need the caller's runtime to make progress (a connection that
/// runtime drives) must do the same to serve sync tools, which wait for their store here;
/// in async code, `.await` its futures instead.
///
/// ```
/// # extern crate idem_runtime as idem;
/// use std::time::Duration;
/// use idem::store::{MemoryStore, RecordId, Reservation, Reserve, Store, block_on};
///
/// let store = MemoryStore::new();
/// let id = RecordId { namespace: "billing.invoices", key: "invoice:acme:2026-10" };
/// let reserve = Reserve { id, request: "{}", lease: Duration::from_secs(30) };
/// assert!(matches!(block_on(store.reserve(reserve)), Ok(Reservation::Acquired { .. })));
/// assert!(block_on(store.read(id)).unwrap().is_some());
/// ```
pub fn block_on<F: Future>(future: F) -> F::Output {
    wait(pin!(future))
}

/// [`block_on`] for a future pinned where it was made (a sync tool's whole call), so that a
/// large state machine is not moved.
pub(crate) fn wait<F: Future + ?Sized>(future: Pin<&mut F>) -> F::Output {
    /// Restores the flag when the polling ends, by return or panic (a nested `block_on`
    /// leaves it set for its caller).
    struct Blocking(bool);
    impl Drop for Blocking {
        fn drop(&mut self) {
            BLOCKING.set(self.0);
        }
    }
    let _blocking = Blocking(BLOCKING.replace(true));
    // Unconstrained: inside a tokio task, the task's cooperative budget must not make
    // tokio's own futures yield forever to an executor that never refills it.
    #[cfg(feature = "tokio")]
    let future = pin!(tokio::task::unconstrained(future));
    let mut future = future;
    let mut run = |waker: &Waker| {
        let mut cx = Context::from_waker(waker);
        loop {
            match future.as_mut().poll(&mut cx) {
                Poll::Ready(output) => return output,
                Poll::Pending => std::thread::park(),
            }
        }
    };
    match UNPARK.try_with(|waker| run(waker)) {
        Ok(output) => output,
        // This thread's locals are being destroyed (a call made by another local's `Drop`).
        Err(_) => run(&Waker::from(Arc::new(Unpark(std::thread::current())))),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    /// A future that is woken from another thread a little later.
    struct Later(Option<mpsc::Receiver<()>>, bool);

    impl Future for Later {
        type Output = &'static str;
        fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<&'static str> {
            if self.1 {
                return Poll::Ready("woken");
            }
            let waker = cx.waker().clone();
            let ready = self.0.take().expect("polled once before it is woken");
            std::thread::spawn(move || {
                ready.recv().unwrap();
                waker.wake();
            });
            self.1 = true;
            Poll::Pending
        }
    }

    #[test]
    fn waits_for_a_wake_from_another_thread_and_restores_the_flag() {
        let (go, ready) = mpsc::channel();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            go.send(()).unwrap();
        });
        assert!(!blocking());
        assert_eq!(block_on(async { (blocking(), Later(Some(ready), false).await) }), (true, "woken"));
        assert!(!blocking(), "the flag is restored once the future ended");
        let nested = block_on(async { (block_on(async { 7 }), blocking()) });
        assert_eq!(nested, (7, true), "block_on nests, and leaves the flag set for its caller");
    }
}
