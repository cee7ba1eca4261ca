//! The PostgreSQL store: many workers on many machines sharing one database.
//!
//! # Schema (version 3)
//!
//! All objects live in one schema (`idem` unless [`PgStoreBuilder::schema`] names
//! another), created on first use together with its tables:
//!
//! ```sql
//! CREATE SEQUENCE idem_tokens AS bigint;      -- fencing tokens: only ever grow
//! CREATE TABLE idem_records (
//!     namespace    text        NOT NULL,
//!     key          text        NOT NULL,
//!     token        bigint      NOT NULL DEFAULT nextval('idem_tokens'),
//!     state        text        NOT NULL,      -- 'in_progress' | 'completed' | 'failed'
//!     request      text        NOT NULL,      -- the compared fields, canonical JSON
//!     result       text,                      -- result JSON, or the kept error's JSON
//!     created_at   timestamptz NOT NULL,      -- the server's clock, whole milliseconds
//!     updated_at   timestamptz NOT NULL,
//!     lease_until  timestamptz,               -- in progress only
//!     retain_until timestamptz,               -- settled only: purged after it
//!     progress     text,                      -- in progress only: the body's last message
//!     PRIMARY KEY (namespace, key)
//! );
//! CREATE INDEX idem_records_retention ON idem_records (retain_until)
//!     WHERE retain_until IS NOT NULL;
//! CREATE TABLE idem_schema_version (version integer PRIMARY KEY,
//!     description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());
//! ```
//!
//! # Migrations
//!
//! `idem_schema_version` holds one row per migration applied. On first use each store
//! checks it; when migrations are missing it takes a transaction-scoped advisory lock (so
//! that processes starting together take turns), creates the schema if it does not exist,
//! and applies each missing migration (`migrations/NNNN_*.sql` in this crate) in one
//! transaction with its version row. A schema written by a newer idem is refused, never
//! used. [`PgStore::migrate`] does this up front, to fail at startup instead of on the
//! first call.
//!
//! The table has no CHECK constraints (version 2 dropped those of version 1): PostgreSQL
//! prepares them at every write, which cost a quarter of a call. The store's statements
//! keep the invariants (an in-progress record has a lease end and no result, a settled one
//! a result and a retention), and every read checks them: a row that breaks them is
//! corrupt, answered RECORD_UNREADABLE, never used. Version 3 added `progress`, which
//! [`renew`](super::Store::renew) sets and settling or a take-over clears.
//!
//! # How it keeps its promises
//!
//! - Reservation is one statement, `INSERT .. ON CONFLICT DO NOTHING RETURNING token`,
//!   which also returns the existing record in the same round trip (and, finding one,
//!   inserts nothing and takes no token). The primary key decides who acquires a key. Only
//!   when the insert lost to a row its snapshot cannot see yet (a concurrent winner) does a
//!   second statement read it. While most of a store's recent reservations found a record
//!   (a stretch of retries), it reads first with a plain `SELECT`, cheaper for a repeat, and
//!   runs the reservation statement only when the read found nothing.
//! - Tokens come from the sequence: a take-over sets `token = nextval(..)`, so a new holder
//!   always has a larger token, and every fenced statement matches on `token`.
//! - Every time is the server's `now()`, and a lease ends when `lease_until <= now()` in
//!   SQL: workers' clocks never matter.
//! - Each connection prepares each statement once. Connections come from a pool of at most
//!   [`max_connections`](PgStoreBuilder::max_connections), opened on demand. Async tools on
//!   a multi-threaded tokio runtime use connections driven by that runtime (no thread hop
//!   per statement); everything else uses connections driven by a thread the store owns,
//!   so the store works from any async runtime and from sync tools (the
//!   [`Store`](super::Store) impl blocks the calling thread, even inside a tokio runtime,
//!   without deadlocking).

mod admin;
mod deadline;
mod ops;
mod pool;
mod schema;
mod transaction;

pub use self::transaction::{Begun, PgTransaction};

#[cfg(test)]
mod tests;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::OnceCell;
use tokio_postgres::config::Host;
use tokio_postgres::{Config, NoTls};

// The driver's types that idem's own signatures name, and no more: the rest of
// tokio-postgres (0.x) is its API, not ours. Queries of your own beyond a
// [`PgTransaction`]'s depend on `tokio-postgres = "0.7"` directly.

/// tokio-postgres' client: what a [`PgTransaction`] dereferences to for your writes
/// (`tx.execute(..)`, `tx.query(..)`), in the transaction that holds the key.
pub use tokio_postgres::Client;
/// tokio-postgres' socket, which a TLS connector for [`PgStoreBuilder::tls`] wraps.
pub use tokio_postgres::Socket;
/// What [`PgStoreBuilder::tls`] takes: a TLS connector such as
/// `postgres_native_tls::MakeTlsConnector` or `tokio_postgres_rustls::MakeRustlsConnect`.
pub use tokio_postgres::tls::MakeTlsConnect;
/// The per-connection half of a [`MakeTlsConnect`], named in [`PgStoreBuilder::tls`]'s bounds.
pub use tokio_postgres::tls::TlsConnect;

use self::pool::{Connect, Pool, Pooled, block_on};
use self::schema::Queries;
use super::StoreError;

/// The environment variable [`PgStore::from_env`] reads the connection URL from.
pub const DATABASE_URL_ENV: &str = "IDEM_DATABASE_URL";

/// The longest one of idem's own statements waits for a lock (the connection's
/// `lock_timeout`). Its records are locked only for the instant of a write, or for the
/// whole of a [`PgStore::begin`] transaction: a reservation that waits longer is behind an
/// open transaction, so it is answered `IN_PROGRESS` ([`StoreError::Locked`]) at once
/// rather than after the transaction's own [`lock_timeout`](PgStoreBuilder::lock_timeout).
pub const IDEM_LOCK_WAIT: Duration = Duration::from_millis(100);

/// Leases and retentions are capped at 100 years, which keeps `now() + duration` exact.
const MAX_DURATION_MS: i64 = 100 * 365 * 24 * 3600 * 1000;

/// Options for a [`PgStore`]; start with [`PgStore::builder`].
pub struct PgStoreBuilder {
    url: String,
    schema: String,
    max_connections: usize,
    checkout_timeout: Duration,
    lock_timeout: Duration,
    operation_timeout: Duration,
    connect: Connect,
}

impl std::fmt::Debug for PgStoreBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStoreBuilder")
            .field("schema", &self.schema)
            .field("max_connections", &self.max_connections)
            .field("checkout_timeout", &self.checkout_timeout)
            .field("lock_timeout", &self.lock_timeout)
            .field("operation_timeout", &self.operation_timeout)
            .finish_non_exhaustive()
    }
}

impl PgStoreBuilder {
    /// The schema that holds idem's tables, created on first use. Default: `idem`. A plain
    /// lowercase identifier: letters, digits and `_`, not starting with a digit.
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// The most connections this store opens at once. Default: 16. Each process has its own
    /// pool: keep processes × `max_connections` under the server's `max_connections`.
    pub fn max_connections(mut self, max_connections: usize) -> Self {
        self.max_connections = max_connections;
        self
    }

    /// How long an operation waits for a free connection before it fails with
    /// [`StoreError::Backend`] (the tool answers `STORE_UNAVAILABLE`). Default: 5 seconds.
    pub fn checkout_timeout(mut self, timeout: Duration) -> Self {
        self.checkout_timeout = timeout;
        self
    }

    /// How long the statements of a [`PgTransaction`] (your writes through it) wait for a
    /// lock, and how long a migration waits for another process's (the server's
    /// `lock_timeout`). Default: 5 seconds. idem's own statements wait at most
    /// [`IDEM_LOCK_WAIT`]: a call that finds its key held by a transaction still open is
    /// told `IN_PROGRESS` after that, not after this.
    pub fn lock_timeout(mut self, timeout: Duration) -> Self {
        self.lock_timeout = timeout;
        self
    }

    /// The longest one store operation may take, from waiting for a connection to the
    /// server's last answer. Past it the operation fails with [`StoreError::Backend`] (a
    /// tool call answers `STORE_UNAVAILABLE` and its body does not run) and the connection
    /// it used is closed, not pooled. This is what bounds a server that stops answering: a
    /// frozen backend, or a network partition that drops packets, where neither the
    /// server's timeouts nor TCP's (about 15 minutes) help. Default: 10 seconds. Keep it
    /// above `checkout_timeout` and `lock_timeout`, or it cuts their waits short.
    pub fn operation_timeout(mut self, timeout: Duration) -> Self {
        self.operation_timeout = timeout;
        self
    }

    /// Connects with TLS, e.g. `postgres_native_tls::MakeTlsConnector` or
    /// `tokio_postgres_rustls::MakeRustlsConnect`. Default: no TLS.
    pub fn tls<T>(mut self, tls: T) -> Self
    where
        T: MakeTlsConnect<Socket> + Clone + Send + Sync + 'static,
        T::Stream: Send + 'static,
        T::TlsConnect: Send,
        <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
    {
        self.connect = Arc::new(move |config: Config| {
            let tls = tls.clone();
            Box::pin(async move {
                let (client, connection) = config.connect(tls).await?;
                tokio::spawn(async move {
                    let _ = connection.await;
                });
                Ok(client)
            })
        });
        self
    }

    /// Makes the store. Nothing is connected yet: the first operation connects and creates
    /// or migrates the schema. Fails on a malformed URL or schema name.
    pub fn build(self) -> Result<PgStore, StoreError> {
        let mut config: Config = self.url.parse().map_err(|e| invalid(format!("bad connection URL: {e}")))?;
        let valid_schema = self.schema.len() <= 63
            && self.schema.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
            && self.schema.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !valid_schema {
            return Err(invalid(format!(
                "bad schema name {:?}: use lowercase letters, digits and _, starting with a letter",
                self.schema
            )));
        }
        if self.max_connections == 0 {
            return Err(invalid("max_connections must be at least 1".into()));
        }
        let options = config.get_options().map(|o| format!("{o} ")).unwrap_or_default();
        config.options(format!("{options}-c lock_timeout={}", IDEM_LOCK_WAIT.as_millis()));
        if config.get_application_name().is_none() {
            config.application_name("idem");
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(5)); // an unreachable host is an answer in time
        }
        dead_peers_noticed(&mut config);
        let timeouts = (self.checkout_timeout, self.operation_timeout);
        let pool = Pool::new(config, self.connect, self.max_connections, timeouts)
            .map_err(|e| StoreError::Backend(Box::new(e)))?;
        let queries = Queries::new(&self.schema);
        let described = describe(pool.config(), &self.schema);
        let lock_timeout = self.lock_timeout;
        let inner = Inner {
            pool,
            queries,
            schema: self.schema,
            described,
            lock_timeout,
            migrated: OnceCell::new(),
            repeats: ops::Repeats::default(),
        };
        Ok(PgStore { inner: Arc::new(inner) })
    }
}

/// TCP settings that notice a dead server or a broken network within about a minute, where
/// the kernel's defaults take two hours (keepalive) or a quarter of an hour (retransmission):
/// a pooled connection to a peer that is gone is closed instead of handed to the next
/// operation. Settings the URL makes (`keepalives_idle=`, `tcp_user_timeout=`, ..) are kept.
fn dead_peers_noticed(config: &mut Config) {
    const KERNEL_KEEPALIVE_IDLE: Duration = Duration::from_secs(2 * 60 * 60); // tokio-postgres's default
    if config.get_keepalives_idle() == KERNEL_KEEPALIVE_IDLE {
        config.keepalives_idle(Duration::from_secs(30));
    }
    if config.get_keepalives_interval().is_none() {
        config.keepalives_interval(Duration::from_secs(10));
    }
    if config.get_keepalives_retries().is_none() {
        config.keepalives_retries(3);
    }
    if config.get_tcp_user_timeout().is_none() {
        config.tcp_user_timeout(Duration::from_secs(30)); // Linux: unacknowledged data
    }
}

fn invalid(message: String) -> StoreError {
    StoreError::Backend(message.into())
}

/// A store in a PostgreSQL database: for many workers on many machines.
///
/// ```no_run
/// use std::sync::LazyLock;
/// use idem_runtime::store::PgStore;
///
/// // One line: the store and its pool. The schema is created on first use.
/// static STORE: LazyLock<PgStore> = LazyLock::new(|| PgStore::new("postgres://app@db/app").unwrap());
///
/// // Then `#[idempotent(key = "...", store = *STORE)]` on any tool, sync or async.
/// # async fn startup() -> Result<(), idem_runtime::store::StoreError> {
/// // Optional: create or migrate the schema at startup, to fail early.
/// STORE.migrate().await?;
/// # Ok(()) }
/// ```
///
/// Cloning is cheap and shares the pool. Async tools use the [`AsyncStore`](super::AsyncStore) impl, the
/// native path; sync tools use the [`Store`](super::Store) impl, which blocks the calling thread for the
/// round trip. See the [module documentation](self) for the schema and its migrations.
#[derive(Clone)]
pub struct PgStore {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    queries: Queries,
    schema: String,
    /// What error messages call this store: see [`describe`].
    described: String,
    /// See [`PgStoreBuilder::lock_timeout`].
    lock_timeout: Duration,
    migrated: OnceCell<()>,
    /// Whether reservations read first: see `ops::Repeats`.
    repeats: ops::Repeats,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("store", &self.inner.described)
            .field("max_connections", &self.inner.pool.max())
            .finish_non_exhaustive()
    }
}

impl PgStore {
    /// The store at `url` (`postgres://user:password@host:port/dbname`, or `host=.. user=..`)
    /// with the default options. Connects on first use.
    pub fn new(url: &str) -> Result<Self, StoreError> {
        Self::builder(url).build()
    }

    /// The store at the URL in the `IDEM_DATABASE_URL` environment variable.
    pub fn from_env() -> Result<Self, StoreError> {
        let url = std::env::var(DATABASE_URL_ENV)
            .map_err(|e| invalid(format!("cannot read {DATABASE_URL_ENV} for the idem PostgreSQL store: {e}")))?;
        Self::new(&url)
    }

    /// Options for the store at `url`: schema, pool size, timeouts, TLS.
    pub fn builder(url: &str) -> PgStoreBuilder {
        let no_tls: Connect = Arc::new(|config: Config| {
            Box::pin(async move {
                let (client, connection) = config.connect(NoTls).await?;
                tokio::spawn(async move {
                    let _ = connection.await;
                });
                Ok(client)
            })
        });
        PgStoreBuilder {
            url: url.to_owned(),
            schema: "idem".to_owned(),
            max_connections: 16,
            checkout_timeout: Duration::from_secs(5),
            lock_timeout: Duration::from_secs(5),
            operation_timeout: Duration::from_secs(10),
            connect: no_tls,
        }
    }

    /// The schema that holds the store's tables.
    pub fn schema(&self) -> &str {
        &self.inner.schema
    }

    /// Creates the schema or applies missing migrations now, instead of on first use.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        self.operation("migrate", async { self.conn().await.map(drop) }).await
    }

    /// [`migrate`](Self::migrate) for sync code.
    pub fn migrate_blocking(&self) -> Result<(), StoreError> {
        block_on(self.migrate())
    }

    /// `error` with this store and `operation` named, for messages an operator acts on.
    fn failed(&self, operation: &'static str) -> impl Fn(StoreError) -> StoreError + Copy + '_ {
        move |error| error.within(&self.inner.described, operation)
    }

    /// Runs one operation within the operation timeout; its failure names this store and
    /// `name`.
    async fn operation<T>(
        &self,
        name: &'static str,
        operation: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        self.inner.pool.deadline(operation).await.and_then(|done| done).map_err(self.failed(name))
    }

    /// A pooled connection to a migrated schema.
    async fn conn(&self) -> Result<Pooled<'_>, StoreError> {
        let inner = &*self.inner;
        let mut conn = inner.pool.get().await?;
        if inner.migrated.initialized() {
            return Ok(conn);
        }
        inner.migrated.get_or_try_init(|| inner.queries.migrate(&mut conn.client, inner.lock_timeout)).await?;
        Ok(conn)
    }
}

pub(super) fn backend(error: tokio_postgres::Error) -> StoreError {
    StoreError::Backend(Box::new(PgError(error)))
}

/// A driver error told in full: tokio-postgres prints a server's error as "db error" and
/// keeps the server's message and SQLSTATE in its source, which an operator needs.
#[derive(Debug)]
struct PgError(tokio_postgres::Error);

impl std::fmt::Display for PgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.as_db_error() {
            Some(db) => {
                write!(f, "{} (SQLSTATE {})", db.message(), db.code().code())?;
                if let Some(detail) = db.detail() {
                    write!(f, "; {detail}")?;
                }
                Ok(())
            }
            None => f.write_str(&super::failure::with_sources(&self.0)),
        }
    }
}

/// No source: its text already holds the driver error's whole chain, which a report that
/// walks sources would otherwise print twice.
impl std::error::Error for PgError {}

/// The store as an error message names it: hosts, port, database and schema, never the
/// user's password.
fn describe(config: &Config, schema: &str) -> String {
    let hosts: Vec<String> = (config.get_hosts().iter())
        .map(|host| match host {
            Host::Tcp(name) => name.clone(),
            #[cfg(unix)]
            Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    let port = config.get_ports().first().map_or(5432, |port| *port);
    let user = config.get_user().map(|user| format!("{user}@")).unwrap_or_default();
    let dbname = config.get_dbname().unwrap_or("");
    format!("PostgreSQL {user}{}:{port}/{dbname} (schema {schema})", hosts.join(","))
}

/// A duration in whole milliseconds, capped at [`MAX_DURATION_MS`].
fn duration_ms(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).map_or(MAX_DURATION_MS, |ms| ms.min(MAX_DURATION_MS))
}
