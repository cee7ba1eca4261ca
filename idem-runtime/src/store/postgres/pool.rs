//! The connection pool, the IO thread that drives some of its connections, and the sync
//! entry's executor.
//!
//! A `tokio_postgres::Client` talks to its connection (the task that does the socket IO)
//! through channels. Each pooled connection is driven by one of:
//!
//! - the caller's tokio runtime, for async callers on a multi-threaded one: the connection only ever
//!   serves callers on that same runtime, so each statement costs no hop between threads
//!   (about 10-20 us per statement on a loopback server, measured by `cargo bench`), and a
//!   runtime that shuts down only takes its own connections with it;
//! - one small runtime on a thread the store owns ("idem-postgres"), for everyone else: the
//!   sync entry (sync tools, even on a thread of a tokio runtime, whose executor it blocks),
//!   and async callers outside tokio or on a current-thread runtime (which drives nothing
//!   while its one thread is busy elsewhere). Its IO never waits for the caller's executor, which is
//!   what keeps the sync entry from deadlocking.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::runtime;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};
use tokio_postgres::{Client, Config, Statement};

use super::schema::{Queries, Sql};
use super::{backend, deadline};
use crate::store::io_thread::{IoThread, caller_runtime};
use crate::store::{BoxFuture, StoreError};

/// Opens one connection and starts driving it on the IO runtime (where it is called).
pub(super) type Connect =
    Arc<dyn Fn(Config) -> BoxFuture<'static, Result<Client, tokio_postgres::Error>> + Send + Sync>;

/// A connection, who drives it, and the statements prepared on it so far.
pub(super) struct Conn {
    pub(super) client: Client,
    driver: Driver,
    prepared: [Option<Statement>; Sql::ALL.len()],
}

/// Who drives a connection's socket; a connection only serves callers with the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Driver {
    /// The store's IO thread.
    Io,
    /// A task of this runtime.
    Runtime(runtime::Id),
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

/// At most `max` connections, opened on demand and kept while they work.
pub(super) struct Pool {
    config: Config,
    connect: Connect,
    io: IoThread,
    idle: Mutex<Vec<Conn>>,
    permits: Arc<Semaphore>,
    max: usize,
    checkout_timeout: Duration,
    operation_timeout: Duration,
}

impl Pool {
    pub(super) fn new(
        config: Config,
        connect: Connect,
        max: usize,
        (checkout_timeout, operation_timeout): (Duration, Duration),
    ) -> std::io::Result<Pool> {
        Ok(Pool {
            config,
            connect,
            io: IoThread::start("idem-postgres")?,
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(max)),
            max,
            checkout_timeout,
            operation_timeout,
        })
    }

    /// Runs one store operation within the operation timeout (`Err` when it ran out); see
    /// [`deadline`].
    pub(super) async fn deadline<F: Future>(&self, operation: F) -> Result<F::Output, StoreError> {
        deadline::within(&self.io.handle, self.operation_timeout, operation).await
    }

    pub(super) fn config(&self) -> &Config {
        &self.config
    }

    pub(super) fn max(&self) -> usize {
        self.max
    }

    /// Borrows a connection for the current caller: an idle one with the caller's driver,
    /// or a new one while fewer than `max` are out. Waits at most the checkout timeout for
    /// one to come back.
    pub(super) async fn get(&self) -> Result<Pooled<'_>, StoreError> {
        let driver = caller_runtime().map_or(Driver::Io, Driver::Runtime);
        let permit = match self.permits.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(TryAcquireError::NoPermits) => self.wait_for_permit().await?,
            Err(TryAcquireError::Closed) => return Err(StoreError::Backend("the connection pool is closed".into())),
        };
        let evicted = {
            let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
            while let Some(at) = idle.iter().rposition(|conn| conn.driver == driver) {
                let conn = idle.swap_remove(at);
                if !conn.client.is_closed() {
                    return Ok(Pooled { conn: Some(conn), pool: self, permit: Some(permit) });
                }
            }
            // A new connection (the rare path): drop the closed ones of runtimes that ended,
            // then close an idle one of another driver if that keeps the open connections
            // within `max` (the out ones include this caller's).
            idle.retain(|conn| !conn.client.is_closed());
            let out = self.max - self.permits.available_permits();
            (idle.len() + out > self.max).then(|| idle.remove(0))
        };
        drop(evicted);
        let client = match driver {
            // Connects on, and spawns the connection task on, the caller's runtime.
            Driver::Runtime(_) => (self.connect)(self.config.clone()).await.map_err(backend)?,
            Driver::Io => match self.io.handle.spawn((self.connect)(self.config.clone())).await {
                Ok(connected) => connected.map_err(backend)?,
                Err(join) => return Err(StoreError::Backend(Box::new(join))),
            },
        };
        let conn = Conn { client, driver, prepared: Default::default() };
        Ok(Pooled { conn: Some(conn), pool: self, permit: Some(permit) })
    }

    /// How many idle connections each kind of driver has, and how many are out.
    #[cfg(test)]
    pub(super) fn census(&self) -> (usize, usize, usize) {
        let idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        let io = idle.iter().filter(|conn| conn.driver == Driver::Io && !conn.client.is_closed()).count();
        let runtime = idle.iter().filter(|conn| conn.driver != Driver::Io && !conn.client.is_closed()).count();
        (io, runtime, self.max - self.permits.available_permits())
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
        // One that an operation out of time held is closed (dropped): the server may never
        // answer what is in flight on it.
        if let Some(conn) = self.conn.take()
            && !deadline::discarding()
        {
            self.pool.put_back(conn);
        }
    }
}

pub(super) use crate::store::blocking::block_on;
