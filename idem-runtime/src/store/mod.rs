//! Stores: where reservations and results live.
//!
//! A tool author picks a store and hands it to `#[idempotent(store = ...)]`, or leaves
//! `store` out for [the default store](#the-default-store); nothing else here is needed to
//! write tools. The rest of this module is for store authors, operators' code and tests:
//! the store protocol ([`Store`], [`AsyncStore`] and the types their operations take and
//! return), the operator's [`Admin`] operations, and the constants a tool's attribute
//! defaults to ([`DEFAULT_LEASE`], [`DEFAULT_MAX_HOLD`], [`DEFAULT_RETAIN`]).
//!
//! # Choosing a store
//!
//! | store | use it for |
//! | --- | --- |
//! | [`SqliteStore`] (the default) | One machine: one or many threads and processes sharing a file. WAL, a busy timeout, full durability (`synchronous = FULL`) by default; `SqliteStore::builder(path).synchronous(Synchronous::Normal)` trades power-loss durability for speed ([`Synchronous`]). |
//! | [`MemoryStore`] | Tests and single-process tools whose keys need not survive a restart. |
//! | `PgStore` (feature `postgres`) | Many workers on many machines sharing one PostgreSQL database; leases judged by the server's clock. See [PostgreSQL](#postgresql). |
//! | `RedisStore` (feature `redis`) | Many workers sharing one Redis or Valkey server; as durable as the server's persistence settings, which the module [`redis`](redis/index.html) tabulates. |
//! | your own | Any type implementing [`Store`] (sync tools) and [`AsyncStore`] (async tools): see [A store of your own](#a-store-of-your-own-for-store-authors). |
//!
//! `store = expr` is evaluated on every call and may be any of these, also behind `&`,
//! `Box` or `Arc`, or a `static` (`store = *STORE` for a `LazyLock`). A store keeps one
//! record per `(namespace, key)`. Atomicity comes from the store's own unique constraint
//! or transaction, never from a check-then-insert in Rust: two callers that reserve the
//! same key at the same moment get exactly one [`Reservation::Acquired`].
//!
//! The memory and SQLite stores answer on the calling thread, async tools included: an
//! SQLite call is one short transaction on a local file (tens of microseconds to read, one
//! disk sync to write with full durability), which async executors tolerate the way they
//! tolerate a short log write. What each store adds to a call, against hand-written code
//! doing the same job in the same run, is measured in the repository's BENCHMARKS.md
//! (`cargo bench`).
//!
//! # SQLite
//!
//! **Durability.** With full durability (the default) a reservation is on disk before the
//! body runs and a completion before the tool returns: a retry after a crash, even a power
//! loss, finds the record. [`Synchronous::Normal`] keeps the records through a crash of the
//! application but may lose the last few commits on power loss or an operating-system
//! crash, so a retry after one may run the action again.
//!
//! **Many threads, one file.** SQLite writes one transaction at a time, and with full
//! durability each commit waits for its disk sync. So the threads of one process that
//! write to one `SqliteStore` at the same moment (reservations, completions, renewals,
//! releases) share one commit: the first of them runs all the waiting writes in one
//! transaction, and each call returns only once that commit (its own write included) is
//! on disk. A lone writer commits alone. Writers wait for each other in the store, woken
//! in turn, rather than polling SQLite's lock; with 8 threads on a 2-core machine this
//! makes about half a disk sync per first call instead of two (BENCHMARKS.md). At
//! `Synchronous::Normal` a commit syncs nothing, so writes are not grouped.
//!
//! **Many processes, one file.** Other processes on the same file meet SQLite's lock and
//! the [busy timeout](SqliteStoreBuilder::busy_timeout) (5 s). Opening a store is as safe
//! to do concurrently as using it: processes that open one new SQLite file at the same
//! moment all get the store (the switch to WAL and the schema are retried within the busy
//! timeout; only a file still locked after it is an error). The file must be on a local
//! disk. While processes have it open, nobody may delete, move or replace it, nor restore
//! a backup into it: [`SqliteStore`'s docs](SqliteStore#the-file-while-the-store-is-open)
//! say what a store does then (`STORE_UNAVAILABLE` from then on, never a new file), and how
//! to reset or restore a store.
//!
//! **When the file fails**, each call answers within these bounds
//! ([`SqliteStoreBuilder`] options):
//!
//! | failure | answer | within |
//! | --- | --- | --- |
//! | another connection holds the write lock (many processes writing, a long `transaction` body) | `STORE_UNAVAILABLE`; the body does not run | `busy_timeout` (5 s) |
//! | disk full, I/O error, read-only file system, before the body | `STORE_UNAVAILABLE`; the body does not run | at once |
//! | the same, when the completion is written | the caller gets the body's result; the reservation is kept (retries see `IN_PROGRESS`, then the `reconcile` hook or `OUTCOME_UNKNOWN`), and an error event says so | at once |
//! | the file deleted or replaced under an open store | `STORE_UNAVAILABLE` on every call until the process restarts (`store failed: SQLite /var/lib/billing/idem.db: reserve: the file was replaced after this store opened it (...)`) | the next reservation; other operations within 10 ms |
//! | the path cannot be opened (a directory that cannot be created, permissions, not a database) | [`SqliteStore::open`] fails naming the path and the reason; a tool on the default store answers `STORE_UNAVAILABLE` with the same text | at once |
//!
//! Every SQLite failure names the file, the operation and SQLite's or the operating
//! system's reason (`... open: creating its directory /srv/idem: Permission denied (os
//! error 13)`).
//!
//! **A database your application already uses** may hold the store too, beside its own
//! tables: [`SqliteStoreBuilder::open`] says what it adds (the tables `idem_records` and `idem_budgets`, WAL,
//! `PRAGMA user_version`) and when it refuses such a file (one whose `user_version` your
//! application already sets): give idem its own file then, or `ATTACH` one.
//!
//! # Transactions: exactly once for effects in the store's database
//!
//! When the tool's effect is a write to the same database as the store, the key and the
//! effect can commit together: no lease, no "outcome unknown".
//!
//! - [`SqliteStore::transaction`]`(id, &compare, retain, |tx| { ... })` runs the body in one
//!   SQLite transaction with the key (the body gets a `rusqlite::Transaction`), for tables
//!   in the store's own file.
//! - `PgStore::begin` (feature `postgres`) opens a PostgreSQL transaction whose first
//!   statement reserves the key; see [PostgreSQL](#postgresql).
//!
//! In both, an error, a panic or a cancelled future rolls everything back, the key
//! included. A duplicate that arrives while the first is open waits for it (SQLite: the
//! first holds the file's write lock, and a wait past the busy timeout is
//! `STORE_UNAVAILABLE`) or is told `IN_PROGRESS` (PostgreSQL, within 100 ms); once the
//! first has committed it replays, and once it rolled back it runs.
//!
//! # PostgreSQL
//!
//! `PgStore`, in the module [`postgres`](postgres/index.html) (feature `postgres`): its
//! pool, deadlines, what each failure of the server answers, many workers, its schema and
//! transactional mode.
//!
//! # The default store
//!
//! A tool without `store = ...` uses [`default_store`](crate::default_store): an SQLite
//! file, created with its schema on first use.
//!
//! | question | answer |
//! | --- | --- |
//! | where | [`set_default_store_path`](crate::set_default_store_path), else the `IDEM_DB` environment variable, else `idem/idem.db` in the user's data directory; [`default_store_path`](crate::default_store_path) says where, and gives the rule in full |
//! | when the path is fixed | by the first of `default_store_path()` and the first call that opens the store; made absolute then and kept, whatever the working directory or `IDEM_DB` do afterwards |
//! | who shares it | every process of the user: each tool's records are kept apart by its namespace |
//! | who may read it | on Unix, only its user: see [`default_store`](crate::default_store) for the modes it sets and what it warns about |
//! | `IDEM_DB` names a PostgreSQL or Redis URL | refused (`STORE_UNAVAILABLE`, saying so), never taken for a file name: give the tools `store = ...` with a `PgStore` or a `RedisStore` |
//! | it cannot be opened | the error names the path; the tool answers `STORE_UNAVAILABLE`, and the next call tries again |
//!
//! The first use logs the path (an `info` event, target `idem`); the `idem` command uses
//! the same default. A server in production should name its store
//! (`IDEM_DB=/var/lib/billing/idem.db`, or `store = ...`): its records then live where its
//! operators back up and look.
//!
//! # A store of your own (for store authors)
//!
//! Any type implementing [`Store`] (sync tools) and [`AsyncStore`] (async tools) can be a
//! store. A store whose operations are quick and local implements `Store` only and is
//! wrapped in [`FromSync`], which serves sync and async tools alike (`static STORE:
//! LazyLock<FromSync<MyStore>> = LazyLock::new(|| FromSync(MyStore::new()));`); implement
//! `AsyncStore` yourself for one that waits on a network. A tool's generated
//! `<fn>_record_id(...)` names its record ([`OwnedRecordId`]) for code that reads or
//! settles it through a store. `idem::testing::conformance::check_store` (feature
//! `testing`) runs the shared store checks against it, and `check_async_store` the same
//! checks through its async impl; the memory, SQLite, PostgreSQL and Redis stores all run that
//! one suite. Implement [`Admin`] too for the `idem` command's operations.
//!
//! # Calling store operations (for store authors)
//!
//! `Store` and `AsyncStore` name their operations alike, so on a type that implements both
//! (every bundled store, [`FromSync`]), `store.read(id)` with both traits in scope is
//! ambiguous (error E0034). Name the trait: `Store::read(&store, id)` answers at once
//! (for `PgStore` it blocks the calling thread, so call it outside async code), and
//! `AsyncStore::read(&store, id).await` is the async form. With only one of the traits
//! imported, `store.read(id)` calls that one.
//!
//! ```
//! # extern crate idem_runtime as idem;
//! use std::time::Duration;
//! use idem::MemoryStore;
//! use idem::store::{AsyncStore, RecordId, Reservation, Reserve, Store};
//!
//! let store = MemoryStore::new();
//! let id = RecordId { namespace: "billing.invoices", key: "invoice:acme:2026-10" };
//! let reserve = Reserve { id, request: "{}", lease: Duration::from_secs(30) };
//! assert!(matches!(Store::reserve(&store, reserve), Ok(Reservation::Acquired { .. })));
//! assert!(Store::read(&store, id).unwrap().is_some());
//! # let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! # runtime.block_on(async {
//! // In async code, the same record through `AsyncStore`:
//! assert!(AsyncStore::read(&store, id).await.unwrap().is_some());
//! # });
//! ```
//!
//! # What may grow (for store authors)
//!
//! The types a store builds or takes, [`Record`], [`Reservation`], [`Reserve`], [`Renew`]
//! and [`Completion`], are exhaustive: a new field or variant is something every store
//! must handle, so it should break a store's build rather than be ignored. The same holds
//! for [`ListQuery`], whose every field is a condition an [`Admin`] must apply (callers
//! write `..ListQuery::default()`). [`RecordState`] and [`StateFilter`] are
//! non-exhaustive: later versions add states (approvals come next), which code that
//! matches them must meet with a `_` arm. [`ListedRecord`] and [`StateCount`] are
//! non-exhaustive reports: read their fields, build them with `new`.

mod adapter;
mod admin;
#[cfg(any(feature = "postgres", feature = "redis"))]
mod blocking;
pub mod budget;
mod defaults;
mod failure;
mod memory;
pub(crate) mod once;
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub mod postgres;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub mod redis;
mod sqlite;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

pub use adapter::FromSync;
pub(crate) use adapter::async_store_from_sync;
pub use admin::{Admin, ListQuery, ListedRecord, StateCount, StateFilter};
pub use defaults::{DEFAULT_LEASE, DEFAULT_MAX_HOLD, DEFAULT_RETAIN, DEFAULT_STORE_ENV, DEFAULT_STORE_FILE};
pub use memory::MemoryStore;
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use postgres::{PgStore, PgStoreBuilder};
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use redis::{RedisStore, RedisStoreBuilder};
pub use sqlite::{SqliteStore, SqliteStoreBuilder, Synchronous};
pub use sqlite::{Transacted, TransactionError};

/// A store time (milliseconds since the Unix epoch, as [`Record`] holds them) as RFC 3339
/// in UTC, to the millisecond: `2026-12-01T13:45:00.123Z`.
pub fn rfc3339(ms: i64) -> String {
    let (days, ms_of_day) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    // Howard Hinnant's civil_from_days: the proleptic Gregorian date of a day count.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (hour, minute, second, milli) =
        (ms_of_day / 3_600_000, ms_of_day / 60_000 % 60, ms_of_day / 1000 % 60, ms_of_day % 1000);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{milli:03}Z")
}

/// A duration in milliseconds, capped so that `now + duration` can neither overflow an
/// `i64` nor leave an SQLite integer: the form the memory and SQLite stores keep times in.
pub(crate) fn duration_ms(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).map_or(i64::MAX / 4, |ms| ms.min(i64::MAX / 4))
}

/// Milliseconds since the Unix epoch by this process's clock (a clock before 1970 reads 0):
/// the memory store's clock, and what a caller compares a store's times with.
pub(crate) fn now_ms() -> i64 {
    let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    duration_ms(since_epoch)
}

/// Runs a future that never waits to its end: a sync tool's drive over a sync store, or a
/// store operation of a store whose futures are ready at once (`FromSync`). It takes the
/// future pinned where it was made, so a large state machine is not moved.
pub(crate) fn ready_now<F: Future>(future: Pin<&mut F>) -> F::Output {
    match future.poll(&mut std::task::Context::from_waker(std::task::Waker::noop())) {
        std::task::Poll::Ready(output) => output,
        std::task::Poll::Pending => unreachable!("a sync store's operation waited: every step of it is ready at once"),
    }
}

/// Which record: the tool's namespace and the derived key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RecordId<'a> {
    /// The tool's identity (by default `module::path::fn_name`), so two tools with the same
    /// template text never share keys by accident.
    pub namespace: &'a str,
    /// The derived key, e.g. `invoice:acme:2026-10`.
    pub key: &'a str,
}

/// A [`RecordId`] that owns its key: what a tool's generated `<tool>_record_id(...)`
/// returns for the key's fields, so that code reading or settling a tool's records through
/// a [`Store`] never spells the namespace out by hand.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OwnedRecordId {
    /// The tool's namespace.
    pub namespace: &'static str,
    /// The derived key.
    pub key: crate::Key,
}

impl OwnedRecordId {
    /// The borrowed form that [`Store`] and [`AsyncStore`] methods take.
    pub fn as_record_id(&self) -> RecordId<'_> {
        RecordId { namespace: self.namespace, key: self.key.as_str() }
    }
}

/// A fencing token: proof of holding a reservation. Tokens only grow: a newer holder of a
/// key always has a larger token than any earlier one, so a late finisher cannot complete
/// or release a record that is no longer its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Token(pub u64);

/// A request to reserve a key before the body runs.
#[derive(Clone, Copy, Debug)]
pub struct Reserve<'a> {
    /// The record to create.
    pub id: RecordId<'a>,
    /// The compared fields as canonical JSON (`{}` when there are none), kept with the
    /// reservation so that every later call is compared against the first.
    pub request: &'a str,
    /// How long the reservation holds without a completion before it counts as abandoned.
    pub lease: Duration,
}

/// A renewal of a reservation's lease by its holder, whose body is still running: what
/// keeps a slow call's key its own for as long as it runs (see [`Store::renew`]).
#[derive(Clone, Copy, Debug)]
pub struct Renew<'a> {
    /// The record held.
    pub id: RecordId<'a>,
    /// The holder's token.
    pub token: Token,
    /// The new lease, counted from now by the store's clock.
    pub lease: Duration,
    /// A short progress message to keep with the reservation (`idem::progress`); `None`
    /// leaves the stored one as it is.
    pub progress: Option<&'a str>,
}

/// What a reservation attempt found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reservation {
    /// The caller now holds the key and must complete or release it with `token`.
    Acquired {
        /// Fences this holder's completion and release.
        token: Token,
    },
    /// A record for the key exists already.
    Existing(Record),
    /// No record exists, but the charge would take its budget window past its limit: no
    /// record was made and nothing was charged ([`Store::reserve_charged`] only).
    OverBudget(budget::BudgetWindow),
}

/// A stored record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The compared fields of the first call, as canonical JSON.
    pub request: String,
    /// The holder's (or the last holder's) fencing token.
    pub token: Token,
    /// When the reservation was made, in milliseconds since the Unix epoch, by the
    /// store's clock.
    pub created_at_ms: i64,
    /// When the record last changed (reserved, renewed, taken over, completed), by the
    /// store's clock.
    pub updated_at_ms: i64,
    /// For a settled record: until when it is kept. [`Store::purge`] removes it afterwards.
    pub retain_until_ms: Option<i64>,
    /// Where the record stands.
    pub state: RecordState,
}

/// Where a record stands.
///
/// Non-exhaustive: a later idem may add states (approvals come next), so code that matches
/// one needs a `_` arm; a store still builds each variant as it is.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecordState {
    /// Reserved and not yet settled.
    InProgress {
        /// When the lease ends, by the store's clock.
        lease_until_ms: i64,
        /// Whether the lease has ended, judged by the store's clock (for PostgreSQL, the
        /// server's), never a worker's.
        lease_expired: bool,
        /// The last progress message the running body reported (`idem::progress`), if any.
        progress: Option<String>,
    },
    /// The body succeeded; its result as JSON.
    Completed {
        /// The serialized result.
        result: String,
    },
    /// The body failed and the tool keeps errors as final (`on_error = keep`); the error
    /// as JSON.
    Failed {
        /// The serialized error.
        error: String,
    },
}

impl RecordState {
    /// The state a bundled store's row holds, from its `state`, `result` and lease
    /// (end, ended) columns, or why the row breaks the invariants every store keeps: a
    /// known state, a lease for an in-progress record, a result for a settled one.
    /// `result` is only looked at for settled states and `lease` only for in-progress ones,
    /// so a store need not read what the state does not use.
    pub(crate) fn from_columns(
        state: &str,
        result: Option<String>,
        lease: (Option<i64>, Option<bool>),
        progress: Option<String>,
    ) -> Result<RecordState, String> {
        match (state, result, lease) {
            ("in_progress", _, (Some(lease_until_ms), Some(lease_expired))) => {
                Ok(RecordState::InProgress { lease_until_ms, lease_expired, progress })
            }
            ("in_progress", _, _) => Err("in progress without a lease end".to_owned()),
            ("completed", Some(result), _) => Ok(RecordState::Completed { result }),
            ("failed", Some(error), _) => Ok(RecordState::Failed { error }),
            ("completed" | "failed", None, _) => Err("settled without a result".to_owned()),
            (other, ..) => Err(format!("unknown state {other:?}")),
        }
    }
}

/// How a reservation is settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completion<'a> {
    /// The body succeeded with this result, as JSON.
    Success(&'a str),
    /// The body failed with this error, as JSON, and the error is kept as the final answer.
    KeptError(&'a str),
}

/// Why a store operation failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum StoreError {
    /// The token no longer holds the record: its lease was taken over, or it was released
    /// or completed already. The record was not changed.
    Fenced,
    /// The stored record cannot be read (unknown state, malformed columns).
    Corrupt(String),
    /// The record is locked by a writer that has not committed yet, such as a
    /// [`PgStore::begin`](postgres::PgStore::begin) transaction still open: the key is in
    /// progress, but its record cannot be read until that writer ends. Nothing changed. A
    /// tool call is told `IN_PROGRESS`.
    Locked,
    /// The backend failed: I/O, driver, lock timeout, unreachable server.
    Backend(Box<dyn std::error::Error + Send + Sync>),
    /// An operator's operation was refused for what it asked (the message says why), such
    /// as a budget adjustment without a note. Nothing changed.
    Refused(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Fenced => f.write_str("the reservation is no longer held by this token"),
            StoreError::Corrupt(what) => write!(f, "corrupt record: {what}"),
            StoreError::Locked => f.write_str("the record is locked by a transaction that has not committed yet"),
            StoreError::Backend(error) => write!(f, "store failed: {error}"),
            StoreError::Refused(why) => write!(f, "refused: {why}"),
        }
    }
}

impl StoreError {
    /// Whether the store gave up waiting for an answer: a [`Backend`](StoreError::Backend)
    /// error that is, or was caused by, an [`std::io::Error`] of kind `TimedOut`.
    pub(crate) fn ran_out_of_time(&self) -> bool {
        let StoreError::Backend(error) = self else { return false };
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&**error);
        while let Some(error) = cause {
            if error.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::TimedOut) {
                return true;
            }
            cause = error.source();
        }
        false
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Backend(error) => Some(&**error),
            _ => None,
        }
    }
}

/// A store for sync tools.
///
/// Implementations must make [`reserve`](Store::reserve) atomic per [`RecordId`]: of any
/// number of concurrent calls for one id, across threads and (for shared stores)
/// processes, at most one gets [`Reservation::Acquired`] while a record exists.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an idem store for sync tools",
    label = "`store = ...` must be a store: an `idem::SqliteStore`, an `idem::MemoryStore`, or a type that implements `idem::store::Store`",
    note = "the store may be behind `&`, `Box` or `Arc`; `store = self.store` reads a field of the tool's receiver"
)]
pub trait Store: Send + Sync {
    /// Creates an in-progress record for `request.id` and returns its token, or returns the
    /// record that exists already. An in-progress record whose lease has ended is returned
    /// as it is (with `lease_expired: true`), never taken over silently.
    fn reserve(&self, request: Reserve<'_>) -> Result<Reservation, StoreError>;

    /// [`reserve`](Store::reserve) for a tool with a budget: when it creates the record, it
    /// charges `charge` to the budget's current window (by the store's clock) in the same
    /// atomic write, and the record remembers its charge. It makes no record and charges
    /// nothing ([`Reservation::OverBudget`], with the window) when the charge would take the
    /// window's use past its limit (plus what operators raised it by), unless
    /// `charge.past_limit`, nor when it would take the window's use past `i64::MAX`
    /// millionths, the most a window counts, even with `charge.past_limit`. Sums are exact
    /// over the whole range (amounts and limits up to 9e12 units are 9 × 10^18 millionths:
    /// add them without overflow, and not in doubles). A record that exists is returned as
    /// `reserve` returns it, and nothing is charged. Of concurrent calls, the charges that
    /// pass are exactly those that fit: the check and the charge are one step.
    ///
    /// Later operations keep the charge ([`complete`](Store::complete),
    /// [`take_over`](Store::take_over), [`abandon`](Store::abandon): an effect may have
    /// happened), except [`release`](Store::release) and
    /// [`Admin::resolve_release`], which refund it to the window it was charged to.
    ///
    /// The default keeps no budgets: it refuses ([`StoreError::Refused`]), so a tool with a
    /// budget on such a store never runs its body. A store that keeps them overrides it and
    /// passes [`check_budgets`](crate::testing::conformance::check_budgets).
    fn reserve_charged(&self, request: Reserve<'_>, charge: budget::Charge<'_>) -> Result<Reservation, StoreError> {
        let _ = (request, charge);
        Err(budget::not_kept())
    }

    /// Takes over an abandoned reservation to reconcile it: succeeds only while `expired`
    /// still holds the record and its lease has ended by the store's clock, and returns a
    /// new, larger token with a fresh `lease`. [`StoreError::Fenced`] otherwise (another
    /// caller took it over first, or the record changed); then nothing changes. Of any
    /// number of concurrent callers, at most one succeeds.
    fn take_over(&self, id: RecordId<'_>, expired: Token, lease: Duration) -> Result<Token, StoreError>;

    /// Extends the lease of the in-progress record held by `renewal.token` to
    /// `renewal.lease` from now, by the store's clock, and keeps `renewal.progress` with it.
    /// It succeeds while the token holds the record, even after its lease ended, as long as
    /// nobody took it over. [`StoreError::Fenced`] when the token no longer holds it (taken
    /// over, released, completed); then nothing changes and the holder knows its key is
    /// gone. idem calls it while a body runs, every third of the lease.
    fn renew(&self, renewal: Renew<'_>) -> Result<(), StoreError>;

    /// Settles the in-progress record held by `token`, to be kept for at least `retain`.
    /// [`StoreError::Fenced`] when `token` no longer holds it; then nothing changes.
    ///
    /// idem writes a completion that failed with [`StoreError::Backend`] up to 3 times,
    /// unless the failure says the store waited its whole deadline for an answer (its error
    /// is, or has as a [`source`](std::error::Error::source), an [`std::io::Error`] of kind
    /// [`TimedOut`](std::io::ErrorKind::TimedOut)): another attempt would make the caller
    /// wait as long again, and what was sent may still land once the store answers.
    fn complete(
        &self,
        id: RecordId<'_>,
        token: Token,
        completion: Completion<'_>,
        retain: Duration,
    ) -> Result<(), StoreError>;

    /// Deletes the in-progress record held by `token`, so that a retry may run the body.
    /// [`StoreError::Fenced`] when `token` no longer holds it; then nothing changes.
    fn release(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError>;

    /// Ends the lease of the in-progress record held by `token` now, so that it reads as
    /// abandoned: for a reconciliation that could not tell what happened.
    /// [`StoreError::Fenced`] when `token` no longer holds it; then nothing changes.
    fn abandon(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError>;

    /// Reads a record. Never creates or changes one.
    fn read(&self, id: RecordId<'_>) -> Result<Option<Record>, StoreError>;

    /// Deletes at most `limit` settled (completed or failed) records whose retention has
    /// ended by the store's clock, and returns how many it deleted. Never deletes
    /// in-progress records, abandoned or not: their outcome is not known. Budget windows
    /// that ended [`budget::WINDOWS_KEPT_MS`] ago or more go too (not counted).
    fn purge(&self, limit: usize) -> Result<usize, StoreError>;
}

/// A boxed, sendable future, as [`AsyncStore`] methods return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A store for async tools: the same operations and guarantees as [`Store`].
///
/// A store whose operations answer at once (in memory, a local file) need not implement
/// it: wrap a [`Store`] in [`FromSync`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an idem store for async tools",
    label = "`store = ...` must be a store: an `idem::SqliteStore`, an `idem::MemoryStore`, or a type that implements `idem::store::AsyncStore`",
    note = "the store may be behind `&`, `Box` or `Arc`; `store = self.store` reads a field of the tool's receiver"
)]
pub trait AsyncStore: Send + Sync {
    /// See [`Store::reserve`].
    fn reserve<'a>(&'a self, request: Reserve<'a>) -> BoxFuture<'a, Result<Reservation, StoreError>>;
    /// See [`Store::reserve_charged`]; the default keeps no budgets and refuses.
    fn reserve_charged<'a>(
        &'a self,
        request: Reserve<'a>,
        charge: budget::Charge<'a>,
    ) -> BoxFuture<'a, Result<Reservation, StoreError>> {
        let _ = (request, charge);
        Box::pin(std::future::ready(Err(budget::not_kept())))
    }
    /// See [`Store::take_over`].
    fn take_over<'a>(
        &'a self,
        id: RecordId<'a>,
        expired: Token,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Token, StoreError>>;
    /// See [`Store::renew`].
    fn renew<'a>(&'a self, renewal: Renew<'a>) -> BoxFuture<'a, Result<(), StoreError>>;
    /// See [`Store::complete`].
    fn complete<'a>(
        &'a self,
        id: RecordId<'a>,
        token: Token,
        completion: Completion<'a>,
        retain: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    /// See [`Store::release`].
    fn release<'a>(&'a self, id: RecordId<'a>, token: Token) -> BoxFuture<'a, Result<(), StoreError>>;
    /// See [`Store::abandon`].
    fn abandon<'a>(&'a self, id: RecordId<'a>, token: Token) -> BoxFuture<'a, Result<(), StoreError>>;
    /// See [`Store::read`].
    fn read<'a>(&'a self, id: RecordId<'a>) -> BoxFuture<'a, Result<Option<Record>, StoreError>>;
    /// See [`Store::purge`].
    fn purge(&self, limit: usize) -> BoxFuture<'_, Result<usize, StoreError>>;
}
