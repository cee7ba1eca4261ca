//! Transactional mode for PostgreSQL: the key, your writes and the result commit together.
//! See [`PgStore::begin`].

use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Statement};

use super::ops::decode;
use super::pool::Pooled;
use super::schema::Sql;
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
    /// Nothing was written. It is read by [`replay_value`](crate::replay_value): with the
    /// replay marker where the type asks for it (a `replayed` field, a `serde_json::Value`).
    Replayed(T),
}

/// An open transaction that holds one key, reserved by its first statement: a
/// `tokio_postgres::Client` (through `Deref`) for your writes, committed together with the
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
        let failed = self.store.failed("commit");
        let fail = |e: StoreError| unavailable(id, &failed(e));
        let conn = self.conn.as_mut().expect("open until committed or dropped");
        let changed = conn.client.execute(&self.complete, &params).await.map_err(|e| fail(backend(e)))?;
        if changed != 1 {
            return Err(fail(StoreError::Backend("the transaction's writes removed its own key".into())));
        }
        conn.client.batch_execute("COMMIT").await.map_err(|e| fail(backend(e)))?;
        self.conn.take(); // committed: back to the pool
        Ok(())
    }

    /// Rolls everything back, the key included, now rather than when dropped.
    pub async fn rollback(mut self) -> Result<(), Error> {
        let id = RecordId { namespace: &self.namespace, key: &self.key };
        let conn = self.conn.as_mut().expect("open until committed or dropped");
        let rolled_back = conn.client.batch_execute("ROLLBACK").await.map_err(backend);
        rolled_back.map_err(|e| unavailable(id, &self.store.failed("rollback")(e)))?;
        self.conn.take();
        Ok(())
    }
}

impl Drop for PgTransaction<'_> {
    fn drop(&mut self) {
        // Roll back on the store's IO thread, then return the connection; the connection
        // answers in order, so a statement still in flight finishes first.
        if let Some(conn) = self.conn.take() {
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
    /// A duplicate's reservation waits on the first call's uncommitted row (at most the
    /// [`lock_timeout`](super::PgStoreBuilder::lock_timeout), then it is told
    /// `IN_PROGRESS`); when the first commits, the duplicate gets [`Begun::Replayed`], and
    /// when it rolls back, the duplicate runs. `compare` (a struct or map of the fields
    /// that must match, `&()` for none) makes a repeat with other values a `CONFLICT`.
    /// The result is kept for `retain`. The transaction is READ COMMITTED.
    ///
    /// ```no_run
    /// use idem_runtime::store::{PgStore, RecordId, postgres::Begun};
    /// # async fn place_order(store: &PgStore, order: &str, amount: i64) -> Result<String, Box<dyn std::error::Error>> {
    /// let id = RecordId { namespace: "shop.orders", key: order };
    /// let compare = serde_json::json!({ "amount": amount });
    /// match store.begin(id, &compare, idem_runtime::DEFAULT_RETAIN).await? {
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
        let failed = self.failed("begin");
        let fail = |e: StoreError| unavailable(id, &failed(e));
        let mut conn = self.conn().await.map_err(fail)?;
        let queries = &self.inner.queries;
        let insert = conn.statement(queries, Sql::Insert).await.map_err(fail)?;
        let read = conn.statement(queries, Sql::Read).await.map_err(fail)?;
        let complete = conn.statement(queries, Sql::Complete).await.map_err(fail)?;
        let lease = duration_ms(crate::DEFAULT_LEASE);
        let params: [&(dyn ToSql + Sync); 4] = [&id.namespace, &id.key, &request, &lease];
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
            match tx.query_opt(&insert, &params).await {
                Ok(Some(row)) => {
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
                return match answer_existing::<T, std::convert::Infallible>(id, &request, record) {
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
            if conn.client.batch_execute("ROLLBACK").await.is_ok() {
                inner.pool.put_back(conn);
            }
            drop(permit);
        });
    }
}
