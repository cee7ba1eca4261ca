//! The PostgreSQL store: many workers on many machines sharing one database.
//!
//! With `idem-tools = { version = "0.1", features = ["postgres"] }`, one line makes the
//! store (its pool, and its schema on first use), and `store = *PG` points a tool at it:
//!
//! ```no_run
//! # extern crate idem_runtime as idem;
//! use std::sync::LazyLock;
//!
//! // IDEM_DATABASE_URL, e.g. postgres://app@db/app
//! static PG: LazyLock<idem::PgStore> = LazyLock::new(|| idem::PgStore::from_env().unwrap());
//! // or PgStore::new("postgres://app@db/app"),
//! // or PgStore::builder(url).schema("idem").max_connections(16).build()
//!
//! // #[idempotent(key = "invoice:<customer>:<period>", compare = [amount], store = *PG)]
//! // async fn send_invoice(customer: String, period: String, amount: f64) -> Result<Invoice, ToolError> { ... }
//! ```
//!
//! Async tools use the store natively; sync tools block their thread for the round trip
//! (safe inside a tokio runtime too: connections are driven by a thread the store owns).
//! Each process has its own pool (default 16 connections,
//! [`max_connections`](PgStoreBuilder::max_connections)), each connection prepares each
//! statement once, and every store operation has a deadline of its own
//! ([`operation_timeout`](PgStoreBuilder::operation_timeout), 10 s by default), measured
//! on the client, so no call waits longer for the store than that, whatever the server or
//! the network does.
//!
//! # When the server fails
//!
//! Each call answers within these bounds ([`PgStoreBuilder`] options; the body never runs
//! when a reservation fails):
//!
//! | failure | answer | within |
//! | --- | --- | --- |
//! | server down, refusing connections, DNS failure | `STORE_UNAVAILABLE` | the connect timeout (5 s, or `connect_timeout=` in the URL) |
//! | server or network stops answering (frozen backend, partition that drops packets) | `STORE_UNAVAILABLE`; the connection is closed, never pooled again | `operation_timeout` (10 s) |
//! | all `max_connections` busy | `STORE_UNAVAILABLE` | [`checkout_timeout`](PgStoreBuilder::checkout_timeout) (5 s) |
//! | the key is held by a [`begin`](PgStore::begin) transaction still open | `IN_PROGRESS`, with a retry hint | [`IDEM_LOCK_WAIT`] (100 ms) |
//! | the completion fails after the body ran | the caller gets the body's result; the reservation is kept (retries see `IN_PROGRESS`, then the `reconcile` hook or `OUTCOME_UNKNOWN`), and an error event says so | 3 attempts, each within `operation_timeout` |
//! | a server error (disk full, permissions, a killed backend) | `STORE_UNAVAILABLE` | the server's answer |
//!
//! Every `STORE_UNAVAILABLE` message names the store (`PostgreSQL user@host:port/db
//! (schema idem)`, never a password), the operation (`reserve`, `complete`, ..) and the
//! server's own words with its SQLSTATE, e.g. `database "app" does not exist (SQLSTATE
//! 3D000)`. Idle pooled connections use TCP keepalives (30 s idle, then every 10 s) and
//! `tcp_user_timeout` (30 s), so a dead peer is noticed in about a minute, not hours;
//! settings in the URL win. After a timeout the pool opens fresh connections, so the store
//! recovers as soon as the server answers again. One thing a timeout cannot take back: a
//! reservation sent just before the network stopped may still reach the server after the
//! caller was told `STORE_UNAVAILABLE`. That key then reads `IN_PROGRESS` until its lease
//! ends, and is then handled like any abandoned call; it never runs twice.
//!
//! # Many workers
//!
//! Every worker may call [`PgStore::migrate`] at start: workers that migrate one schema at
//! once take turns (a transaction-scoped advisory lock), and a schema that is current is
//! left alone. Each worker has its own pool of `max_connections` (default 16): keep
//! workers × `max_connections`, plus everything else that connects, under the server's
//! `max_connections` (PostgreSQL's default is 100). A worker needs about one connection per
//! call in flight. The remote MCP example's workers keep 8 (see `idem::frameworks::rmcp`,
//! *Remote MCP servers*).
//!
//! # Exactly once for effects in the same database
//!
//! [`PgStore::begin`] (with [`Begun`]) opens a transaction whose first statement reserves
//! the key; your writes go through it ([`PgTransaction`] dereferences to a [`Client`]),
//! and [`commit`](PgTransaction::commit)`(&result)` commits them together with the key's
//! result. An error, panic or cancelled future rolls everything back, the key included. A
//! duplicate (another `begin`, or a tool call with the same namespace and key) that
//! arrives while the first is open is told `IN_PROGRESS` within [`IDEM_LOCK_WAIT`]
//! (100 ms); once the first has committed it replays, and once it rolled back it runs.
//! Your writes through the transaction wait for locks up to
//! [`lock_timeout`](PgStoreBuilder::lock_timeout) (5 s). `begin`'s docs have the example.
//!
//! # Cost per call
//!
//! Reserving is one statement, with a budget too (the schema's `idem_reserve_charged`
//! charges the window and inserts the record in that statement's transaction), so a first
//! call takes two round trips (reserve, then complete: two commits) and a replay one,
//! read-only. Measured on a 2-core machine
//! against PostgreSQL 15 on loopback, 2,000 sequential calls from a multi-threaded tokio
//! runtime, 2-3 runs each, client and server sharing the cores
//! (`IDEM_TEST_DATABASE_URL=... cargo test --release -p idem-runtime --features postgres
//! per_call_costs -- --ignored --nocapture`):
//!
//! | per call | round trips | server with `fsync=off` (as in CI) | durable server (PostgreSQL's defaults) |
//! | --- | --- | --- | --- |
//! | fresh call: reserve, body, complete | 2 (two commits) | 0.19 ms | 0.55 ms (two WAL flushes on this disk) |
//! | replay: a repeat of a completed call, async or sync | 1 (read-only) | 0.07 ms | 0.07 ms |
//! | status read (`<fn>_status`) | 1 | 0.04 ms | 0.04 ms |
//! | transactional, fresh: `begin`, your writes, `commit` | 4 plus your writes (one commit) | 0.25-0.29 ms | 0.5 ms |
//! | transactional, replay | 4 | 0.17 ms | 0.18 ms |
//!
//! The sync entry costs the same as the async one. A fresh call's cost on a durable server
//! is mostly its two commits' disk flushes; a replay writes nothing. Against hand-written
//! tokio-postgres doing the least the same job needs, see the repository's BENCHMARKS.md.
//!
//! # Schema (version 5)
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
//!     charge_budget text, charge_scope text,  -- what the reservation charged (NULL: nothing)
//!     charge_start_ms bigint, charge_amount bigint,
//!     PRIMARY KEY (namespace, key)
//! );
//! CREATE INDEX idem_records_retention ON idem_records (retain_until)
//!     WHERE retain_until IS NOT NULL;
//! CREATE TABLE idem_budgets (                 -- budget windows, the server's clock
//!     budget text NOT NULL, scope text NOT NULL, start_ms bigint NOT NULL,
//!     window_ms bigint NOT NULL, used bigint NOT NULL, lim bigint NOT NULL,
//!     raised bigint NOT NULL DEFAULT 0, adjusted_by text, adjusted_at_ms bigint,
//!     adjusted_change text, adjusted_note text,
//!     PRIMARY KEY (budget, scope, start_ms)
//! );
//! CREATE FUNCTION idem_reserve_charged(...)  -- a charged reservation in one statement
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
//! [`renew`](super::Store::renew) sets and settling or a take-over clears. Version 4 added
//! budgets: `idem_budgets`, and each record's charge in its own row, which a take-over (an
//! `UPDATE`) keeps and a release refunds in the statement that deletes the row.
//!
//! # How it keeps its promises
//!
//! - Reservation is one statement, `INSERT .. ON CONFLICT DO NOTHING RETURNING token`,
//!   which also returns the existing record in the same round trip (and, finding one,
//!   inserts nothing and takes no token), so reserving and replaying each take one round
//!   trip and a replay writes nothing. The primary key, never Rust code, decides who
//!   acquires a key. Only when the insert lost to a row its snapshot cannot see yet (a
//!   concurrent winner) does a second statement read it. That statement costs a replay
//!   about 40 µs more than a plain `SELECT` (the server runs it as an `INSERT` even when it
//!   inserts nothing), so while most of a store's recent reservations found a record (a
//!   client replaying a batch, a redelivery storm), it reads first with a plain `SELECT`
//!   and runs the reservation statement only when the read found nothing: a first call
//!   then takes one more round trip, a replay one cheaper one. Either way the answers are
//!   the same.
//! - Completion, release and take-over are single `UPDATE`/`DELETE` statements fenced by
//!   `token`.
//! - A charged reservation ([`reserve_charged`](super::BudgetStore::reserve_charged)) reads first
//!   (a repeat locks nothing), then charges the window with one conditional
//!   `INSERT .. ON CONFLICT DO UPDATE .. WHERE used + amount <= lim + raised`, which locks
//!   its row until the commit, and inserts the record in the same transaction: concurrent
//!   charges of one window take turns at that row, so the ones that pass are exactly those
//!   that fit. A refusal, or a record that exists after all, rolls it all back. The check
//!   adds in `numeric`: two amounts of 9e12 (9 × 10^18 millionths each) pass a `bigint`,
//!   and a charge that does not fit is refused (`BUDGET_EXCEEDED`), never an error. A
//!   window counts up to a `bigint`'s largest value (9,223,372,036,854.775807): a charge or
//!   an operator's raise past it is refused, even one a person approved.
//! - Tokens come from the sequence: a take-over sets `token = nextval(..)`, so a new holder
//!   always has a larger token, and every fenced statement matches on `token`.
//! - Every time is the server's `now()`, and a lease ends when `lease_until <= now()` in
//!   SQL: workers' clocks never matter.
//! - Each connection prepares each statement once. Connections come from a pool of at most
//!   [`max_connections`](PgStoreBuilder::max_connections), opened on demand. Async tools on
//!   a multi-threaded tokio runtime use connections driven by that runtime (no thread hop
//!   per statement); everything else uses connections driven by a thread the store owns,
//!   so the store works from any async runtime and from sync tools (which wait for each
//!   operation on their own thread, [`block_on`], even inside a tokio runtime, without
//!   deadlocking).

mod admin;
mod budgets;
mod deadline;
mod open;
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

pub use self::open::PgStoreBuilder;
use self::pool::{Pool, Pooled, block_on};
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
/// Cloning is cheap and shares the pool. Async tools await its [`Store`](super::Store)
/// operations; sync tools wait for them on the calling thread ([`block_on`]), for the round
/// trip, while the store's own IO thread talks to the server. See the
/// [module documentation](self) for the schema and its migrations.
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
    /// Whether reservations read first: see `store::repeats`.
    repeats: crate::store::repeats::Repeats,
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

/// A duration in whole milliseconds, capped at [`MAX_DURATION_MS`].
fn duration_ms(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).map_or(MAX_DURATION_MS, |ms| ms.min(MAX_DURATION_MS))
}
