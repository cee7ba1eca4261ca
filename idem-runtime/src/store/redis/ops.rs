//! The store protocol on Redis: each operation is one script (see `scripts.rs`) run on a
//! connection of the caller's driver (see `io.rs`), its reply read back into idem's types.

use std::time::Duration;

use redis::Value;

use std::sync::Arc;

use super::fields::{self, hash, texts};
use super::io::run;
use super::scripts::SCRIPTS;
use super::{RedisStore, TOMBSTONE};
use crate::store::budget::{Charge, WINDOWS_KEPT_MS};
use crate::store::{Completion, Record, RecordId, Renew, Reservation, Reserve, Store, StoreError, Token, duration_ms};

impl RedisStore {
    pub(super) async fn script(
        &self,
        operation: &'static str,
        shard: usize,
        invocation: redis::ScriptInvocation<'static>,
    ) -> Result<Value, StoreError> {
        Ok(self.script_replicated(operation, shard, invocation, false).await?.0)
    }

    /// Runs a script on the node serving `shard` and then, when `replicate` and the store
    /// waits for replicas, `WAIT`s on the same connection (whose last write is the
    /// script's): the reply, and what fell short when fewer replicas acknowledged it in time.
    pub(super) async fn script_replicated(
        &self,
        operation: &'static str,
        shard: usize,
        invocation: redis::ScriptInvocation<'static>,
        replicate: bool,
    ) -> Result<(Value, Option<String>), StoreError> {
        let wait = self.wait.filter(|_| replicate);
        let invocation = Arc::new(invocation);
        run(&self.io, &self.link, operation, shard, move |mut connection| {
            let invocation = Arc::clone(&invocation);
            async move {
                let value: Value = invocation.invoke_async(&mut connection).await?;
                let Some((replicas, timeout)) = wait else { return Ok((value, None)) };
                let timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
                // The script ran: a `WAIT` that fails (a failover unblocks it and closes the
                // connection) falls short like one that timed out, so the caller knows what ran.
                let acknowledged: Result<i64, _> =
                    redis::cmd("WAIT").arg(replicas).arg(timeout_ms).query_async(&mut connection).await;
                let short = match acknowledged {
                    Ok(acknowledged) if acknowledged >= i64::from(replicas) => None,
                    Ok(acknowledged) => Some(format!(
                        "WAIT: {acknowledged} of {replicas} replicas acknowledged the write within {timeout_ms} ms"
                    )),
                    Err(error) => Some(format!("WAIT for {replicas} replicas failed: {error}")),
                };
                Ok((value, short))
            }
        })
        .await
    }

    /// Runs a command on the node serving `shard`.
    pub(super) async fn command<T>(
        &self,
        operation: &'static str,
        shard: usize,
        command: redis::Cmd,
    ) -> Result<T, StoreError>
    where
        T: redis::FromRedisValue + Send + 'static,
    {
        run(&self.io, &self.link, operation, shard, move |mut connection| {
            let command = command.clone();
            async move { command.query_async(&mut connection).await }
        })
        .await
    }

    /// A script that answers 1 for done and 0 for fenced.
    pub(super) async fn fenced_unless_done(
        &self,
        operation: &'static str,
        shard: usize,
        invocation: redis::ScriptInvocation<'static>,
    ) -> Result<(), StoreError> {
        let reply = self.script(operation, shard, invocation).await?;
        self.done_or_fenced(operation, reply)
    }

    fn done_or_fenced(&self, operation: &'static str, reply: Value) -> Result<(), StoreError> {
        match reply {
            Value::Int(1) => Ok(()),
            Value::Int(0) => Err(StoreError::Fenced),
            other => Err(self.link.failed(operation, format!("unexpected reply {other:?}"))),
        }
    }

    /// A reservation (charging `charge` if any): after a stretch of repeats, it reads the
    /// record first and answers an existing one from that read (see `store::repeats`).
    pub(super) async fn reserve_async(
        &self,
        request: Reserve<'_>,
        charge: Option<Charge<'_>>,
    ) -> Result<Reservation, StoreError> {
        // On a cluster a charged reservation starts with this same read anyway (`charges.rs`).
        let reads_anyway = charge.is_some() && self.keys.cluster;
        if self.repeats.read_first()
            && !reads_anyway
            && let (_, Some(existing)) = self.read_record("reserve", request.id).await?
        {
            self.repeats.saw(true);
            return Ok(Reservation::Existing(existing));
        }
        let reserved = self.reserve_scripted(request, charge).await;
        if let Ok(reservation) = &reserved {
            self.repeats.saw(matches!(reservation, Reservation::Existing(_)));
        }
        reserved
    }

    /// The server's time (ms) and the record of `id`, read without a script: `TIME`, then
    /// `HMGET` of the fields a record is read from, pipelined (one round trip, two commands
    /// of a microsecond each, where a script costs about twenty; `HGETALL` would also send
    /// every field's name). The clock is read first, so a lease the read shows ended had
    /// ended when it was read, as a script would say; one that ends between the two
    /// commands reads as running, which a caller learns on its next call.
    pub(super) async fn read_record(
        &self,
        operation: &'static str,
        id: RecordId<'_>,
    ) -> Result<(i64, Option<Record>), StoreError> {
        let (shard, record) = self.keys.record(id);
        let mut pipeline = redis::pipe();
        pipeline.cmd("TIME").cmd("HMGET").arg(record).arg(&fields::RECORD_FIELDS[..]);
        type Read = ((i64, i64), Vec<Option<String>>);
        let ((seconds, micros), found): Read = run(&self.io, &self.link, operation, shard, move |mut connection| {
            let pipeline = pipeline.clone();
            async move { pipeline.query_async(&mut connection).await }
        })
        .await?;
        let now = seconds * 1000 + micros / 1000;
        Ok((now, fields::record(&fields::Listed(found), now, &format!("{}/{}", id.namespace, id.key))?))
    }

    async fn reserve_scripted(
        &self,
        request: Reserve<'_>,
        charge: Option<Charge<'_>>,
    ) -> Result<Reservation, StoreError> {
        let RecordId { namespace, key } = request.id;
        let (shard, record) = self.keys.record(request.id);
        let mut invocation = match charge {
            None => SCRIPTS.reserve.key(record),
            Some(charge) if self.keys.cluster => return self.reserve_charged_across_slots(request, charge).await,
            Some(_) => SCRIPTS.reserve_charged.key(record),
        };
        invocation.key(self.keys.running(shard));
        invocation.arg(request.request).arg(duration_ms(request.lease)).arg(namespace).arg(key);
        if let Some(charge) = charge {
            invocation.key(self.keys.windows(0));
            invocation.arg(self.keys.window_prefix(0, charge.budget, Some(charge.scope)));
            invocation.arg(charge.budget).arg(charge.scope).arg(charge.window_ms.max(1));
            invocation.arg(charge.limit).arg(charge.amount).arg(if charge.past_limit { "1" } else { "0" });
            invocation.arg(WINDOWS_KEPT_MS);
            invocation.arg(self.keys.legacy_window_prefix(charge.budget, Some(charge.scope)));
        }
        let (reply, short) = self.script_replicated("reserve", shard, invocation, true).await?;
        self.reservation(request.id, charge, reply, short).await
    }

    /// A reservation script's answer as a [`Reservation`]; an acquired key that fewer
    /// replicas than asked acknowledged (`short`) is released, and answers an error.
    pub(super) async fn reservation(
        &self,
        id: RecordId<'_>,
        charge: Option<Charge<'_>>,
        reply: Value,
        short: Option<String>,
    ) -> Result<Reservation, StoreError> {
        let RecordId { namespace, key } = id;
        let mut reply = texts(reply)?.into_iter();
        let corrupt = |what: &str| StoreError::Corrupt(format!("{namespace}/{key}: reserve answered {what}"));
        match reply.next().as_deref() {
            Some("acquired") => {
                let token = reply.next().and_then(|token| token.parse().ok()).ok_or_else(|| corrupt("no token"))?;
                if let Some(short) = short {
                    // The body has not run: letting the key go is safe, and spares a retry
                    // an abandoned key. Should the release fail too, the key is abandoned.
                    let _ = self.delete(id, Some(Token(token))).await;
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
                let (Some(charge), Some(start)) = (charge, reply.next()) else {
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
        let (shard, record) = self.keys.record(id);
        let mut invocation = SCRIPTS.take_over.key(record);
        invocation.arg(expired.0).arg(duration_ms(lease));
        match self.script("take over", shard, invocation).await? {
            Value::Nil => Err(StoreError::Fenced),
            reply => {
                let token = fields::text(reply)?;
                token.parse().map(Token).map_err(|_| StoreError::Corrupt(format!("take over answered {token:?}")))
            }
        }
    }

    async fn renew_async(&self, renewal: Renew<'_>) -> Result<(), StoreError> {
        let (shard, record) = self.keys.record(renewal.id);
        let mut invocation = SCRIPTS.renew.key(record);
        invocation.arg(renewal.token.0).arg(duration_ms(renewal.lease));
        invocation.arg(if renewal.progress.is_some() { "1" } else { "0" }).arg(renewal.progress.unwrap_or(""));
        self.fenced_unless_done("renew", shard, invocation).await
    }

    /// Settles the record: the holder's completion, or an operator's (`token` `None`).
    pub(super) async fn settle(
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
        let (shard, record) = self.keys.record(id);
        let mut invocation = SCRIPTS.settle.key(record);
        invocation.key(self.keys.running(shard)).key(self.keys.settled(shard));
        invocation.arg(token.map_or(String::new(), |token| token.0.to_string())).arg(state).arg(result);
        invocation.arg(duration_ms(retain)).arg(duration_ms(self.expire_after_retention));
        let operation = if token.is_some() { "complete" } else { "resolve" };
        let (reply, short) = self.script_replicated(operation, shard, invocation, token.is_some()).await?;
        self.done_or_fenced(operation, reply)?;
        // Written, but not on enough replicas: a failed completion, which idem does not
        // write again (it would be fenced by the completion it already made).
        match short {
            Some(short) => {
                Err(self.link.ran_out_of_time(operation, format!("{short}; the completion may be lost on a failover")))
            }
            None => Ok(()),
        }
    }

    /// Deletes the in-progress record, refunding its charge: the holder's release, or an
    /// operator's (`token` `None`).
    pub(super) async fn delete(&self, id: RecordId<'_>, token: Option<Token>) -> Result<(), StoreError> {
        let (shard, record) = self.keys.record(id);
        let script = if self.keys.cluster { &SCRIPTS.release_queued } else { &SCRIPTS.release };
        let mut invocation = script.key(record);
        invocation.key(self.keys.running(shard));
        if self.keys.cluster {
            invocation.key(self.keys.refunds(shard));
        }
        invocation.arg(token.map_or(String::new(), |token| token.0.to_string())).arg(duration_ms(TOMBSTONE));
        match self.script("release", shard, invocation).await? {
            Value::Array(reply) if self.keys.cluster => {
                let charge = reply.into_iter().nth(1).map(fields::text).transpose()?.unwrap_or_default();
                self.refund_released(shard, &charge).await;
                Ok(())
            }
            reply => self.done_or_fenced("release", reply),
        }
    }

    async fn abandon_async(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        let (shard, record) = self.keys.record(id);
        let mut invocation = SCRIPTS.abandon.key(record);
        invocation.arg(token.0);
        self.fenced_unless_done("abandon", shard, invocation).await
    }

    async fn read_async(&self, id: RecordId<'_>) -> Result<Option<Record>, StoreError> {
        self.read_record("read", id).await.map(|(_, record)| record)
    }

    /// The hashes of `keys`, all of `shard` (empty for a missing key), and the server's time.
    pub(super) async fn read_keys(
        &self,
        operation: &'static str,
        shard: usize,
        keys: Vec<String>,
    ) -> Result<(i64, Vec<std::collections::HashMap<String, String>>), StoreError> {
        let mut invocation = SCRIPTS.read.prepare_invoke();
        for key in keys {
            invocation.key(key);
        }
        let Value::Array(reply) = self.script(operation, shard, invocation).await? else {
            return Err(StoreError::Corrupt(format!("{operation}: unexpected reply")));
        };
        let mut reply = reply.into_iter();
        let now = reply.next().map(fields::text).transpose()?.and_then(|now| now.parse().ok());
        let now = now.ok_or_else(|| StoreError::Corrupt(format!("{operation}: no time")))?;
        let hashes = reply.map(|found| texts(found).map(hash)).collect::<Result<_, _>>()?;
        Ok((now, hashes))
    }

    /// Deletes what is due, by the batch, oldest retention first, shard by shard; on a
    /// cluster, first settles the charges callers left (see `charges.rs`).
    async fn purge_async(&self, limit: usize) -> Result<usize, StoreError> {
        const BATCH: usize = 1000;
        if self.keys.cluster {
            self.settle_charges().await?;
        }
        let mut purged = 0;
        for shard in 0..self.keys.shards() {
            while purged < limit {
                let asked = (limit - purged).min(BATCH);
                let mut invocation = SCRIPTS.purge.key(self.keys.settled(shard));
                invocation.arg(asked);
                let reply = texts(self.script("purge", shard, invocation).await?)?;
                let counts: Vec<usize> = reply.iter().filter_map(|n| n.parse().ok()).collect();
                let [deleted, due] = counts[..] else {
                    return Err(self.link.failed("purge", format!("unexpected reply {reply:?}")));
                };
                purged += deleted;
                if due < asked {
                    break;
                }
            }
            self.script("purge", shard, SCRIPTS.prune_windows.key(self.keys.windows(shard))).await?;
        }
        Ok(purged)
    }

    /// Up to `count` names of an index of `shard` from rank `offset`, lowest score first.
    pub(super) async fn index_range(
        &self,
        shard: usize,
        index: &str,
        offset: usize,
        count: usize,
    ) -> Result<Vec<String>, StoreError> {
        let mut command = redis::cmd("ZRANGE");
        command.arg(index).arg(offset).arg(offset + count - 1);
        self.command("list", shard, command).await
    }
}

impl Store for RedisStore {
    async fn reserve(&self, request: Reserve<'_>) -> Result<Reservation, StoreError> {
        self.reserve_async(request, None).await
    }
    async fn take_over(&self, id: RecordId<'_>, expired: Token, lease: Duration) -> Result<Token, StoreError> {
        self.take_over_async(id, expired, lease).await
    }
    async fn renew(&self, renewal: Renew<'_>) -> Result<(), StoreError> {
        self.renew_async(renewal).await
    }
    async fn complete(
        &self,
        id: RecordId<'_>,
        token: Token,
        completion: Completion<'_>,
        retain: Duration,
    ) -> Result<(), StoreError> {
        self.settle(id, Some(token), completion, retain).await
    }
    async fn release(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        self.delete(id, Some(token)).await
    }
    async fn abandon(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        self.abandon_async(id, token).await
    }
    async fn read(&self, id: RecordId<'_>) -> Result<Option<Record>, StoreError> {
        self.read_async(id).await
    }
    async fn purge(&self, limit: usize) -> Result<usize, StoreError> {
        self.purge_async(limit).await
    }
}
