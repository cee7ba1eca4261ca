//! Budgets in PostgreSQL: the windows in `idem_budgets`, each record's charge in its own
//! row (`charge_budget`, `charge_scope`, `charge_start_ms`, `charge_amount`).
//!
//! A charged reservation is one round trip: one statement calls the schema's
//! `idem_reserve_charged` function (migration 5), which runs in that statement's
//! transaction what the client once did in five (read, begin, charge, insert, commit):
//!
//! - a record that exists is returned: a repeat charges nothing and locks no window (after
//!   a stretch of repeats, a plain `SELECT` reads first, as for a reservation without a
//!   budget: see `store::repeats`);
//! - the charge (an `INSERT .. ON CONFLICT DO UPDATE .. WHERE used + amount <= lim +
//!   raised`, added in `numeric` so that sums past a `bigint` are refused rather than fail)
//!   locks the window's row, so concurrent charges of one window take turns and each sees
//!   the last one's use; a charge that does not fit changes nothing;
//! - then the record's insert, carrying its charge; a record another caller committed
//!   meanwhile wins, and the charge is undone before anyone could see it.
//!
//! The window's row stays locked until the statement ends, so the charge waits for it up
//! to the store's [`lock_timeout`](super::PgStoreBuilder::lock_timeout) (5 s), not
//! [`IDEM_LOCK_WAIT`] (100 ms): many first calls of one budget queue there. The record's
//! insert still waits at most `IDEM_LOCK_WAIT` for a [`begin`](super::PgStore::begin)
//! transaction that holds its key.
//!
//! [`IDEM_LOCK_WAIT`]: super::IDEM_LOCK_WAIT

use tokio_postgres::Row;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;

use super::ops::{decode, token_of};
use super::schema::{Sql, lock_timeout_ms, set_lock_timeout};
use super::{IDEM_LOCK_WAIT, PgStore, backend, duration_ms};
use crate::store::budget::{Adjusted, BudgetWindow, Charge};
use crate::store::{BudgetStore, RecordId, Reservation, Reserve, StoreError, Token};

/// Where the record's columns start in a row of `idem_reserve_charged`, after what happened.
const RECORD_AT: usize = 1;
/// Where the window's columns start: after the record's ten.
const WINDOW_AT: usize = 11;

/// A charged reservation: see the module's docs.
impl BudgetStore for PgStore {
    async fn reserve_charged(&self, request: Reserve<'_>, charge: Charge<'_>) -> Result<Reservation, StoreError> {
        self.operation("reserve", self.counted(self.reserve_charging(request, charge))).await
    }
}

impl PgStore {
    async fn reserve_charging(&self, request: Reserve<'_>, charge: Charge<'_>) -> Result<Reservation, StoreError> {
        let id = request.id;
        let lease = duration_ms(request.lease);
        let [window_wait, record_wait] = [self.inner.lock_timeout, IDEM_LOCK_WAIT].map(lock_timeout_ms);
        let params: [&(dyn ToSql + Sync); 12] = [
            &id.namespace,
            &id.key,
            &request.request,
            &lease,
            &charge.budget,
            &charge.scope,
            &charge.window_ms,
            &charge.limit,
            &charge.amount,
            &charge.past_limit,
            &window_wait,
            &record_wait,
        ];
        let mut conn = self.conn().await?;
        // As for a reservation without a budget: a replay then costs a `SELECT`, not the
        // function's statements.
        if let Some(existing) = self.read_first(&mut conn, id).await? {
            return Ok(Reservation::Existing(existing));
        }
        let reserve = conn.statement(&self.inner.queries, Sql::ReserveCharged).await?;
        let row = conn.client.query_one(&reserve, &params).await.map_err(charge_failed)?;
        let outcome: &str = row.try_get(0).map_err(backend)?;
        match outcome {
            "acquired" => Ok(Reservation::Acquired { token: token_of(id, row.try_get(RECORD_AT))? }),
            "existing" => Ok(Reservation::Existing(decode(id, &row, RECORD_AT)?)),
            "over" => Ok(Reservation::OverBudget(window_at(&row, WINDOW_AT)?)),
            other => Err(StoreError::Backend(format!("idem_reserve_charged answered {other:?}").into())),
        }
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

/// A charged reservation's failure: [`StoreError::Locked`] when the record's insert gave up
/// waiting for a row that a [`PgStore::begin`] transaction inserted and has not committed;
/// a charge that gave up waiting for its window's row (charges queueing past the store's
/// lock timeout) is the backend's error, as any statement's that waited that long.
fn charge_failed(error: tokio_postgres::Error) -> StoreError {
    let waited_for_window = || {
        let db = error.as_db_error();
        db.and_then(|db| db.where_()).is_some_and(|context| context.contains("INSERT INTO idem_budgets"))
    };
    if error.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) && !waited_for_window() {
        StoreError::Locked
    } else {
        backend(error)
    }
}

/// A window from [`WINDOW_COLUMNS`](super::schema::WINDOW_COLUMNS).
pub(super) fn window_of(row: &Row) -> Result<BudgetWindow, StoreError> {
    window_at(row, 0)
}

/// A window from [`WINDOW_COLUMNS`](super::schema::WINDOW_COLUMNS), starting at column `at`.
fn window_at(row: &Row, at: usize) -> Result<BudgetWindow, StoreError> {
    let unreadable = |e: tokio_postgres::Error| StoreError::Corrupt(format!("a budget window: {e}"));
    let get_i64 = |column: usize| row.try_get::<_, i64>(at + column).map_err(unreadable);
    let by: Option<String> = row.try_get(at + 7).map_err(unreadable)?;
    let adjusted = match by {
        Some(by) => Some(Adjusted {
            by,
            at_ms: row.try_get::<_, Option<i64>>(at + 8).map_err(unreadable)?.unwrap_or(0),
            change: row.try_get::<_, Option<String>>(at + 9).map_err(unreadable)?.unwrap_or_default(),
            note: row.try_get::<_, Option<String>>(at + 10).map_err(unreadable)?.unwrap_or_default(),
        }),
        None => None,
    };
    Ok(BudgetWindow::new(
        row.try_get(at).map_err(unreadable)?,
        row.try_get(at + 1).map_err(unreadable)?,
        (get_i64(2)?, get_i64(3)?),
        get_i64(4)?,
        get_i64(5)?,
        get_i64(6)?,
        adjusted,
    ))
}
