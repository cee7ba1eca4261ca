//! Budgets on a Redis Cluster: a window is shared by records of every shard, so it cannot
//! sit in a record's slot, and no script can charge it and reserve the record in one step.
//! The charge comes first, and never overspends:
//!
//! 1. **Read the record.** One that exists answers at once (a replay charges nothing).
//! 2. **Charge the window** (its own shard): refuse past the limit, or count the amount and
//!    note a pending charge `p:<id>` (when, how much, for which record).
//! 3. **Reserve the record** carrying the charge: the record keeps the window and the id,
//!    and its shard notes the charge as held (`h\n<window>\n<id>` in `<prefix>:{n}:charges`).
//!    A record that exists by now, or a charge a repair voided, gets no reservation.
//! 4. **Confirm or refund**: an acquired reservation takes the charge off the pending ones;
//!    one that did not acquire refunds it. A refund happens once per id (`r:<id>` marks it),
//!    whoever asks.
//!
//! A release runs in the record's slot: it queues its charge in the shard's refunds
//! (`<prefix>:{n}:refunds`), then refunds it and takes it off the queue.
//!
//! What a caller could not finish (a crash, a timeout between two steps) the next
//! [`Store::purge`](crate::store::Store::purge) settles: it refunds the queued refunds, and
//! for each pending charge asks the record's shard whether a reservation holds it. Held,
//! it is confirmed; not held and older than twice the operation timeout, it is voided there
//! first (a reservation carrying it that arrives later is refused) and then refunded. Until
//! then such a charge is counted: a window can be over-counted (never overspent) by the
//! charges of calls that failed between the steps, until the next purge.

use redis::Value;

use super::RedisStore;
use super::fields::{self, texts};
use super::scripts::SCRIPTS;
use crate::store::budget::{Charge, WINDOWS_KEPT_MS};
use crate::store::{RecordId, Reservation, Reserve, StoreError, duration_ms};

/// Why a reservation carrying a voided charge is refused.
pub(super) const VOIDED: &str = "this call's budget charge was voided by a purge (the call took longer than twice the operation timeout \
     between charging and reserving); nothing ran";

/// A pending charge: the window, its id.
#[derive(Debug)]
pub(super) struct Pending {
    pub(super) window: String,
    pub(super) id: String,
}

impl RedisStore {
    /// A charged reservation on a cluster, in the steps the module docs give.
    pub(super) async fn reserve_charged_across_slots(
        &self,
        request: Reserve<'_>,
        charge: Charge<'_>,
    ) -> Result<Reservation, StoreError> {
        let (now, found) = self.read_record("reserve", request.id).await?;
        if let Some(existing) = found {
            return Ok(Reservation::Existing(existing));
        }
        let pending = match self.charge_pending(request.id, charge).await? {
            Ok(pending) => pending,
            Err(over) => return Ok(over),
        };
        // Should this fail, the charge stays pending: a purge confirms or refunds it.
        let reservation = self.reserve_carrying(request, charge, &pending, now).await;
        let settled = match &reservation {
            Ok(Reservation::Acquired { .. }) => confirm(&pending.window, &pending.id),
            // Not held (the release of a short `WAIT` refunds through the record's queue).
            Ok(_) => refund(&pending.window, &pending.id, &charge.amount.to_string()),
            Err(_) => return reservation,
        };
        // A charge left pending is settled by the next purge.
        let _ = self.script("reserve", self.keys.window_shard(charge.budget, charge.scope), settled).await;
        reservation
    }

    /// Step 2: charges the window as a pending charge for `id`'s record; `Err` holds the
    /// answer when the window has no room.
    pub(super) async fn charge_pending(
        &self,
        id: RecordId<'_>,
        charge: Charge<'_>,
    ) -> Result<Result<Pending, Reservation>, StoreError> {
        let window_shard = self.keys.window_shard(charge.budget, charge.scope);
        let mut invocation = SCRIPTS.charge.key(self.keys.windows(window_shard));
        invocation.arg(self.keys.window_prefix(window_shard, charge.budget, Some(charge.scope)));
        invocation.arg(charge.budget).arg(charge.scope).arg(charge.window_ms.max(1));
        invocation.arg(charge.limit).arg(charge.amount).arg(if charge.past_limit { "1" } else { "0" });
        invocation.arg(WINDOWS_KEPT_MS).arg(self.keys.record(id).1);
        let reply = self.script("reserve", window_shard, invocation).await?;
        match texts(reply.clone())?.as_slice() {
            [charged, window, id] if charged == "charged" => Ok(Ok(Pending { window: window.clone(), id: id.clone() })),
            _ => Ok(Err(self.reservation(id, Some(charge), reply, None).await?)),
        }
    }

    /// Step 3: reserves the record carrying `pending`; a charge a purge voided (its call
    /// took longer than the purge waits) is refused: `STORE_UNAVAILABLE`, no body runs.
    pub(super) async fn reserve_carrying(
        &self,
        request: Reserve<'_>,
        charge: Charge<'_>,
        pending: &Pending,
        now: i64,
    ) -> Result<Reservation, StoreError> {
        let RecordId { namespace, key } = request.id;
        let (shard, record) = self.keys.record(request.id);
        let mut invocation = SCRIPTS.reserve.key(record);
        invocation.key(self.keys.running(shard)).key(self.keys.charges(shard));
        invocation.arg(request.request).arg(duration_ms(request.lease)).arg(namespace).arg(key);
        invocation.arg(&pending.window).arg(&pending.id).arg(charge.amount);
        invocation.arg(kept_until(now, charge.window_ms));
        let (reply, short) = self.script_replicated("reserve", shard, invocation, true).await?;
        if let Value::Array(items) = &reply
            && let [Value::BulkString(voided)] = items.as_slice()
            && voided == b"voided"
        {
            return Err(self.link.failed("reserve", VOIDED));
        }
        self.reservation(request.id, Some(charge), reply, short).await
    }

    /// Refunds a released record's charge (`window\nid\namount`, `""` for none) and takes
    /// it off `shard`'s queue; what fails here the next purge does.
    pub(super) async fn refund_released(&self, shard: usize, charge: &str) {
        let [window, id, amount] = charge.splitn(3, '\n').collect::<Vec<_>>()[..] else { return };
        let Some(window_shard) = self.keys.shard_in(window) else { return };
        if self.script("release", window_shard, refund(window, id, amount)).await.is_ok() {
            let mut done = redis::cmd("ZREM");
            done.arg(self.keys.refunds(shard)).arg(charge);
            let _: Result<i64, _> = self.command("release", shard, done).await;
        }
    }

    /// What callers left of the charge protocol, settled shard by shard: queued refunds
    /// refunded, pending charges confirmed or voided and refunded (see the module docs).
    pub(super) async fn settle_charges(&self) -> Result<(), StoreError> {
        const BATCH: usize = 1000;
        let grace_ms = i64::try_from(self.void_after.as_millis()).unwrap_or(i64::MAX / 4);
        for shard in 0..self.keys.shards() {
            loop {
                let queued = self.index_range(shard, &self.keys.refunds(shard), 0, BATCH).await?;
                for charge in &queued {
                    self.refund_released(shard, charge).await;
                }
                if queued.len() < BATCH {
                    break;
                }
            }
            let mut members = redis::cmd("SMEMBERS");
            members.arg(self.keys.windows(shard));
            let windows: Vec<String> = self.command("purge", shard, members).await?;
            let (now, hashes) = self.read_keys("purge", shard, windows.clone()).await?;
            for (window, fields) in windows.iter().zip(hashes) {
                self.settle_pending(window, &fields, now - grace_ms).await?;
            }
            // The entries of windows that are gone: no charge of theirs can be settled now.
            let mut trim = redis::cmd("ZREMRANGEBYSCORE");
            trim.arg(self.keys.charges(shard)).arg("-inf").arg(format!("({now}"));
            let _: i64 = self.command("purge", shard, trim).await?;
        }
        Ok(())
    }

    /// Confirms or voids and refunds each of a window's pending charges; only those made
    /// before `stale_before` (ms) may be voided: a younger one may still be on its way.
    async fn settle_pending(
        &self,
        window: &str,
        fields: &std::collections::HashMap<String, String>,
        stale_before: i64,
    ) -> Result<(), StoreError> {
        let Some(window_shard) = self.keys.shard_in(window) else { return Ok(()) };
        let ends = fields::number(fields, "start")?.unwrap_or(0) + fields::number(fields, "window")?.unwrap_or(0);
        for (field, pending) in fields {
            let Some(id) = field.strip_prefix("p:") else { continue };
            let mut parts = pending.splitn(3, ' ');
            let (Some(at), Some(amount), Some(record)) = (parts.next(), parts.next(), parts.next()) else { continue };
            let Some(shard) = self.keys.shard_in(record) else { continue };
            let mut void = SCRIPTS.void.key(self.keys.charges(shard));
            void.arg(window).arg(id).arg(kept_until(ends, 0));
            let stale = at.parse::<i64>().is_ok_and(|at| at < stale_before);
            let fate = match stale {
                true => fields::text(self.script("purge", shard, void).await?)?,
                false => self.held(shard, window, id).await?,
            };
            let settled = match fate.as_str() {
                "held" => confirm(window, id),
                "voided" => refund(window, id, amount),
                _ => continue,
            };
            self.script("purge", window_shard, settled).await?;
        }
        Ok(())
    }

    /// `held` when a reservation of `shard` holds the charge, else `""`.
    async fn held(&self, shard: usize, window: &str, id: &str) -> Result<String, StoreError> {
        let mut score = redis::cmd("ZSCORE");
        score.arg(self.keys.charges(shard)).arg(format!("h\n{window}\n{id}"));
        let found: Option<String> = self.command("purge", shard, score).await?;
        Ok(if found.is_some() { "held".to_owned() } else { String::new() })
    }
}

/// Takes a charge off `window`'s pending ones.
fn confirm(window: &str, id: &str) -> redis::ScriptInvocation<'static> {
    let mut invocation = SCRIPTS.confirm.key(window);
    invocation.arg(id);
    invocation
}

/// Gives a charge back to `window`, once.
fn refund(window: &str, id: &str, amount: &str) -> redis::ScriptInvocation<'static> {
    let mut invocation = SCRIPTS.refund.key(window);
    invocation.arg(id).arg(amount);
    invocation
}

/// Until when a charge's entry is kept: as long as a window that started by `at_ms` and
/// lasts `window_ms` is (see `WINDOWS_KEPT_MS`).
fn kept_until(at_ms: i64, window_ms: i64) -> i64 {
    at_ms.saturating_add(window_ms).saturating_add(WINDOWS_KEPT_MS)
}
