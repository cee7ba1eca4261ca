//! Budgets in PostgreSQL: the windows in `idem_budgets`, each record's charge in its own
//! row (`charge_budget`, `charge_scope`, `charge_start_ms`, `charge_amount`).
//!
//! A charged reservation reads the record first (a repeat charges nothing and locks no
//! window), then runs one READ COMMITTED transaction: the charge (`Sql::Charge`, one
//! `INSERT .. ON CONFLICT DO UPDATE .. WHERE used + amount <= lim + raised`, added in
//! `numeric` so that sums past a `bigint` are refused rather than fail; it locks the
//! window's row, so concurrent charges of one window take turns and each sees the last
//! one's use), then the record's insert. A charge that does not fit, or a record that
//! exists after all, rolls the transaction back: nothing charged, no record. The window's
//! row stays locked until the commit, so the charge waits for it up to the store's
//! [`lock_timeout`](super::PgStoreBuilder::lock_timeout) (5 s), not [`IDEM_LOCK_WAIT`]
//! (100 ms): many first calls of one budget queue there. The record's insert still waits
//! at most `IDEM_LOCK_WAIT` for a [`begin`](super::PgStore::begin) transaction that holds
//! its key.
//!
//! [`IDEM_LOCK_WAIT`]: super::IDEM_LOCK_WAIT

use tokio_postgres::Row;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;

use super::ops::{decode, locked_or_backend, token_of};
use super::schema::{Sql, set_lock_timeout};
use super::transaction::both;
use super::{IDEM_LOCK_WAIT, PgStore, backend, duration_ms};
use crate::store::budget::{Adjusted, BudgetWindow, Charge, takes};
use crate::store::{BudgetStore, RecordId, Reservation, Reserve, StoreError, Token};

/// How often a charged reservation tries again when the record it lost to vanished
/// before it was read.
const RESERVE_ROUNDS: usize = 3;

/// A charged reservation: see the module's docs.
impl BudgetStore for PgStore {
    async fn reserve_charged(&self, request: Reserve<'_>, charge: Charge<'_>) -> Result<Reservation, StoreError> {
        self.operation("reserve", self.reserve_charging(request, charge)).await
    }
}

impl PgStore {
    async fn reserve_charging(&self, request: Reserve<'_>, charge: Charge<'_>) -> Result<Reservation, StoreError> {
        let id = request.id;
        let lease = duration_ms(request.lease);
        let mut conn = self.conn().await?;
        let queries = &self.inner.queries;
        let read = conn.statement(queries, Sql::Read).await?;
        let charging = conn.statement(queries, Sql::Charge).await?;
        let window = conn.statement(queries, Sql::Window).await?;
        let insert = conn.statement(queries, Sql::InsertCharged).await?;
        let wait_for_window = set_lock_timeout(self.inner.lock_timeout);
        let wait_for_record = set_lock_timeout(IDEM_LOCK_WAIT);
        let charge_params: [&(dyn ToSql + Sync); 6] =
            [&charge.budget, &charge.scope, &charge.window_ms, &charge.limit, &charge.amount, &charge.past_limit];
        for _ in 0..RESERVE_ROUNDS {
            if let Some(row) = conn.client.query_opt(&read, &[&id.namespace, &id.key]).await.map_err(backend)? {
                return Ok(Reservation::Existing(decode(id, &row, 0)?));
            }
            // Dropped without a commit, the transaction rolls back (tokio-postgres sends
            // ROLLBACK before the connection serves anyone else).
            let tx = conn.client.transaction().await.map_err(backend)?;
            let (waits, charged) =
                both(tx.batch_execute(&wait_for_window), tx.query_opt(&charging, &charge_params)).await;
            waits.map_err(backend)?;
            let start_ms = match charged.map_err(backend)? {
                Some(row) => {
                    let mut charged = window_of(&row)?;
                    // A window that existed took the charge only if it fit (the statement's
                    // WHERE); a new one took it whatever it was.
                    if takes(charged.used - charge.amount, charged.raised, &charge) {
                        charged.start_ms
                    } else {
                        // A new window that this one charge passes: as it was before it.
                        charged.used -= charge.amount;
                        tx.rollback().await.map_err(backend)?;
                        return Ok(Reservation::OverBudget(charged));
                    }
                }
                None => {
                    // The transaction's `now()` is the charge's: the same window.
                    let key: [&(dyn ToSql + Sync); 3] = [&charge.budget, &charge.scope, &charge.window_ms];
                    let refused = tx.query_opt(&window, &key).await.map_err(backend)?;
                    let refused = refused.ok_or_else(|| StoreError::Backend("the window that refused is gone".into()));
                    let mut refused = window_of(&refused?)?;
                    refused.limit = charge.limit;
                    tx.rollback().await.map_err(backend)?;
                    return Ok(Reservation::OverBudget(refused));
                }
            };
            let record: [&(dyn ToSql + Sync); 8] = [
                &id.namespace,
                &id.key,
                &request.request,
                &lease,
                &charge.budget,
                &charge.scope,
                &start_ms,
                &charge.amount,
            ];
            let (waits, inserted) = both(tx.batch_execute(&wait_for_record), tx.query_opt(&insert, &record)).await;
            waits.map_err(backend)?;
            if let Some(row) = inserted.map_err(locked_or_backend)? {
                let token = token_of(id, row.try_get(0))?;
                tx.commit().await.map_err(backend)?;
                return Ok(Reservation::Acquired { token });
            }
            // Another caller's record committed since the read: refund by rolling back, and
            // read it (or try again if it was released meanwhile).
            tx.rollback().await.map_err(backend)?;
        }
        Err(StoreError::Backend(
            format!(
                "reserving {}/{}: the existing record vanished {RESERVE_ROUNDS} times in a row",
                id.namespace, id.key
            )
            .into(),
        ))
    }

    /// [`Store::release`](crate::store::Store::release): deletes the record and
    /// refunds its charge in one statement. When that statement gives up waiting for the
    /// window's row (locked by charges queueing there), it runs again in a transaction that
    /// waits as long as a charge does.
    pub(super) async fn release_refunding(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        let token = i64::try_from(token.0).map_err(|_| StoreError::Fenced)?;
        let params: [&(dyn ToSql + Sync); 3] = [&id.namespace, &id.key, &token];
        let mut conn = self.conn().await?;
        let release = conn.statement(&self.inner.queries, Sql::Release).await?;
        let released = match conn.client.query_one(&release, &params).await {
            Ok(row) => row,
            Err(e) if e.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) => {
                let tx = conn.client.transaction().await.map_err(backend)?;
                tx.batch_execute(&set_lock_timeout(self.inner.lock_timeout)).await.map_err(backend)?;
                let row = tx.query_one(&release, &params).await.map_err(backend)?;
                tx.commit().await.map_err(backend)?;
                row
            }
            Err(e) => return Err(backend(e)),
        };
        let deleted: i64 = released.try_get(0).map_err(backend)?;
        if deleted == 0 { Err(StoreError::Fenced) } else { Ok(()) }
    }
}

/// A window from [`WINDOW_COLUMNS`](super::schema::WINDOW_COLUMNS).
pub(super) fn window_of(row: &Row) -> Result<BudgetWindow, StoreError> {
    let unreadable = |e: tokio_postgres::Error| StoreError::Corrupt(format!("a budget window: {e}"));
    let get_i64 = |at: usize| row.try_get::<_, i64>(at).map_err(unreadable);
    let by: Option<String> = row.try_get(7).map_err(unreadable)?;
    let adjusted = match by {
        Some(by) => Some(Adjusted {
            by,
            at_ms: row.try_get::<_, Option<i64>>(8).map_err(unreadable)?.unwrap_or(0),
            change: row.try_get::<_, Option<String>>(9).map_err(unreadable)?.unwrap_or_default(),
            note: row.try_get::<_, Option<String>>(10).map_err(unreadable)?.unwrap_or_default(),
        }),
        None => None,
    };
    Ok(BudgetWindow::new(
        row.try_get(0).map_err(unreadable)?,
        row.try_get(1).map_err(unreadable)?,
        (get_i64(2)?, get_i64(3)?),
        get_i64(4)?,
        get_i64(5)?,
        get_i64(6)?,
        adjusted,
    ))
}
