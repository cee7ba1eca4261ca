//! The Redis store: many workers sharing one Redis (or Valkey) server, or a Redis Cluster
//! (or Valkey cluster).
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
//! // on a cluster: RedisStore::new("redis+cluster://10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379")
//!
//! // #[idempotent(key = "invoice:<customer>:<period>", compare = [amount], store = *REDIS)]
//! // async fn send_invoice(customer: String, period: String, amount: f64) -> Result<Invoice, ToolError> { ... }
//! ```
//!
//! The client is [redis-rs](https://docs.rs/redis) (the `redis` crate, the Rust client the
//! Redis project lists first), with only its Lua scripts and tokio support enabled. One
//! multiplexed connection per store (per node, on a cluster) carries every call: async
//! tools await it, sync tools block their thread for the round trip.
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
//! - **Repeats read without a script.** After a stretch of reservations that found their
//!   record (a client replaying a batch, redeliveries), a reservation first reads the
//!   record with `TIME` and `HMGET` of its fields, pipelined in one round trip, and answers
//!   an existing record from that read; only a key with no record goes on to the
//!   reservation's script. A script costs the server about 20 µs where the read costs about
//!   2, so a replay is 1.3-1.4x a hand-written `HMGET` of two fields instead of 2x
//!   (BENCHMARKS.md). A stretch of first calls turns the read off again: a first call stays
//!   one round trip.
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
//! # On a Redis Cluster
//!
//! `redis+cluster://[user:password@]host:port[,host:port...]` opens the store on a Redis
//! Cluster or Valkey cluster (the endpoints of AWS ElastiCache in cluster mode, Google
//! Memorystore for Valkey, Azure's managed Redis with the OSS cluster policy): one node is
//! enough, the store learns the others from their `MOVED` answers; name several so that
//! one down at the start does not matter. A cluster has no database number. Everything
//! above holds, with this key layout and these differences:
//!
//! - **64 shards, each one hash slot.** Every key starts with `<prefix>:{<n>}:`, `n` from 0
//!   to 63, so all keys of a shard share a hash tag and one slot: a record
//!   (`<prefix>:{<n>}:r:<namespace length>:<namespace>:<key>`), its tombstone (the same
//!   key), and the shard's indexes (`:running`, `:settled`). A record's shard is a fixed
//!   hash (FNV-1a) of its namespace and key, modulo 64, so every script touches one slot.
//!   64 spreads a store over up to 64 primaries (about 21 shards each on three), keeps a
//!   slot to 1/64 of the records, and the operator's listing reads 64 small indexes per
//!   state: nothing scans a node. The marker is `<prefix>:{0}:store`. A prefix may not hold
//!   `{` or `}` (it would decide the slot instead).
//! - **Budget windows** are in the shard of their budget and scope
//!   (`<prefix>:{<n>}:b:<budget length>:<budget>:<scope length>:<scope>:<start>`, indexed
//!   in `<prefix>:{<n>}:budgets`): every window of one budget and scope in one slot, other
//!   budgets and scopes spread.
//! - **A charged reservation takes four round trips** (one on one server), because a
//!   window and the record it charges are in different slots and no script spans two:
//!   read the record (one that exists answers at once: a replay charges nothing and costs
//!   one round trip), charge the window as a *pending charge* with an id, reserve the record
//!   carrying the charge (the record's shard notes it as held), then confirm it (or refund
//!   it, if the key was taken meanwhile). Charging first means it never overspends: a
//!   window counts every charge before any reservation can use it. A release refunds in
//!   two steps (the record queues its charge in its shard's `:refunds`, then the window is
//!   refunded); a refund happens once per charge id, whoever asks.
//! - **The price: an over-count until the next purge.** A caller that fails between the
//!   steps (a crash, a timeout, a network cut) leaves a charge pending, or a refund queued:
//!   the window counts it, so it may refuse calls it had room for, never let one too many
//!   through. [`Store::purge`](crate::store::Store::purge) (the `idem purge` command)
//!   repairs it: it refunds queued refunds, confirms a pending charge a reservation holds,
//!   and voids and refunds one no reservation holds once it is older than twice the
//!   [`operation_timeout`](RedisStoreBuilder::operation_timeout) (a reservation carrying
//!   a voided charge that still arrives is refused: `STORE_UNAVAILABLE`, the body does not
//!   run). Without purges, an over-count lasts until its window ends. Each charge keeps an
//!   entry in its record's shard (`<prefix>:{<n>}:charges`) as long as its window is kept
//!   (a week after it ends), and each refund an `r:<id>` field in its window.
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
//! | a Redis Cluster, a primary killed or failed over (its replica elected) | what the replica had not received: replication is asynchronous, as above; each primary's persistence setting applies to a crash of its own | may run those actions again |
//! | a Redis Cluster, a primary cut off from the majority | what it acknowledged until it noticed (up to `cluster-node-timeout`) after the others elected its replica: it rejoins as a replica and drops them | may run those actions again |
//! | a Redis Cluster with `wait_for_replicas(1, t)` | a reservation or completion the replica had not received is not used (`STORE_UNAVAILABLE`): a kill or a manual `CLUSTER FAILOVER` then loses nothing used; a partition can still, as `WAIT` is not consensus. A promoted primary without a replica of its own answers its shards' reservations `STORE_UNAVAILABLE` until one follows it (the old primary back, or a replica added) | rare reruns |
//!
//! The repository's tests kill a server with SIGKILL under load and restart it: with
//! `appendfsync always`, no action ran twice; with `everysec`, none did on a disk that
//! keeps up (a tmpfs), while on a busy disk about one kill in ten lost the writes Redis
//! had acknowledged during a slow fsync; without persistence, the actions completed
//! before the restart ran again, as the table says.
//!
//! The repository's cluster tests kill a primary (SIGKILL) under load with
//! `wait_for_replicas(1, ..)`, and fail one over by hand (`CLUSTER FAILOVER`): calls
//! answered `STORE_UNAVAILABLE` while the shard had no primary, and no action ran twice.
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
//! On a cluster, in addition:
//!
//! | event | answer |
//! | --- | --- |
//! | a shard moved (a failover, a resharding done): `MOVED` | the store sends the operation to the node named, once it learned it (up to 5 redirects): the node that answered `MOVED` ran nothing |
//! | a node refuses connections | the next node the store knows is asked (nothing was sent), which answers `MOVED` to the shard's primary, or `STORE_UNAVAILABLE` while there is none |
//! | a primary died and its replica is not yet elected (about `cluster-node-timeout` and an election) | `STORE_UNAVAILABLE` (`CLUSTERDOWN`, or no node serving the shard); the body does not run |
//! | a slot migrating (a resharding in progress): `ASK`, `TRYAGAIN` | `STORE_UNAVAILABLE` for the keys already moved, until the slot has moved: the store does not follow `ASK` |
//! | an IO error, no answer in time | `STORE_UNAVAILABLE`, as on one server: never sent again, as the node may have run it; the shard's route is forgotten, so the next call finds its current primary |
//!
//! Messages name the store (`Redis 127.0.0.1:6379/0 (prefix idem)`, never a password),
//! the operation and the reason. A `redis://` store pointed at a cluster node says to use a
//! `redis+cluster://` URL.
//!
//! # Not offered
//!
//! - **The transactional mode** (`SqliteStore::transaction`, `PgStore::begin`): Redis
//!   cannot hold a key and an arbitrary effect in one transaction that rolls back on an
//!   error (`MULTI` does not roll back, and a script cannot wait on the body).
//! - **TLS** (`rediss://`, managed services' in-transit encryption): this build of the
//!   client speaks plain TCP.

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

use self::io::Link;
pub use self::open::RedisStoreBuilder;
use crate::store::io_thread::IoThread;

/// The store's format, in `<prefix>:store` (the `idem` command refuses a prefix without it).
const MARKER_VERSION: &str = "1";

/// How long a released record's tombstone keeps its last token.
const TOMBSTONE: Duration = Duration::from_secs(24 * 3600);

/// A store on a Redis or Valkey server. See the [module docs](self).
pub struct RedisStore {
    link: Arc<Link>,
    io: IoThread,
    keys: fields::Keys,
    wait: Option<(u32, Duration)>,
    expire_after_retention: Duration,
    /// On a cluster, how old a pending charge must be before a purge may void it: twice
    /// the operation timeout, by when its reservation has answered or been given up on.
    void_after: Duration,
    /// Whether reservations read first: see `store::repeats`.
    repeats: crate::store::repeats::Repeats,
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
