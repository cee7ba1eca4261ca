//! The Redis store: many workers sharing one Redis (or Valkey) server.
//!
//! With `idem-tools = { version = "0.1", features = ["redis"] }`:
//!
//! ```no_run
//! # extern crate idem_runtime as idem;
//! use std::sync::LazyLock;
//!
//! static REDIS: LazyLock<idem::store::redis::RedisStore> =
//!     LazyLock::new(|| idem::store::redis::RedisStore::new("redis://127.0.0.1:6379/0").unwrap());
//! // or RedisStore::builder(url).prefix("billing").wait_for_replicas(1, Duration::from_millis(50)).build()
//!
//! // #[idempotent(key = "invoice:<customer>:<period>", compare = [amount], store = *REDIS)]
//! // async fn send_invoice(customer: String, period: String, amount: f64) -> Result<Invoice, ToolError> { ... }
//! ```
//!
//! The client is [redis-rs](https://docs.rs/redis) (the `redis` crate, the Rust client the
//! Redis project lists first), with only its Lua scripts and tokio support enabled. One
//! multiplexed connection per store carries every call: async tools await it, sync tools
//! block their thread for the round trip.
//!
//! # What it keeps, and how
//!
//! - **One hash per record** (`<prefix>:r:<namespace length>:<namespace>:<key>`): state,
//!   fencing token, lease end, request, result, progress, retention end, and the budget
//!   charge. A record is one key, its token included, so its keys are in one hash slot by
//!   construction. The store also keeps `<prefix>:store` (what the `idem` command looks
//!   for) and, for the operator's listings and purges, `<prefix>:running` and
//!   `<prefix>:settled` (sorted sets of record names, by reservation time and by end of
//!   retention) and `<prefix>:budgets` (the budget windows' names), written by the same
//!   scripts: listing never scans the server's other keys, and the settling script takes
//!   off the index what Redis has expired, so nothing grows without a purge.
//! - **One Lua script per transition** (reserve, reserve with a charge, take-over, renew,
//!   complete, release, abandon, and the operator's settle and reopen): each reads the
//!   server's clock (`TIME`) and changes the record only if it is exactly what the
//!   transition needs (take-over: in progress, held by the token read, lease ended). No
//!   record is read in one command and written in the next.
//! - **Leases are fields, never key expiry.** An in-progress record does not expire: an
//!   abandoned call stays until it is taken over (the `reconcile` hook, then
//!   `OUTCOME_UNKNOWN`), never freed for a blind re-run. A settled record's key expires
//!   [`expire_after_retention`](RedisStoreBuilder::expire_after_retention) (1 hour) after
//!   its retention ends, so a store nobody purges does not grow; [`Store::purge`](crate::store::Store::purge) removes
//!   what is due before that, as on every store.
//! - **Tokens only grow.** A new token is the larger of the record's last token plus one
//!   and the server's clock in microseconds. A deleted record (a release) leaves a
//!   tombstone with its last token for a day, and after that the clock alone keeps
//!   tokens growing (unless the server's clock goes back).
//! - **Budget windows** are hashes named `<prefix>:b:<budget length>:<budget>:<scope
//!   length>:<scope>:<start ms>` (`idem:b:7:refunds:0::1767225600000` for an unscoped
//!   budget `refunds`'s window from 2026-01-01), text an operator can read with `redis-cli
//!   --scan` and type back; the lengths keep names unambiguous whatever a name holds.
//!   They are charged in the reservation's script and kept a week after they end. Sums
//!   are exact over the whole documented range: the scripts add amounts with Redis's
//!   64-bit integers (`HINCRBY`) and compare them in parts below 2^53, never as Lua's
//!   doubles. Earlier versions of this store named windows with NUL bytes
//!   (`<prefix>:b:<budget>\0<scope>\0<start>`); such a window keeps its name until it
//!   expires: the window current at an upgrade is charged, refunded, listed and adjusted
//!   under it, never counted again from zero beside it, and the windows after it get the
//!   new names. (During a rolling deploy, a window that a newer worker starts is one the
//!   older workers do not see.)
//!
//! # What each persistence setting can lose
//!
//! A reservation or completion the server acknowledged but lost (a crash before it
//! reached the disk, a failover to a replica that had not received it) is a record that
//! never was: the next call runs the action again. So the store is as durable as the
//! server's configuration:
//!
//! | Redis configuration | what a crash or failover can lose | a retry after it |
//! | --- | --- | --- |
//! | `appendonly yes`, `appendfsync always` | nothing acknowledged: each write is on disk before the answer | finds the record |
//! | `appendonly yes`, `appendfsync everysec` (Redis's default for the AOF) | on a crash of the machine (power, kernel), about the last second of writes. A killed or crashed Redis process loses what it acknowledged while its once-a-second background fsync was still running: Redis then holds writes back from the operating system (up to 2 s) but answers them. On a disk that keeps up that is nothing; on a busy one, up to the last 2 s | may run an action again whose reservation was in those seconds |
//! | `appendonly yes`, `appendfsync no` | on a crash of the machine, what the operating system had not written to disk (up to about 30 s on Linux) | may run those actions again |
//! | RDB snapshots only (`save ...`) | on any restart, everything since the last snapshot (minutes) | may run those actions again |
//! | no persistence | everything, on any restart | runs every action again |
//! | replicas with failover (Sentinel, a managed service) | writes the new primary had not received: replication is asynchronous | may run those actions again |
//! | the same with [`wait_for_replicas`](RedisStoreBuilder::wait_for_replicas)`(n, t)` | fewer: a reservation is used only once `n` replicas acknowledged it (else `STORE_UNAVAILABLE`, the body does not run). `WAIT` does not make Redis strongly consistent: a failover may still pick a replica without the write | rare reruns |
//!
//! The repository's tests kill a server with SIGKILL under load and restart it: with
//! `appendfsync always`, no action ran twice; with `everysec`, none did on a disk that
//! keeps up (a tmpfs), while on a busy disk about one kill in ten lost the writes Redis
//! had acknowledged during a slow fsync; without persistence, the actions completed
//! before the restart ran again, as the table says.
//!
//! For an effect that must never happen twice on a server crash, run Redis with
//! `appendfsync always`, or use SQLite or PostgreSQL. An unknown outcome is never made a
//! retry by the store itself: only a lost write is.
//!
//! # When the server fails
//!
//! | failure | answer | within |
//! | --- | --- | --- |
//! | server down, refusing connections | `STORE_UNAVAILABLE`; the body does not run | at once, or [`operation_timeout`](RedisStoreBuilder::operation_timeout) (5 s) |
//! | server or network stops answering (a frozen server, a partition) | `STORE_UNAVAILABLE`; the connection is closed. A reservation sent just before may still reach the server once it answers again: that key then reads `IN_PROGRESS` until its lease ends, and is handled like any abandoned call; it never runs twice | `operation_timeout` |
//! | the completion fails after the body ran | the caller gets the body's result; the reservation is kept (retries see `IN_PROGRESS`, then the `reconcile` hook or `OUTCOME_UNKNOWN`), and an error event says so. A completion the server did not answer is not sent again: it may still land once the server answers, and retries then replay it. One that failed at once (a connection refused) is tried 3 times | `operation_timeout` |
//! | the server restarts (SIGTERM, SIGKILL, a crash) | the next call connects again (scripts are loaded again as needed): a connection the server closed is replaced before a call is handed to it, so nothing was sent on it. A call already sent when the server went away answers `STORE_UNAVAILABLE` (the server may have run it), as does a call while the restarted server still loads what it persisted (Redis answers `LOADING`; the body does not run) | |
//!
//! Messages name the store (`Redis 127.0.0.1:6379/0 (prefix idem)`, never a password),
//! the operation and the reason.
//!
//! # Not offered
//!
//! - **The transactional mode** (`SqliteStore::transaction`, `PgStore::begin`): Redis
//!   cannot hold a key and an arbitrary effect in one transaction that rolls back on an
//!   error (`MULTI` does not roll back, and a script cannot wait on the body).
//! - **Redis Cluster**: this store speaks to one server (with its replicas). Each record
//!   is one key, but a reservation also writes the store's index, and a charged one its
//!   budget window, which live in other slots.

mod admin;
mod budgets;
mod charges;
mod fields;
mod io;
mod open;
mod ops;
mod scripts;

use std::sync::Arc;
use std::time::Duration;

use self::io::{Io, Link};
pub use self::open::RedisStoreBuilder;

/// The store's format, in `<prefix>:store` (the `idem` command refuses a prefix without it).
const MARKER_VERSION: &str = "1";

/// How long a released record's tombstone keeps its last token.
const TOMBSTONE: Duration = Duration::from_secs(24 * 3600);

/// A store on a Redis or Valkey server. See the [module docs](self).
pub struct RedisStore {
    link: Arc<Link>,
    io: Io,
    keys: fields::Keys,
    wait: Option<(u32, Duration)>,
    expire_after_retention: Duration,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore").field("store", &self.link.described).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod cluster_tests;
#[cfg(test)]
mod tests;
