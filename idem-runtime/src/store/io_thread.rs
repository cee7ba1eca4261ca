//! The IO thread of a network store (PostgreSQL, Redis): a one-thread tokio runtime that
//! drives connections for callers without a runtime of their own, and runs the timers of
//! every operation's deadline whoever polls the operation.

use tokio::runtime::{self, Handle, RuntimeFlavor};
use tokio::sync::oneshot;

/// The runtime that should drive the connection the current caller uses: the caller's,
/// when it is a multi-threaded one (its workers drive the connection whoever polls the
/// caller) and this thread is not waiting in [`block_on`](crate::store::block_on); else
/// `None`: the store's IO thread.
pub(crate) fn caller_runtime() -> Option<runtime::Id> {
    if crate::store::blocking::blocking() {
        return None;
    }
    match Handle::try_current() {
        Ok(caller) if caller.runtime_flavor() == RuntimeFlavor::MultiThread => Some(caller.id()),
        _ => None,
    }
}

/// A store's IO thread; it stops when this is dropped.
#[derive(Debug)]
pub(crate) struct IoThread {
    pub(crate) handle: Handle,
    _stop: oneshot::Sender<()>,
}

impl IoThread {
    /// Starts the thread `name`.
    pub(crate) fn start(name: &str) -> std::io::Result<IoThread> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        std::thread::Builder::new().name(name.to_owned()).spawn(move || {
            // Ends when the store is dropped; the runtime, its connections with it, is
            // dropped here, outside any caller's async context.
            runtime.block_on(async move {
                let _ = stopped.await;
            });
        })?;
        Ok(IoThread { handle, _stop: stop })
    }
}
