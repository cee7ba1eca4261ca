//! The connection pool, the IO thread that drives its connections, and the sync entry's
//! executor.
//!
//! Every connection's socket is driven by one small tokio runtime on a thread the store
//! owns ("idem-postgres"). A `tokio_postgres::Client` only talks to its connection through
//! channels, so callers can await it from any runtime, or block on it from a sync tool,
//! even on a thread of another tokio runtime: the IO never waits for the caller's
//! executor, which is what keeps the sync entry from deadlocking.

use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError, oneshot};
use tokio_postgres::{Client, Config, Statement};

use super::backend;
use super::schema::{Queries, Sql};
use crate::store::{BoxFuture, StoreError};

/// Opens one connection and starts driving it on the IO runtime (where it is called).
pub(super) type Connect =
    Arc<dyn Fn(Config) -> BoxFuture<'static, Result<Client, tokio_postgres::Error>> + Send + Sync>;

/// A connection and the statements prepared on it so far.
pub(super) struct Conn {
    pub(super) client: Client,
    prepared: [Option<Statement>; Sql::ALL.len()],
}

impl Conn {
    /// The prepared statement for `sql`, preparing it on first use.
    pub(super) async fn statement(&mut self, queries: &Queries, sql: Sql) -> Result<Statement, StoreError> {
        if let Some(statement) = &self.prepared[sql as usize] {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(queries.text(sql)).await.map_err(backend)?;
        self.prepared[sql as usize] = Some(statement.clone());
        Ok(statement)
    }
}

/// The thread and runtime that drive the connections; stops when dropped.
struct Io {
    handle: Handle,
    _stop: oneshot::Sender<()>,
}

impl Io {
    fn start() -> std::io::Result<Io> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        std::thread::Builder::new().name("idem-postgres".into()).spawn(move || {
            // Ends when the pool is dropped; the runtime, its connections with it, is
            // dropped here, outside any caller's async context.
            runtime.block_on(async move {
                let _ = stopped.await;
            });
        })?;
        Ok(Io { handle, _stop: stop })
    }
}

/// At most `max` connections, opened on demand and kept while they work.
pub(super) struct Pool {
    config: Config,
    connect: Connect,
    io: Io,
    idle: Mutex<Vec<Conn>>,
    permits: Arc<Semaphore>,
    max: usize,
    checkout_timeout: Duration,
}

impl Pool {
    pub(super) fn new(
        config: Config,
        connect: Connect,
        max: usize,
        checkout_timeout: Duration,
    ) -> std::io::Result<Pool> {
        Ok(Pool {
            config,
            connect,
            io: Io::start()?,
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(max)),
            max,
            checkout_timeout,
        })
    }

    pub(super) fn config(&self) -> &Config {
        &self.config
    }

    pub(super) fn max(&self) -> usize {
        self.max
    }

    /// Borrows a connection: an idle one, or a new one while fewer than `max` are out.
    /// Waits at most the checkout timeout for one to come back.
    pub(super) async fn get(&self) -> Result<Pooled<'_>, StoreError> {
        let permit = match self.permits.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(TryAcquireError::NoPermits) => self.wait_for_permit().await?,
            Err(TryAcquireError::Closed) => return Err(StoreError::Backend("the connection pool is closed".into())),
        };
        loop {
            let idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
            match idle {
                Some(conn) if conn.client.is_closed() => continue,
                Some(conn) => return Ok(Pooled { conn: Some(conn), pool: self, permit: Some(permit) }),
                None => break,
            }
        }
        let connecting = self.io.handle.spawn((self.connect)(self.config.clone()));
        let client = match connecting.await {
            Ok(connected) => connected.map_err(backend)?,
            Err(join) => return Err(StoreError::Backend(Box::new(join))),
        };
        let conn = Conn { client, prepared: Default::default() };
        Ok(Pooled { conn: Some(conn), pool: self, permit: Some(permit) })
    }

    /// Returns a connection that is out of any transaction to the idle list.
    pub(super) fn put_back(&self, conn: Conn) {
        if !conn.client.is_closed() {
            self.idle.lock().unwrap_or_else(PoisonError::into_inner).push(conn);
        }
    }

    /// Runs `task` on the IO thread.
    pub(super) fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        self.io.handle.spawn(task);
    }

    /// The slow path of [`get`](Self::get): waits on the IO runtime, which has a timer
    /// whatever runtime (or none) the caller has.
    async fn wait_for_permit(&self) -> Result<OwnedSemaphorePermit, StoreError> {
        let (permits, timeout) = (self.permits.clone(), self.checkout_timeout);
        let waiting = self.io.handle.spawn(async move { tokio::time::timeout(timeout, permits.acquire_owned()).await });
        match waiting.await {
            Ok(Ok(Ok(permit))) => Ok(permit),
            Ok(Ok(Err(closed))) => Err(StoreError::Backend(Box::new(closed))),
            Ok(Err(_elapsed)) => Err(StoreError::Backend(
                format!(
                    "no PostgreSQL connection came free within {timeout:?} (all {} in use); raise \
                     PgStoreBuilder::max_connections or checkout_timeout",
                    self.max
                )
                .into(),
            )),
            Err(join) => Err(StoreError::Backend(Box::new(join))),
        }
    }
}

/// A borrowed connection; goes back to the pool when dropped, unless it was closed.
pub(super) struct Pooled<'p> {
    conn: Option<Conn>,
    pool: &'p Pool,
    permit: Option<OwnedSemaphorePermit>,
}

impl Pooled<'_> {
    /// The connection and its pool slot, for a task that returns the connection itself.
    pub(super) fn into_parts(mut self) -> (Conn, OwnedSemaphorePermit) {
        let conn = self.conn.take().expect("present until dropped");
        let permit = self.permit.take().expect("present until dropped");
        (conn, permit)
    }
}

impl std::ops::Deref for Pooled<'_> {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        self.conn.as_ref().expect("present until dropped")
    }
}

impl std::ops::DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut Conn {
        self.conn.as_mut().expect("present until dropped")
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        // A statement still in flight (the caller's future was dropped) finishes before
        // the next one on this connection: the connection answers requests in order. An
        // unfinished transaction was rolled back when its `Transaction` was dropped.
        if let Some(conn) = self.conn.take() {
            self.pool.put_back(conn);
        }
    }
}

/// Runs `future` to its end on the calling thread: the sync entry. Safe on any thread, a
/// tokio worker included, because the IO it waits for runs on the store's own thread.
pub(super) fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.unpark();
        }
    }
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
