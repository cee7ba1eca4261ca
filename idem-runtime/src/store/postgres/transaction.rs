//! Transactional mode for PostgreSQL: the key, your writes and the result commit together.
//! See [`PgStore::begin`].

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Statement};

use super::ops::decode;
use super::pool::Pooled;
use super::schema::{Sql, set_lock_timeout};
use super::{PgStore, backend, duration_ms};
use crate::error::Error;
use crate::store::sqlite::transaction::{
    ROUNDS, TransactionError, answer_existing, canonical_request, in_progress, unavailable, unserializable,
};
use crate::store::{RecordId, StoreError};

/// What [`PgStore::begin`] found: the key is yours to run, or it was completed earlier.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // a short-lived answer, matched at once
pub enum Begun<'s, T> {
    /// The key is reserved in the open transaction: do your writes through it, then
    /// [`commit`](PgTransaction::commit) with the result.
    Run(PgTransaction<'s>),
    /// The key was completed earlier with the same compared fields: its stored result.
    /// Nothing was written. It is read by [`replay_value`](crate::frameworks::replay_value): with the
    /// replay marker where the type asks for it (a `replayed` field, a `serde_json::Value`).
    Replayed(T),
}

/// An open transaction that holds one key, reserved by its first statement: a
/// [`Client`](super::Client) (through `Deref`) for your writes, committed together with the
/// key's result by [`commit`](Self::commit).
///
/// Dropping it without `commit` (an error returned with `?`, a panic, a cancelled
/// future) rolls everything back, the key included: the action did not happen. Do not
/// send `COMMIT` or `ROLLBACK` yourself.
pub struct PgTransaction<'s> {
    store: &'s PgStore,
    conn: Option<Pooled<'s>>,
    namespace: String,
    key: String,
    token: i64,
    retain: Duration,
    complete: Statement,
}

impl std::fmt::Debug for PgTransaction<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgTransaction").field("namespace", &self.namespace).field("key", &self.key).finish()
    }
}

impl std::ops::Deref for PgTransaction<'_> {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.conn.as_ref().expect("open until committed or dropped").client
    }
}

impl PgTransaction<'_> {
    /// The key this transaction holds.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Completes the key with `result` and commits it with every write made through this
    /// transaction. A failed commit is `STORE_UNAVAILABLE` and safe to retry: the retry
    /// replays the result if the commit happened, and runs again if it did not.
    pub async fn commit<T: Serialize + ?Sized>(mut self, result: &T) -> Result<(), Error> {
        let id = RecordId { namespace: &self.namespace, key: &self.key };
        let json = serde_json::to_string(result).map_err(|e| unserializable(id, &e))?;
        let params: [&(dyn ToSql + Sync); 6] =
            [&id.namespace, &id.key, &self.token, &"completed", &json, &duration_ms(self.retain)];
        let conn = self.conn.as_mut().expect("open until committed or dropped");
        let complete = &self.complete;
        let committed = self.store.operation("commit", async {
            let changed = conn.client.execute(complete, &params).await.map_err(backend)?;
            if changed != 1 {
                return Err(StoreError::Backend("the transaction's writes removed its own key".into()));
            }
            conn.client.batch_execute("COMMIT").await.map_err(backend)
        });
        committed.await.map_err(|e| unavailable(id, &e))?;
        self.conn.take(); // committed: back to the pool
        Ok(())
    }

    /// Rolls everything back, the key included, now rather than when dropped.
    pub async fn rollback(mut self) -> Result<(), Error> {
        let id = RecordId { namespace: &self.namespace, key: &self.key };
        let conn = self.conn.as_mut().expect("open until committed or dropped");
        let rolled_back =
            self.store.operation("rollback", async { conn.client.batch_execute("ROLLBACK").await.map_err(backend) });
        rolled_back.await.map_err(|e| unavailable(id, &e))?;
        self.conn.take();
        Ok(())
    }
}

impl Drop for PgTransaction<'_> {
    fn drop(&mut self) {
        // Roll back on the store's IO thread, then return the connection; the connection
        // answers in order, so a statement still in flight finishes first.
        // One that an operation out of time dropped is closed instead: the server rolls it
        // back when the connection ends.
        if let Some(conn) = self.conn.take()
            && !super::deadline::discarding()
        {
            self.store.roll_back_later(conn);
        }
    }
}

impl PgStore {
    /// Opens a transaction that reserves `id` as its first statement, for effects that
    /// live in this database: your writes through the returned [`PgTransaction`] and the
    /// key's result then commit together ([`PgTransaction::commit`]), or roll back
    /// together, the key included, on an error, a panic or a cancelled future. Exactly
    /// once for local effects, with no lease and no "outcome unknown".
    ///
    /// A duplicate's reservation (another `begin`, or a tool call with the same namespace
    /// and key) waits on the first call's uncommitted row at most
    /// [`IDEM_LOCK_WAIT`](super::IDEM_LOCK_WAIT) (100 ms), then it is told `IN_PROGRESS`;
    /// once the first has committed, a duplicate gets [`Begun::Replayed`], and once it
    /// rolled back, the duplicate runs. Your writes through the transaction wait for locks
    /// up to the [`lock_timeout`](super::PgStoreBuilder::lock_timeout) (5 s). `compare` (a struct or map of the fields
    /// that must match, `&()` for none) makes a repeat with other values a `CONFLICT`.
    /// The result is kept for `retain`. The transaction is READ COMMITTED.
    ///
    /// ```no_run
    /// use idem_runtime::store::{PgStore, RecordId, postgres::Begun};
    /// # async fn place_order(store: &PgStore, order: &str, amount: i64) -> Result<String, Box<dyn std::error::Error>> {
    /// let id = RecordId { namespace: "shop.orders", key: order };
    /// let compare = serde_json::json!({ "amount": amount });
    /// match store.begin(id, &compare, idem_runtime::store::DEFAULT_RETAIN).await? {
    ///     Begun::Replayed(receipt) => Ok(receipt), // no second row
    ///     Begun::Run(tx) => {
    ///         // An error here drops `tx`: the row and the key roll back together.
    ///         tx.execute("INSERT INTO orders (id, amount) VALUES ($1, $2)", &[&order, &amount]).await?;
    ///         let receipt = format!("order {order}: {amount}");
    ///         tx.commit(&receipt).await?;
    ///         Ok(receipt)
    ///     }
    /// }
    /// # }
    /// ```
    pub async fn begin<T: DeserializeOwned>(
        &self,
        id: RecordId<'_>,
        compare: &(impl Serialize + ?Sized),
        retain: Duration,
    ) -> Result<Begun<'_, T>, Error> {
        let request = canonical_request(id, compare)?;
        let begun = self.inner.pool.deadline(self.reserve_in_transaction(id, &request, retain)).await;
        begun.unwrap_or_else(|timed_out| Err(unavailable(id, &self.failed("begin")(timed_out))))
    }

    /// [`begin`](Self::begin) once the compared fields are serialized.
    async fn reserve_in_transaction<T: DeserializeOwned>(
        &self,
        id: RecordId<'_>,
        request: &str,
        retain: Duration,
    ) -> Result<Begun<'_, T>, Error> {
        let failed = self.failed("begin");
        let fail = |e: StoreError| unavailable(id, &failed(e));
        let mut conn = self.conn().await.map_err(fail)?;
        let queries = &self.inner.queries;
        let insert = conn.statement(queries, Sql::Insert).await.map_err(fail)?;
        let read = conn.statement(queries, Sql::Read).await.map_err(fail)?;
        let complete = conn.statement(queries, Sql::Complete).await.map_err(fail)?;
        let lease = duration_ms(crate::store::DEFAULT_LEASE);
        let params: [&(dyn ToSql + Sync); 4] = [&id.namespace, &id.key, &request, &lease];
        let set_lock_timeout = set_lock_timeout(self.inner.lock_timeout);
        for _ in 0..ROUNDS {
            conn.client.batch_execute("BEGIN").await.map_err(|e| fail(backend(e)))?;
            // From here until COMMIT, dropping the transaction rolls back.
            let mut tx = PgTransaction {
                store: self,
                conn: Some(conn),
                namespace: id.namespace.to_owned(),
                key: id.key.to_owned(),
                token: 0,
                retain,
                complete: complete.clone(),
            };
            // The reservation waits for a duplicate's open transaction at most
            // IDEM_LOCK_WAIT; your writes after it wait up to `lock_timeout`. Sent together,
            // they cost one round trip.
            let (inserted, lock_timeout_set) =
                both(tx.query_opt(&insert, &params), tx.batch_execute(&set_lock_timeout)).await;
            match inserted {
                Ok(Some(row)) => {
                    lock_timeout_set.map_err(|e| fail(backend(e)))?;
                    tx.token = row.try_get(0).map_err(|e| fail(backend(e)))?;
                    return Ok(Begun::Run(tx));
                }
                Ok(None) => {}
                Err(e) if e.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) => return Err(in_progress(id)),
                Err(e) => return Err(fail(backend(e))),
            }
            // A committed record: a new statement's snapshot sees it.
            let row = tx.query_opt(&read, &params[..2]).await.map_err(|e| fail(backend(e)))?;
            conn = tx.conn.take().expect("open");
            conn.client.batch_execute("ROLLBACK").await.map_err(|e| fail(backend(e)))?;
            if let Some(row) = row {
                let record = decode(id, &row, 0).map_err(fail)?;
                return match answer_existing::<T, std::convert::Infallible>(id, request, record) {
                    Ok(found) => Ok(Begun::Replayed(found.into_inner())),
                    Err(TransactionError::Idem(error)) => Err(error),
                    Err(TransactionError::Body(never)) => match never {},
                };
            }
        }
        Err(fail(StoreError::Backend(format!("the existing record vanished {ROUNDS} times in a row").into())))
    }

    /// Rolls back an abandoned transaction's connection on the IO thread, then returns it
    /// to the pool (or closes it, if the rollback fails).
    fn roll_back_later(&self, conn: Pooled<'_>) {
        let (conn, permit) = conn.into_parts();
        let inner = self.inner.clone();
        self.inner.pool.spawn(async move {
            // Bounded like any operation: a server that stopped answering must not keep the
            // pool slot forever. The connection is closed unless it rolled back.
            let rolled_back = inner.pool.deadline(conn.client.batch_execute("ROLLBACK")).await;
            if let Ok(Ok(())) = rolled_back {
                inner.pool.put_back(conn);
            }
            drop(permit);
        });
    }
}

/// Both futures' outputs, polled together: statements on one connection started this way
/// are pipelined, sent in the order given without waiting for each other's answers.
pub(super) async fn both<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let (mut a, mut b) = (pin!(a), pin!(b));
    let (mut a_done, mut b_done) = (None, None);
    poll_fn(|cx| {
        if a_done.is_none()
            && let Poll::Ready(output) = a.as_mut().poll(cx)
        {
            a_done = Some(output);
        }
        if b_done.is_none()
            && let Poll::Ready(output) = b.as_mut().poll(cx)
        {
            b_done = Some(output);
        }
        if a_done.is_some() && b_done.is_some() { Poll::Ready(()) } else { Poll::Pending }
    })
    .await;
    (a_done.expect("ready"), b_done.expect("ready"))
}
