//! Every operation's deadline, measured on the client: a server that stops answering (a
//! frozen backend, a network partition that drops packets) must not hang a tool call. The
//! server's own timeouts (`lock_timeout`) and TCP's cannot help there: a stopped backend
//! runs no timer, and the kernel keeps retransmitting for a quarter of an hour.

use std::cell::Cell;
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use tokio::runtime::Handle;

use crate::store::StoreError;

thread_local! {
    /// Set while an operation that ran out of time is dropped: the connections it held are
    /// closed instead of pooled, since a statement on them may never be answered.
    static DISCARDING: Cell<bool> = const { Cell::new(false) };
}

/// Whether connections dropped now belong to an operation that ran out of time.
pub(super) fn discarding() -> bool {
    DISCARDING.get()
}

/// Runs `operation` to its end, or gives up on it after `timeout` (the `Err`). The timer
/// runs on `timer`'s runtime (the store's IO thread), which works whatever runtime, or
/// none, polls the operation.
pub(super) async fn within<F: Future>(
    timer: &Handle,
    timeout: Duration,
    operation: F,
) -> Result<F::Output, StoreError> {
    /// Restores the flag after the operation was dropped (locals drop in reverse order, so
    /// this one, declared first, drops last).
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            DISCARDING.set(self.0);
        }
    }
    let _restore = Restore(DISCARDING.get());
    let mut operation = pin!(operation);
    let mut sleep = pin!({
        let _timer = timer.enter();
        tokio::time::sleep(timeout)
    });
    poll_fn(|cx| {
        if let Poll::Ready(done) = operation.as_mut().poll(cx) {
            return Poll::Ready(Ok(done));
        }
        if sleep.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        DISCARDING.set(true);
        Poll::Ready(Err(StoreError::Backend(
            format!(
                "no answer within {} ms (PgStoreBuilder::operation_timeout): the server or the network between \
                 is not responding; the connection was closed",
                timeout.as_millis()
            )
            .into(),
        )))
    })
    .await
}
