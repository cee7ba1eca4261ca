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
//!   its retention ends, so a store nobody purges does not grow; [`Store::purge`] removes
//!   what is due before that, as on every store.
//! - **Tokens only grow.** A new token is the larger of the record's last token plus one
//!   and the server's clock in microseconds. A deleted record (a release) leaves a
//!   tombstone with its last token for a day, and after that the clock alone keeps
//!   tokens growing (unless the server's clock goes back).
//! - Budget windows are hashes `<prefix>:b:...`, charged in the reservation's script and
//!   kept a week after they end.
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
//! | `appendonly yes`, `appendfsync everysec` (Redis's default for the AOF) | on a crash of the machine (power, kernel), about the last second of writes; a killed Redis process loses nothing, since its writes reached the operating system before it answered | may run an action again whose reservation was in that second |
//! | `appendonly yes`, `appendfsync no` | on a crash of the machine, what the operating system had not written to disk (up to about 30 s on Linux) | may run those actions again |
//! | RDB snapshots only (`save ...`) | on any restart, everything since the last snapshot (minutes) | may run those actions again |
//! | no persistence | everything, on any restart | runs every action again |
//! | replicas with failover (Sentinel, a managed service) | writes the new primary had not received: replication is asynchronous | may run those actions again |
//! | the same with [`wait_for_replicas`](RedisStoreBuilder::wait_for_replicas)`(n, t)` | fewer: a reservation is used only once `n` replicas acknowledged it (else `STORE_UNAVAILABLE`, the body does not run). `WAIT` does not make Redis strongly consistent: a failover may still pick a replica without the write | rare reruns |
//!
//! The repository's tests kill a server with SIGKILL under load and restart it: with
//! `appendfsync always` and `everysec`, no action ran twice; without persistence, the
//! actions completed before the restart ran again, as the table says.
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
//! | the completion fails after the body ran | the caller gets the body's result; the reservation is kept (retries see `IN_PROGRESS`, then the `reconcile` hook or `OUTCOME_UNKNOWN`) | `operation_timeout` |
//! | the server restarts | the next call connects again (scripts are loaded again as needed) | |
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
mod fields;
mod io;
mod scripts;

use std::sync::Arc;
use std::time::Duration;

use redis::Value;
use std::collections::HashMap;
use std::sync::Mutex;

use self::fields::{hash, record_key, running_index, settled_index, texts, windows_index};
use self::io::{Io, Link, block_on, run};
use self::scripts::SCRIPTS;
use super::budget::{Charge, WINDOWS_KEPT_MS};
use super::{
    AsyncStore, BoxFuture, Completion, Record, RecordId, Renew, Reservation, Reserve, Store, StoreError, Token,
    duration_ms,
};

/// The store's format, in `<prefix>:store` (the `idem` command refuses a prefix without it).
const MARKER_VERSION: &str = "1";

/// How long a released record's tombstone keeps its last token.
const TOMBSTONE: Duration = Duration::from_secs(24 * 3600);

/// A store on a Redis or Valkey server. See the [module docs](self).
pub struct RedisStore {
    link: Arc<Link>,
    io: Io,
    prefix: String,
    wait: Option<(u32, Duration)>,
    expire_after_retention: Duration,
}

/// Options for a [`RedisStore`].
#[derive(Debug, Clone)]
pub struct RedisStoreBuilder {
    url: String,
    prefix: String,
    operation_timeout: Duration,
    wait: Option<(u32, Duration)>,
    expire_after_retention: Duration,
}

impl RedisStore {
    /// A store on the server at `url` (`redis://[user:password@]host[:port][/db]`,
    /// `rediss://` needs a TLS build of the client, which this one is not) with the default
    /// options. It connects on first use.
    pub fn new(url: &str) -> Result<RedisStore, StoreError> {
        Self::builder(url).build()
    }

    /// Options: the key prefix, deadlines, replicas to wait for.
    pub fn builder(url: &str) -> RedisStoreBuilder {
        RedisStoreBuilder {
            url: url.to_owned(),
            prefix: "idem".to_owned(),
            operation_timeout: Duration::from_secs(5),
            wait: None,
            expire_after_retention: Duration::from_secs(3600),
        }
    }

    fn key(&self, id: RecordId<'_>) -> String {
        record_key(&self.prefix, id)
    }

    async fn script(
        &self,
        operation: &'static str,
        invocation: redis::ScriptInvocation<'static>,
    ) -> Result<Value, StoreError> {
        Ok(self.script_replicated(operation, invocation, false).await?.0)
    }

    /// Runs a script and then, when `replicate` and the store waits for replicas, `WAIT`s on
    /// the same connection (whose last write is the script's): the reply, and what fell
    /// short when fewer replicas acknowledged it in time.
    async fn script_replicated(
        &self,
        operation: &'static str,
        invocation: redis::ScriptInvocation<'static>,
        replicate: bool,
    ) -> Result<(Value, Option<String>), StoreError> {
        let wait = self.wait.filter(|_| replicate);
        run(&self.io, &self.link, operation, move |mut connection| async move {
            let value: Value = invocation.invoke_async(&mut connection).await?;
            let Some((replicas, timeout)) = wait else { return Ok((value, None)) };
            let timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
            let acknowledged: i64 =
                redis::cmd("WAIT").arg(replicas).arg(timeout_ms).query_async(&mut connection).await?;
            let short = (acknowledged < i64::from(replicas)).then(|| {
                format!("WAIT: {acknowledged} of {replicas} replicas acknowledged the write within {timeout_ms} ms")
            });
            Ok((value, short))
        })
        .await
    }

    /// A script that answers 1 for done and 0 for fenced.
    async fn fenced_unless_done(
        &self,
        operation: &'static str,
        invocation: redis::ScriptInvocation<'static>,
    ) -> Result<(), StoreError> {
        let reply = self.script(operation, invocation).await?;
        self.done_or_fenced(operation, reply)
    }

    fn done_or_fenced(&self, operation: &'static str, reply: Value) -> Result<(), StoreError> {
        match reply {
            Value::Int(1) => Ok(()),
            Value::Int(0) => Err(StoreError::Fenced),
            other => Err(self.link.failed(operation, format!("unexpected reply {other:?}"))),
        }
    }

    async fn reserve_async(&self, request: Reserve<'_>, charge: Option<Charge<'_>>) -> Result<Reservation, StoreError> {
        let RecordId { namespace, key } = request.id;
        let reply = match charge {
            None => {
                let mut invocation = SCRIPTS.reserve.key(self.key(request.id));
                invocation.key(running_index(&self.prefix));
                invocation.arg(request.request).arg(duration_ms(request.lease)).arg(namespace).arg(key);
                self.script_replicated("reserve", invocation, true).await?
            }
            Some(charge) => {
                let mut invocation = SCRIPTS.reserve_charged.key(self.key(request.id));
                invocation.key(running_index(&self.prefix)).key(windows_index(&self.prefix));
                invocation.arg(request.request).arg(duration_ms(request.lease)).arg(namespace).arg(key);
                invocation.arg(&self.prefix).arg(charge.budget).arg(charge.scope).arg(charge.window_ms.max(1));
                invocation.arg(charge.limit).arg(charge.amount).arg(if charge.past_limit { "1" } else { "0" });
                invocation.arg(WINDOWS_KEPT_MS);
                self.script_replicated("reserve", invocation, true).await?
            }
        };
        let (reply, short) = reply;
        let mut reply = texts(reply)?.into_iter();
        let corrupt = |what: &str| StoreError::Corrupt(format!("{namespace}/{key}: reserve answered {what}"));
        match reply.next().as_deref() {
            Some("acquired") => {
                let token = reply.next().and_then(|token| token.parse().ok()).ok_or_else(|| corrupt("no token"))?;
                if let Some(short) = short {
                    // The body has not run: letting the key go is safe, and spares a retry
                    // an abandoned key. Should the release fail too, the key is abandoned.
                    let _ = self.delete(request.id, Some(Token(token))).await;
                    return Err(self.link.failed("reserve", format!("{short}; the reservation was released")));
                }
                Ok(Reservation::Acquired { token: Token(token) })
            }
            Some("existing") => {
                let now = reply.next().and_then(|now| now.parse().ok()).ok_or_else(|| corrupt("no time"))?;
                let found = fields::record(&hash(reply), now, &format!("{namespace}/{key}"))?;
                found.map(Reservation::Existing).ok_or_else(|| corrupt("a record without a state"))
            }
            Some("over") => {
                let (Some(charge), Some(_now), Some(start)) = (charge, reply.next(), reply.next()) else {
                    return Err(corrupt("over budget without its window"));
                };
                let start = start.parse().map_err(|_| corrupt("a window start that is not a number"))?;
                let (budget, scope) = (charge.budget, charge.scope);
                let mut window = fields::window(&hash(reply), (budget, scope), start, charge.window_ms, charge.limit)?;
                window.limit = charge.limit;
                Ok(Reservation::OverBudget(window))
            }
            other => Err(corrupt(&format!("{other:?}"))),
        }
    }

    async fn take_over_async(&self, id: RecordId<'_>, expired: Token, lease: Duration) -> Result<Token, StoreError> {
        let mut invocation = SCRIPTS.take_over.key(self.key(id));
        invocation.arg(expired.0).arg(duration_ms(lease));
        match self.script("take over", invocation).await? {
            Value::Nil => Err(StoreError::Fenced),
            reply => {
                let token = fields::text(reply)?;
                token.parse().map(Token).map_err(|_| StoreError::Corrupt(format!("take over answered {token:?}")))
            }
        }
    }

    async fn renew_async(&self, renewal: Renew<'_>) -> Result<(), StoreError> {
        let mut invocation = SCRIPTS.renew.key(self.key(renewal.id));
        invocation.arg(renewal.token.0).arg(duration_ms(renewal.lease));
        invocation.arg(if renewal.progress.is_some() { "1" } else { "0" }).arg(renewal.progress.unwrap_or(""));
        self.fenced_unless_done("renew", invocation).await
    }

    /// Settles the record: the holder's completion, or an operator's (`token` `None`).
    async fn settle(
        &self,
        id: RecordId<'_>,
        token: Option<Token>,
        completion: Completion<'_>,
        retain: Duration,
    ) -> Result<(), StoreError> {
        let (state, result) = match completion {
            Completion::Success(result) => ("completed", result),
            Completion::KeptError(error) => ("failed", error),
        };
        let mut invocation = SCRIPTS.settle.key(self.key(id));
        invocation.key(running_index(&self.prefix)).key(settled_index(&self.prefix));
        invocation.arg(token.map_or(String::new(), |token| token.0.to_string())).arg(state).arg(result);
        invocation.arg(duration_ms(retain)).arg(duration_ms(self.expire_after_retention));
        let operation = if token.is_some() { "complete" } else { "resolve" };
        let (reply, short) = self.script_replicated(operation, invocation, token.is_some()).await?;
        self.done_or_fenced(operation, reply)?;
        match short {
            Some(short) => {
                Err(self.link.failed(operation, format!("{short}; the completion may be lost on a failover")))
            }
            None => Ok(()),
        }
    }

    /// Deletes the in-progress record, refunding its charge: the holder's release, or an
    /// operator's (`token` `None`).
    async fn delete(&self, id: RecordId<'_>, token: Option<Token>) -> Result<(), StoreError> {
        let mut invocation = SCRIPTS.release.key(self.key(id));
        invocation.key(running_index(&self.prefix));
        invocation.arg(token.map_or(String::new(), |token| token.0.to_string())).arg(&self.prefix);
        invocation.arg(duration_ms(TOMBSTONE));
        self.fenced_unless_done("release", invocation).await
    }

    async fn abandon_async(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        let mut invocation = SCRIPTS.abandon.key(self.key(id));
        invocation.arg(token.0);
        self.fenced_unless_done("abandon", invocation).await
    }

    async fn read_async(&self, id: RecordId<'_>) -> Result<Option<Record>, StoreError> {
        let (now, mut found) = self.read_keys("read", vec![self.key(id)]).await?;
        fields::record(&found.pop().unwrap_or_default(), now, &format!("{}/{}", id.namespace, id.key))
    }

    /// The hashes of `keys` (empty for a missing key), and the server's time.
    async fn read_keys(
        &self,
        operation: &'static str,
        keys: Vec<String>,
    ) -> Result<(i64, Vec<std::collections::HashMap<String, String>>), StoreError> {
        let mut invocation = SCRIPTS.read.prepare_invoke();
        for key in keys {
            invocation.key(key);
        }
        let Value::Array(reply) = self.script(operation, invocation).await? else {
            return Err(StoreError::Corrupt(format!("{operation}: unexpected reply")));
        };
        let mut reply = reply.into_iter();
        let now = reply.next().map(fields::text).transpose()?.and_then(|now| now.parse().ok());
        let now = now.ok_or_else(|| StoreError::Corrupt(format!("{operation}: no time")))?;
        let hashes = reply.map(|found| texts(found).map(hash)).collect::<Result<_, _>>()?;
        Ok((now, hashes))
    }

    /// Deletes what is due, by the batch, oldest retention first, from the settled index.
    async fn purge_async(&self, limit: usize) -> Result<usize, StoreError> {
        const BATCH: usize = 1000;
        let mut purged = 0;
        while purged < limit {
            let mut invocation = SCRIPTS.purge.key(settled_index(&self.prefix));
            invocation.arg((limit - purged).min(BATCH));
            let reply = texts(self.script("purge", invocation).await?)?;
            let counts: Vec<usize> = reply.iter().filter_map(|n| n.parse().ok()).collect();
            let [deleted, due] = counts[..] else {
                return Err(self.link.failed("purge", format!("unexpected reply {reply:?}")));
            };
            purged += deleted;
            if due < (limit - purged + deleted).min(BATCH) {
                break;
            }
        }
        let mut prune = SCRIPTS.prune_windows.key(windows_index(&self.prefix));
        prune.arg(0);
        self.script("purge", prune).await?;
        Ok(purged)
    }

    /// Up to `count` names of an index from rank `offset`, lowest score first.
    async fn index_range(&self, index: &str, offset: usize, count: usize) -> Result<Vec<String>, StoreError> {
        let mut command = redis::cmd("ZRANGE");
        command.arg(index).arg(offset).arg(offset + count - 1);
        run(
            &self.io,
            &self.link,
            "list",
            move |mut connection| async move { command.query_async(&mut connection).await },
        )
        .await
    }
}

impl RedisStoreBuilder {
    /// What every key of the store starts with (default `idem`): stores with different
    /// prefixes on one server are independent.
    pub fn prefix(mut self, prefix: &str) -> Self {
        prefix.clone_into(&mut self.prefix);
        self
    }

    /// The longest any operation waits for the server, connecting included (default 5 s);
    /// then it answers `STORE_UNAVAILABLE` and the connection is closed.
    pub fn operation_timeout(mut self, timeout: Duration) -> Self {
        self.operation_timeout = timeout;
        self
    }

    /// After each reservation and completion, `WAIT` for `replicas` replicas to have it,
    /// at most `timeout`. A reservation fewer replicas acknowledged answers
    /// `STORE_UNAVAILABLE` and its body does not run (the key stays reserved, and is then
    /// handled like an abandoned call); a completion fewer replicas acknowledged is a
    /// failed completion (the caller still gets the body's result, and an error event says
    /// so). See the module docs for what this does not promise.
    pub fn wait_for_replicas(mut self, replicas: u32, timeout: Duration) -> Self {
        self.wait = Some((replicas, timeout));
        self
    }

    /// How long after its retention ends a settled record's key expires (default 1 hour).
    /// [`Store::purge`] removes due records before; this only bounds what nobody purged.
    pub fn expire_after_retention(mut self, after: Duration) -> Self {
        self.expire_after_retention = after;
        self
    }

    /// The store. It connects on first use.
    pub fn build(self) -> Result<RedisStore, StoreError> {
        self.make(true)
    }

    /// The store, once the server answers and holds a store under this prefix (written by
    /// a tool's first connection); never writes anything: for the `idem` command.
    pub fn open_existing(self) -> Result<RedisStore, StoreError> {
        let store = self.make(false)?;
        let marker = format!("{}:store", store.prefix);
        let found: Option<String> = block_on(run(&store.io, &store.link, "open", move |mut connection| async move {
            redis::cmd("GET").arg(marker).query_async(&mut connection).await
        }))?;
        match found.as_deref() {
            Some(MARKER_VERSION) => Ok(store),
            Some(other) => {
                Err(store.link.failed("open", format!("a store of another idem version (format {other:?})")))
            }
            None => Err(store.link.failed(
                "open",
                format!(
                    "no idem store under the prefix {:?} (no key {:?}): check the URL's database number and --prefix",
                    store.prefix,
                    format!("{}:store", store.prefix)
                ),
            )),
        }
    }

    fn make(self, mark: bool) -> Result<RedisStore, StoreError> {
        let described = format!("Redis {} (prefix {})", without_password(&self.url), self.prefix);
        let bad_url = |e: redis::RedisError| StoreError::Backend(format!("{described}: the URL: {e}").into());
        // No Nagle: a multiplexed connection writes calls as they come, and a small write
        // held for a delayed ACK costs a call 40 ms.
        let info = redis::IntoConnectionInfo::into_connection_info(self.url.as_str()).map_err(bad_url)?;
        let info = info.set_tcp_settings(redis::io::tcp::TcpSettings::default().set_nodelay(true));
        let client = redis::Client::open(info).map_err(bad_url)?;
        let link = Link {
            client,
            connections: Mutex::new(HashMap::new()),
            timeout: self.operation_timeout,
            described,
            marker: mark.then(|| format!("{}:store", self.prefix)),
        };
        Ok(RedisStore {
            link: Arc::new(link),
            io: Io::start()?,
            prefix: self.prefix,
            wait: self.wait,
            expire_after_retention: self.expire_after_retention,
        })
    }
}

/// `url` without its scheme and credentials: `127.0.0.1:6379/0`.
fn without_password(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    rest.rsplit_once('@').map_or(rest, |(_, host)| host)
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore").field("store", &self.link.described).finish_non_exhaustive()
    }
}

impl Store for RedisStore {
    fn reserve(&self, request: Reserve<'_>) -> Result<Reservation, StoreError> {
        block_on(self.reserve_async(request, None))
    }
    fn reserve_charged(&self, request: Reserve<'_>, charge: Charge<'_>) -> Result<Reservation, StoreError> {
        block_on(self.reserve_async(request, Some(charge)))
    }
    fn take_over(&self, id: RecordId<'_>, expired: Token, lease: Duration) -> Result<Token, StoreError> {
        block_on(self.take_over_async(id, expired, lease))
    }
    fn renew(&self, renewal: Renew<'_>) -> Result<(), StoreError> {
        block_on(self.renew_async(renewal))
    }
    fn complete(
        &self,
        id: RecordId<'_>,
        token: Token,
        completion: Completion<'_>,
        retain: Duration,
    ) -> Result<(), StoreError> {
        block_on(self.settle(id, Some(token), completion, retain))
    }
    fn release(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        block_on(self.delete(id, Some(token)))
    }
    fn abandon(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        block_on(self.abandon_async(id, token))
    }
    fn read(&self, id: RecordId<'_>) -> Result<Option<Record>, StoreError> {
        block_on(self.read_async(id))
    }
    fn purge(&self, limit: usize) -> Result<usize, StoreError> {
        block_on(self.purge_async(limit))
    }
}

impl AsyncStore for RedisStore {
    fn reserve<'a>(&'a self, request: Reserve<'a>) -> BoxFuture<'a, Result<Reservation, StoreError>> {
        Box::pin(self.reserve_async(request, None))
    }
    fn reserve_charged<'a>(
        &'a self,
        request: Reserve<'a>,
        charge: Charge<'a>,
    ) -> BoxFuture<'a, Result<Reservation, StoreError>> {
        Box::pin(self.reserve_async(request, Some(charge)))
    }
    fn take_over<'a>(
        &'a self,
        id: RecordId<'a>,
        expired: Token,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Token, StoreError>> {
        Box::pin(self.take_over_async(id, expired, lease))
    }
    fn renew<'a>(&'a self, renewal: Renew<'a>) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.renew_async(renewal))
    }
    fn complete<'a>(
        &'a self,
        id: RecordId<'a>,
        token: Token,
        completion: Completion<'a>,
        retain: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.settle(id, Some(token), completion, retain))
    }
    fn release<'a>(&'a self, id: RecordId<'a>, token: Token) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.delete(id, Some(token)))
    }
    fn abandon<'a>(&'a self, id: RecordId<'a>, token: Token) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.abandon_async(id, token))
    }
    fn read<'a>(&'a self, id: RecordId<'a>) -> BoxFuture<'a, Result<Option<Record>, StoreError>> {
        Box::pin(self.read_async(id))
    }
    fn purge(&self, limit: usize) -> BoxFuture<'_, Result<usize, StoreError>> {
        Box::pin(self.purge_async(limit))
    }
}

#[cfg(test)]
mod tests;
