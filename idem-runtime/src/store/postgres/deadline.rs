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

#[cfg(test)]
mod tests {
    use super::*;

    /// What a deadline adds to an operation that waits once (as every round trip does),
    /// from a multi-threaded runtime, as async tools call: `cargo test --release -p
    /// idem-runtime --features postgres deadline_cost -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement, not a check"]
    fn deadline_cost() {
        let io = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let timer = io.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let io_thread = std::thread::spawn(move || io.block_on(async move { stopped.await.ok() }));
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        const N: u32 = 200_000;
        for round in 0..3 {
            let plain = runtime.block_on(async {
                let started = std::time::Instant::now();
                for _ in 0..N {
                    let _: Result<(), StoreError> = async {
                        tokio::task::yield_now().await;
                        Ok(())
                    }
                    .await;
                }
                started.elapsed() / N
            });
            let bounded = runtime.block_on(async {
                let started = std::time::Instant::now();
                for _ in 0..N {
                    let _ = within(&timer, Duration::from_secs(10), async {
                        tokio::task::yield_now().await;
                        Ok::<(), StoreError>(())
                    })
                    .await;
                }
                started.elapsed() / N
            });
            println!("round {round}: plain {plain:?}, with a deadline {bounded:?}");
        }
        drop(stop);
        io_thread.join().unwrap();
    }
}
