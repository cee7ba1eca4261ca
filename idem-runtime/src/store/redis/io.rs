//! The thread that talks to Redis, and every operation's deadline.
//!
//! One multiplexed connection, driven by a small runtime on a thread the store owns
//! ("idem-redis"), carries every operation of the store: async callers on any runtime (or
//! none) and sync callers, who block their thread until it answers, as with `PgStore`. The
//! deadline runs on that thread too, so it holds whatever polls the caller. A connection
//! that failed or ran out of time is dropped, and the next operation opens a fresh one.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, RedisError};
use tokio::runtime::Handle;
use tokio::sync::{Mutex, oneshot};

use crate::store::StoreError;

/// The IO thread; it stops when this is dropped.
pub(super) struct Io {
    handle: Handle,
    _stop: oneshot::Sender<()>,
}

impl Io {
    pub(super) fn start() -> Result<Io, StoreError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| StoreError::Backend(format!("Redis: starting the IO thread's runtime: {e}").into()))?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("idem-redis".to_owned())
            .spawn(move || runtime.block_on(async { stopped.await.ok() }))
            .map_err(|e| StoreError::Backend(format!("Redis: starting the IO thread: {e}").into()))?;
        Ok(Io { handle, _stop: stop })
    }
}

/// What every operation needs: how to connect, the connection, the deadline, the name.
pub(super) struct Link {
    pub(super) client: redis::Client,
    pub(super) connection: Mutex<Option<MultiplexedConnection>>,
    pub(super) timeout: Duration,
    pub(super) described: String,
    /// Written once per connection, unless the store only opens existing ones (the command).
    pub(super) marker: Option<String>,
}

/// A Redis failure in one operation, as `STORE_UNAVAILABLE` names it: the store, the
/// operation, the server's or the client's words.
#[derive(Debug)]
pub(super) struct Failure {
    store: String,
    operation: &'static str,
    reason: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}: {}", self.store, self.operation, self.reason)
    }
}

impl std::error::Error for Failure {}

impl Link {
    pub(super) fn failed(&self, operation: &'static str, reason: impl Into<String>) -> StoreError {
        StoreError::Backend(Box::new(Failure { store: self.described.clone(), operation, reason: reason.into() }))
    }

    async fn connection(&self) -> Result<MultiplexedConnection, RedisError> {
        let mut slot = self.connection.lock().await;
        if let Some(connection) = &*slot {
            return Ok(connection.clone());
        }
        let config = AsyncConnectionConfig::new().set_connection_timeout(Some(self.timeout)).set_response_timeout(None);
        let mut connection = self.client.get_multiplexed_async_connection_with_config(&config).await?;
        if let Some(marker) = &self.marker {
            redis::cmd("SET").arg(marker).arg(super::MARKER_VERSION).arg("NX").exec_async(&mut connection).await?;
        }
        *slot = Some(connection.clone());
        Ok(connection)
    }

    async fn forget(&self) {
        *self.connection.lock().await = None;
    }
}

/// Runs `call` on a connection on the IO thread, within the store's deadline.
pub(super) async fn run<T, F, Fut>(io: &Io, link: &Arc<Link>, operation: &'static str, call: F) -> Result<T, StoreError>
where
    T: Send + 'static,
    F: FnOnce(MultiplexedConnection) -> Fut + Send + 'static,
    Fut: Future<Output = Result<T, RedisError>> + Send,
{
    let link = Arc::clone(link);
    let task = io.handle.spawn(async move {
        let answered = tokio::time::timeout(link.timeout, async { call(link.connection().await?).await }).await;
        match answered {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => {
                if error.is_io_error()
                    || error.is_connection_dropped()
                    || error.is_unrecoverable_error()
                    || error.is_timeout()
                {
                    link.forget().await;
                }
                Err(link.failed(operation, error.to_string()))
            }
            Err(_) => {
                link.forget().await;
                Err(link.failed(
                    operation,
                    format!(
                        "no answer within {} ms (RedisStoreBuilder::operation_timeout): the server or the network \
                         between is not responding; the connection was closed",
                        link.timeout.as_millis()
                    ),
                ))
            }
        }
    });
    match task.await {
        Ok(answer) => answer,
        Err(e) => Err(StoreError::Backend(format!("Redis: {operation}: the store's IO thread failed: {e}").into())),
    }
}

/// Runs `future` on this thread to its end: the sync entry. The work it waits for runs on
/// the IO thread, so this never waits on the caller's own executor.
pub(super) fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    // Unconstrained: inside a tokio task, the task's cooperative budget must not make the
    // join handle yield forever to an executor that never refills it.
    let mut future = pin!(tokio::task::unconstrained(future));
    loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(output) => return output,
            Poll::Pending => std::thread::park(),
        }
    }
}
