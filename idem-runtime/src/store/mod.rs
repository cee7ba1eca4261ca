//! Stores: where reservations and results live.
//!
//! A tool author picks a store and hands it to `#[idempotent(store = ...)]`, or leaves
//! `store` out for [the default store](#the-default-store); nothing else here is needed to
//! write tools. The rest of this module is for store authors, operators' code and tests:
//! the store protocol ([`Store`], the types its operations take and return, [`DynStore`]
//! and [`block_on`]), what not every store can do ([`BudgetStore`], the operator's
//! [`Admin`] operations), and the constants a tool's attribute defaults to ([`DEFAULT_LEASE`], [`DEFAULT_MAX_HOLD`], [`DEFAULT_RETAIN`]).
//!
//! # Choosing a store
//!
//! | store | use it for |
//! | --- | --- |
//! | [`SqliteStore`] (the default) | One machine: one or many threads and processes sharing a file. WAL, a busy timeout, full durability (`synchronous = FULL`) by default; `SqliteStore::builder(path).synchronous(Synchronous::Normal)` trades power-loss durability for speed ([`Synchronous`]). |
//! | [`MemoryStore`] | Tests and single-process tools whose keys need not survive a restart. |
//! | `PgStore` (feature `postgres`) | Many workers on many machines sharing one PostgreSQL database; leases judged by the server's clock. See [PostgreSQL](#postgresql). |
//! | `RedisStore` (feature `redis`) | Many workers sharing one Redis or Valkey server; as durable as the server's persistence settings, which the module [`redis`](redis/index.html) tabulates. |
//! | your own | Any type implementing [`Store`], for async and sync tools alike: see [A store of your own](#a-store-of-your-own-for-store-authors). |
//!
//! `store = expr` is evaluated on every call and may be any of these, also behind `&`,
//! `Box` or `Arc`, a [`DynStore`] (`Arc<dyn DynStore>`), or a `static` (`store = *STORE`
//! for a `LazyLock`). A store keeps one
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
//! A tool without `store = ...` uses [`default_store`]: an SQLite
//! file, created with its schema on first use.
//!
//! | question | answer |
//! | --- | --- |
//! | where | [`set_default_store_path`], else the `IDEM_DB` environment variable, else `idem/idem.db` in the user's data directory; [`default_store_path`] says where, and gives the rule in full |
//! | when the path is fixed | by the first of `default_store_path()` and the first call that opens the store; made absolute then and kept, whatever the working directory or `IDEM_DB` do afterwards |
//! | who shares it | every process of the user: each tool's records are kept apart by its namespace |
//! | who may read it | on Unix, only its user: see [`default_store`] for the modes it sets and what it warns about |
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
//! A store implements [`Store`], once: eight operations, each an `async fn`, which serve
//! async and sync tools alike. An async tool awaits them on its own task; a sync tool waits
//! for them on its own thread through [`block_on`], as reqwest's blocking client waits for
//! its async one. A store whose operations answer at once (in memory, on a local file)
//! simply never awaits: its futures are ready when first polled, and a sync tool's call
//! allocates nothing for them. A store that waits on a network must make progress while a
//! sync caller's thread is parked, which may be a thread of the caller's tokio runtime: the
//! PostgreSQL and Redis stores run such a caller's IO on a thread of their own.
//!
//! ```
//! # extern crate idem_runtime as idem;
//! use std::sync::LazyLock;
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use std::time::Duration;
//! use idem::store::{Completion, MemoryStore, Record, RecordId, Renew, Reservation, Reserve};
//! use idem::store::{Store, StoreError, Token, block_on};
//!
//! /// A store of your own: it counts reservations, and keeps its records in a `MemoryStore`.
//! #[derive(Default)]
//! struct CountingStore {
//!     records: MemoryStore,
//!     reserved: AtomicUsize,
//! }
//!
//! impl Store for CountingStore {
//!     async fn reserve(&self, request: Reserve<'_>) -> Result<Reservation, StoreError> {
//!         self.reserved.fetch_add(1, Ordering::Relaxed);
//!         self.records.reserve(request).await
//!     }
//!     async fn take_over(&self, id: RecordId<'_>, expired: Token, lease: Duration) -> Result<Token, StoreError> {
//!         self.records.take_over(id, expired, lease).await
//!     }
//!     async fn renew(&self, renewal: Renew<'_>) -> Result<(), StoreError> {
//!         self.records.renew(renewal).await
//!     }
//!     async fn complete(
//!         &self,
//!         id: RecordId<'_>,
//!         token: Token,
//!         completion: Completion<'_>,
//!         retain: Duration,
//!     ) -> Result<(), StoreError> {
//!         self.records.complete(id, token, completion, retain).await
//!     }
//!     async fn release(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
//!         self.records.release(id, token).await
//!     }
//!     async fn abandon(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
//!         self.records.abandon(id, token).await
//!     }
//!     async fn read(&self, id: RecordId<'_>) -> Result<Option<Record>, StoreError> {
//!         self.records.read(id).await
//!     }
//!     async fn purge(&self, limit: usize) -> Result<usize, StoreError> {
//!         self.records.purge(limit).await
//!     }
//! }
//!
//! // For async and sync tools alike: `#[idempotent(key = "...", store = *STORE)]`.
//! static STORE: LazyLock<CountingStore> = LazyLock::new(CountingStore::default);
//!
//! // What a sync tool's call does with it: wait for each operation on its own thread.
//! let id = RecordId { namespace: "billing.invoices", key: "invoice:acme:2026-10" };
//! let reserve = Reserve { id, request: "{}", lease: Duration::from_secs(30) };
//! assert!(matches!(block_on(STORE.reserve(reserve)), Ok(Reservation::Acquired { .. })));
//! assert_eq!(STORE.reserved.load(Ordering::Relaxed), 1);
//!
//! // The checks every store passes (feature `testing`):
//! # #[cfg(feature = "testing")]
//! idem::testing::conformance::check_store(CountingStore::default);
//! ```
//!
//! What not every store can do is a trait of its own beside [`Store`], as `object_store`
//! keeps `MultipartStore` beside `ObjectStore`:
//!
//! - [`BudgetStore`]: a store that keeps budgets (`reserve_charged`, a reservation and its
//!   charge in one atomic write). A tool with `budget = ...` on a store without it does not
//!   compile: the error, at its `store = ...`, says that the store keeps no budgets and
//!   which stores do. Every bundled store is one.
//! - [`Admin`]: the `idem` command's operations (listing and counting records, settling a
//!   stuck key by hand, reading and adjusting budget windows). They are sync, as their
//!   caller, the operator's command, is; a network store waits in them with [`block_on`].
//!   Its supertrait is [`DynStore`], which every [`Store`] is, so that `Box<dyn Admin>`
//!   holds a store chosen at run time.
//!
//! `idem::testing::conformance::check_store` (feature `testing`) runs the checks every store
//! must pass (the memory, SQLite, PostgreSQL and Redis stores all run that one suite);
//! `check_budgets`, `check_admin` and `check_approvals` check the rest. A tool's generated
//! `<fn>_record_id(...)` names its record ([`OwnedRecordId`]) for code that reads or
//! settles it through a store.
//!
//! A store whose type is chosen at run time is a [`DynStore`]: `Arc<dyn DynStore>` (or
//! `Box`, `&`) is a store too, the erased form of any [`Store`], whose operations box their
//! futures.
//!
//! # Calling store operations (for store authors)
//!
//! In async code, await them: `store.read(id).await`. In sync code, wait for them with
//! [`block_on`]: `block_on(store.read(id))`, which parks the calling thread while the
//! operation waits, and is safe for the bundled stores on any thread (see [`block_on`]).
//!
//! # What may grow (for store authors)
//!
//! The types a store builds or takes, [`Record`], [`Reservation`], [`Reserve`], [`Renew`]
//! and [`Completion`], are exhaustive: a new field or variant is something every store
//! must handle, so it should break a store's build rather than be ignored. The same holds
//! for [`ListQuery`], whose every field is a condition an [`Admin`] must apply (callers
//! write `..ListQuery::default()`). [`RecordState`] and [`StateFilter`] are
//! non-exhaustive: later versions may add states, which code that matches them must meet
//! with a `_` arm. [`ListedRecord`] and [`StateCount`] are
//! non-exhaustive reports: read their fields, build them with `new`.

mod admin;
mod blocking;
pub mod budget;
pub(crate) mod default;
mod defaults;
mod erased;
mod failure;
#[cfg(any(feature = "postgres", feature = "redis"))]
pub(crate) mod io_thread;
mod memory;
pub(crate) mod once;
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub mod postgres;
mod protocol;
mod record;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub mod redis;
#[cfg(any(feature = "postgres", feature = "redis"))]
pub(crate) mod repeats;
mod sqlite;

use std::time::Duration;

pub use crate::key::scope_prefix;
pub use admin::{Admin, ListQuery, ListedRecord, StateCount, StateFilter};
pub use blocking::block_on;
pub(crate) use blocking::wait;
pub use budget::BudgetStore;
pub use default::{default_store, default_store_path, set_default_store_path};
pub use defaults::{DEFAULT_LEASE, DEFAULT_MAX_HOLD, DEFAULT_RETAIN, DEFAULT_STORE_ENV, DEFAULT_STORE_FILE};
pub use erased::{BoxFuture, DynStore};
pub use memory::MemoryStore;
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use postgres::{PgStore, PgStoreBuilder};
pub use protocol::Store;
pub use record::{
    Completion, OwnedRecordId, Record, RecordId, RecordState, Renew, Reservation, Reserve, StoreError, Token,
};
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
