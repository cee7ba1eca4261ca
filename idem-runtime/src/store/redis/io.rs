//! Who drives the connections, and every operation's deadline.
//!
//! A store keeps one multiplexed connection per driver, as `PgStore` does with its pool:
//!
//! - an async caller on a multi-threaded tokio runtime uses a connection driven by that
//!   runtime, and runs the operation on its own task: no hop between threads (a replay
//!   costs a round trip and a script, as `cargo bench` measures);
//! - everyone else (sync callers, who block their thread until the answer, async callers
//!   on a current-thread runtime or outside tokio) hands the operation to a small runtime
//!   on a thread the store owns ("idem-redis"), whose IO never waits for the caller.
//!
//! The deadline's timer runs on the store's thread, so it holds whatever polls the caller.
//! A connection that failed or ran out of time is dropped, and the next operation opens a
//! fresh one.
//!
//! The store spawns each connection's driver task itself (redis-rs's client would spawn it
//! out of sight), to know when a connection is dead: its driver ends when the server closes
//! the connection (a restart, SIGTERM or SIGKILL) or it fails. A dead connection is
//! replaced before an operation is handed to it, so nothing was sent on it and nothing can
//! run twice: the first call after a restart connects again instead of answering "broken
//! pipe". An operation already handed to a connection that dies under it is not tried
//! again (the server may have run it): it answers `STORE_UNAVAILABLE`.
//!
//! On a Redis Cluster the store routes each operation by its shard (see `fields.rs`): to
//! the node that last served the shard, else to the next node it knows. It sends an
//! operation again only where the server said it did not run it: `MOVED` (the shard is
//! served elsewhere: the store learns the node and sends it there), or a connection that
//! could not be opened (nothing was sent: the next node is asked). Everything else (`ASK`
//! while a slot migrates, `TRYAGAIN`, `CLUSTERDOWN`, an IO error, no answer in time)
//! answers `STORE_UNAVAILABLE`, and the shard's route is forgotten after a connection
//! failed, so that the next operation finds the shard's primary after a failover.

use std::collections::HashMap;
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, ConnectionAddr, ErrorKind, RedisError, ServerErrorKind};
use tokio::runtime::{self, Handle};

use self::route::NO_ROUTE;
use crate::store::StoreError;
use crate::store::io_thread::{IoThread, caller_runtime};

mod route;

/// Who drives a connection: the store's thread (`None`) or a caller's runtime.
type Driver = Option<runtime::Id>;

/// A connection, and its driver task: the connection is dead once the task ended.
#[derive(Clone)]
pub(super) struct Connection {
    multiplexed: MultiplexedConnection,
    driver: Arc<DriverTask>,
}

/// The task that drives a connection's socket; stopped when no one holds the connection.
struct DriverTask(tokio::task::JoinHandle<()>);

impl Drop for DriverTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Connection {
    /// Whether the connection can still carry a command: its driver has not ended.
    fn alive(&self) -> bool {
        !self.driver.0.is_finished()
    }
}

/// What every operation needs: where the nodes are, the connections, the deadline, the name.
pub(super) struct Link {
    /// What every connection sends first: credentials, database, protocol.
    pub(super) settings: redis::RedisConnectionInfo,
    /// Every node the store knows, by index: the URL's, then those a `MOVED` named. It
    /// never shrinks, so an index stays valid.
    nodes: Mutex<Vec<ConnectionAddr>>,
    /// For each shard, the index of the node that serves it, or [`NO_ROUTE`]. On one
    /// server, one shard served by node 0.
    routes: Box<[AtomicUsize]>,
    /// The node an unrouted shard asks next (a cluster only).
    next_node: AtomicUsize,
    pub(super) cluster: bool,
    connections: Mutex<HashMap<(Driver, usize), Connection>>,
    pub(super) timeout: Duration,
    pub(super) described: String,
    /// Written after each new connection, unless the store only opens existing ones (the
    /// command): the key and its shard.
    marker: Option<(String, usize)>,
    mark_due: AtomicBool,
}

/// A Redis failure in one operation, as `STORE_UNAVAILABLE` names it: the store, the
/// operation, the server's or the client's words.
#[derive(Debug)]
pub(super) struct Failure {
    store: String,
    operation: &'static str,
    reason: String,
    /// `TimedOut` when the store waited its whole deadline (no answer, a `WAIT` that fell
    /// short): idem then does not write a completion again (see `Store::complete`).
    timed_out: Option<std::io::Error>,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}: {}", self.store, self.operation, self.reason)
    }
}

impl std::error::Error for Failure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.timed_out.as_ref().map(|e| e as _)
    }
}

impl Link {
    pub(super) fn failed(&self, operation: &'static str, reason: impl Into<String>) -> StoreError {
        let (store, reason) = (self.described.clone(), reason.into());
        StoreError::Backend(Box::new(Failure { store, operation, reason, timed_out: None }))
    }

    /// A failure after waiting the whole deadline for it (see [`Failure::timed_out`]).
    pub(super) fn ran_out_of_time(&self, operation: &'static str, reason: impl Into<String>) -> StoreError {
        let (store, reason) = (self.described.clone(), reason.into());
        let timed_out = Some(std::io::Error::from(std::io::ErrorKind::TimedOut));
        StoreError::Backend(Box::new(Failure { store, operation, reason, timed_out }))
    }

    /// A link to `nodes` (one server, or a cluster's nodes the URL names) for `shards`
    /// shards; `marker` is written after each new connection.
    pub(super) fn new(
        settings: redis::RedisConnectionInfo,
        nodes: Vec<ConnectionAddr>,
        (cluster, shards): (bool, usize),
        timeout: Duration,
        described: String,
        marker: Option<(String, usize)>,
    ) -> Link {
        let first = if cluster { NO_ROUTE } else { 0 };
        Link {
            settings,
            nodes: Mutex::new(nodes),
            routes: (0..shards).map(|_| AtomicUsize::new(first)).collect(),
            next_node: AtomicUsize::new(0),
            cluster,
            connections: Mutex::new(HashMap::new()),
            timeout,
            described,
            mark_due: AtomicBool::new(marker.is_some()),
            marker,
        }
    }

    /// The live connection of `driver` to `node`, opened (on the runtime that polls this,
    /// which is the driver's) when there is none or the one there is dead.
    async fn connection(&self, driver: Driver, node: usize) -> Result<Connection, RedisError> {
        if let Some(connection) = self.connections.lock().unwrap_or_else(PoisonError::into_inner).get(&(driver, node))
            && connection.alive()
        {
            return Ok(connection.clone());
        }
        let addr = self.nodes.lock().unwrap_or_else(PoisonError::into_inner)[node].clone();
        let connection = self.connect(&addr).await?;
        self.mark_due.store(self.marker.is_some(), Ordering::Relaxed);
        self.connections.lock().unwrap_or_else(PoisonError::into_inner).insert((driver, node), connection.clone());
        Ok(connection)
    }

    /// A new connection, its driver spawned on the current runtime. No Nagle: a multiplexed
    /// connection writes calls as they come, and a small write held for a delayed ACK costs
    /// a call 40 ms.
    async fn connect(&self, addr: &ConnectionAddr) -> Result<Connection, RedisError> {
        let config = AsyncConnectionConfig::new().set_response_timeout(None);
        let settings = &self.settings;
        match addr {
            ConnectionAddr::Tcp(host, port) => {
                let stream = tokio::net::TcpStream::connect((host.as_str(), *port)).await?;
                stream.set_nodelay(true)?;
                driven(settings, stream, config).await
            }
            #[cfg(unix)]
            ConnectionAddr::Unix(path) => driven(settings, tokio::net::UnixStream::connect(path).await?, config).await,
            other => {
                let why = format!("connecting to {other}: this build of the Redis store speaks plain TCP only");
                Err(RedisError::from((redis::ErrorKind::InvalidClientConfig, "unsupported address", why)))
            }
        }
    }

    fn forget(&self, driver: Driver, node: usize) {
        self.connections.lock().unwrap_or_else(PoisonError::into_inner).remove(&(driver, node));
    }

    /// Writes the store's marker when a new connection was opened since it was last
    /// written (a restarted server without persistence lost it).
    async fn mark_if_due(&self, driver: Driver, used: &AtomicUsize) -> Result<(), RedisError> {
        let Some((marker, shard)) = &self.marker else { return Ok(()) };
        // A load first: most operations find nothing due, and need not write the flag.
        if !self.mark_due.load(Ordering::Relaxed) || !self.mark_due.swap(false, Ordering::Relaxed) {
            return Ok(());
        }
        let set = |mut connection: MultiplexedConnection| {
            let mut set = redis::cmd("SET");
            set.arg(marker).arg(super::MARKER_VERSION).arg("NX");
            async move { set.exec_async(&mut connection).await }
        };
        let marked = self.routed(driver, *shard, used, &set).await;
        if marked.is_err() {
            self.mark_due.store(true, Ordering::Relaxed);
        }
        marked
    }
}

/// A connection over `stream`, its driver spawned on the current runtime.
async fn driven<C>(
    settings: &redis::RedisConnectionInfo,
    stream: C,
    config: AsyncConnectionConfig,
) -> Result<Connection, RedisError>
where
    C: Unpin + tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + 'static,
{
    let (multiplexed, driver) = MultiplexedConnection::new_with_config(settings, stream, config).await?;
    Ok(Connection { multiplexed, driver: Arc::new(DriverTask(tokio::spawn(driver))) })
}

/// Runs `call` on a connection of the caller's driver to the node serving `shard`, within
/// the store's deadline. `call` runs once, or again after an answer that says it did not
/// run (see the module docs).
pub(super) async fn run<T, F, Fut>(
    io: &IoThread,
    link: &Arc<Link>,
    operation: &'static str,
    shard: usize,
    call: F,
) -> Result<T, StoreError>
where
    T: Send + 'static,
    F: Fn(MultiplexedConnection) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, RedisError>> + Send,
{
    let driver = caller_runtime();
    if driver.is_some() {
        return deadline(&io.handle, link, driver, (operation, shard), call).await;
    }
    let (timer, link) = (io.handle.clone(), Arc::clone(link));
    let task = io.handle.spawn(async move { deadline(&timer, &link, None, (operation, shard), call).await });
    match task.await {
        Ok(answer) => answer,
        Err(e) => Err(StoreError::Backend(format!("Redis: {operation}: the store's IO thread failed: {e}").into())),
    }
}

/// Runs the operation, or gives up on it after the store's timeout, whose timer runs on
/// `timer`'s runtime (the store's thread) whoever polls this.
async fn deadline<T, F, Fut>(
    timer: &Handle,
    link: &Link,
    driver: Driver,
    (operation, shard): (&'static str, usize),
    call: F,
) -> Result<T, StoreError>
where
    F: Fn(MultiplexedConnection) -> Fut,
    Fut: Future<Output = Result<T, RedisError>>,
{
    let mut sleep = pin!({
        let _timer = timer.enter();
        tokio::time::sleep(link.timeout)
    });
    let used = AtomicUsize::new(NO_ROUTE);
    // The connection is held until the call ends: its driver stops when no one holds it.
    let mut work = pin!(async {
        link.mark_if_due(driver, &used).await?;
        link.routed(driver, shard, &used, &call).await
    });
    let answered = poll_fn(|cx| {
        if let Poll::Ready(done) = work.as_mut().poll(cx) {
            return Poll::Ready(Some(done));
        }
        sleep.as_mut().poll(cx).map(|()| None)
    })
    .await;
    match answered {
        Some(Ok(value)) => Ok(value),
        Some(Err(error)) => {
            let mut reason = error.to_string();
            if !link.cluster
                && matches!(error.kind(), ErrorKind::Server(ServerErrorKind::Moved | ServerErrorKind::CrossSlot))
            {
                reason.push_str(" (the server is a Redis Cluster node: open the store with a redis+cluster:// URL)");
            }
            match error.is_timeout() {
                true => Err(link.ran_out_of_time(operation, reason)),
                false => Err(link.failed(operation, reason)),
            }
        }
        None => {
            let node = used.load(Ordering::Relaxed);
            if node != NO_ROUTE {
                link.forget(driver, node);
            }
            link.unroute(shard);
            Err(link.ran_out_of_time(
                operation,
                format!(
                    "no answer within {} ms (RedisStoreBuilder::operation_timeout): the server or the network \
                     between is not responding; the connection was closed",
                    link.timeout.as_millis()
                ),
            ))
        }
    }
}

pub(super) use crate::store::blocking::block_on;
