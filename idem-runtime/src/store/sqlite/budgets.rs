//! Budgets in SQLite: the windows in `idem_budgets`, and each record's charge in its own
//! row (`charge_budget`, `charge_scope`, `charge_start_ms`, `charge_amount`), so that the
//! charge lives and dies with the record: a purge takes both, a take-over's new row keeps
//! it, a release refunds it in the transaction that deletes the row.
//!
//! A charged reservation is one `BEGIN IMMEDIATE` transaction in this store's turn to
//! write: read the record (a repeat charges nothing), read or create the window by
//! SQLite's clock (one statement), refuse or charge, insert the record. SQLite's write lock makes the
//! check and the charge one step across the threads and processes on the file. It does not
//! share its commit with other callers' writes (see [`writers`](super::writers)): a commit
//! that fails would take the others' writes with it, and it must see their effects first.

use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};

use super::ops::read_record;
use super::{SqliteStore, backend, duration_ms};
use crate::store::budget::{
    Adjusted, Adjustment, BudgetChange, BudgetQuery, BudgetWindow, Charge, WINDOWS_KEPT_MS, change_text,
    check_adjustment, raised_by, takes, window_start,
};
use crate::store::{BudgetStore, RecordId, Reservation, Reserve, StoreError, Token};

/// SQLite's clock, as every other statement of the store reads it.
const NOW: &str = concat!("SELECT ", now_ms!());

/// Creates the window if it is new; either way it takes the charge's limit (limits live in
/// the tool's code: the last charge's is the window's), and answers what the charge is
/// checked against, in the same statement.
const UPSERT_WINDOW: &str = "INSERT INTO idem_budgets (budget, scope, start_ms, window_ms, used, lim) \
     VALUES (?1, ?2, ?3, ?4, 0, ?5) ON CONFLICT (budget, scope, start_ms) DO UPDATE SET lim = excluded.lim \
     RETURNING used, raised";

/// A window's columns, as [`read_window`] reads them: a macro, so that the statements
/// below are `concat!`ed constants, prepared once per connection and never formatted.
macro_rules! window_columns {
    () => {
        "budget, scope, start_ms, window_ms, used, lim, raised, adjusted_by, adjusted_at_ms, adjusted_change, adjusted_note"
    };
}

const WINDOW: &str =
    concat!("SELECT ", window_columns!(), " FROM idem_budgets WHERE budget = ?1 AND scope = ?2 AND start_ms = ?3");

const CHARGE: &str = "UPDATE idem_budgets SET used = used + ?4 WHERE budget = ?1 AND scope = ?2 AND start_ms = ?3";

/// The record, with what it was charged and when (the window's start is read from the same
/// clock reading as its times).
const INSERT_CHARGED: &str = "INSERT INTO idem_records (namespace, key, state, request, created_at_ms, \
     updated_at_ms, lease_until_ms, charge_budget, charge_scope, charge_start_ms, charge_amount) \
     VALUES (?1, ?2, 'in_progress', ?3, ?4, ?4, ?4 + ?5, ?6, ?7, ?8, ?9)";

/// Gives a released record's charge back to the window it was charged to (never below 0:
/// an operator may have reset the window meanwhile).
const REFUND: &str = "UPDATE idem_budgets SET used = max(used - ?4, 0) \
     WHERE budget = ?1 AND scope = ?2 AND start_ms = ?3";

const RELEASE_HELD: &str = "DELETE FROM idem_records WHERE token = ?1 AND namespace = ?2 AND key = ?3 \
     AND state = 'in_progress' RETURNING charge_budget, charge_scope, charge_start_ms, charge_amount";

const RELEASE_ANY: &str = "DELETE FROM idem_records WHERE namespace = ?1 AND key = ?2 AND state = 'in_progress' \
     RETURNING charge_budget, charge_scope, charge_start_ms, charge_amount";

const CHARGE_OF: &str =
    "SELECT charge_budget, charge_scope, charge_start_ms, charge_amount FROM idem_records WHERE token = ?1";

/// `?1` budget, `?2` scope (NULL: any), `?3` only windows that have not ended by `?4`.
const LIST: &str = concat!(
    "SELECT ",
    window_columns!(),
    " FROM idem_budgets WHERE (?1 IS NULL OR budget = ?1) AND (?2 IS NULL OR scope = ?2) \
     AND (NOT ?3 OR start_ms + window_ms > ?4) ORDER BY start_ms DESC, budget, scope"
);

const ADJUST: &str = "UPDATE idem_budgets SET raised = raised + ?4, used = CASE WHEN ?5 THEN 0 ELSE used END, \
     adjusted_by = ?6, adjusted_at_ms = ?7, adjusted_change = ?8, adjusted_note = ?9 \
     WHERE budget = ?1 AND scope = ?2 AND start_ms = ?3";

const PURGE_WINDOWS: &str = concat!("DELETE FROM idem_budgets WHERE start_ms + window_ms + ?1 <= ", now_ms!());

/// Which in-progress record a release deletes: the one a token holds, or (an operator's)
/// whichever holds the key.
pub(super) enum Held<'a> {
    Token(i64, RecordId<'a>),
    Any(RecordId<'a>),
}

/// A charged reservation: see the module's docs.
impl BudgetStore for SqliteStore {
    async fn reserve_charged(&self, request: Reserve<'_>, charge: Charge<'_>) -> Result<Reservation, StoreError> {
        let charge = &charge;
        let id = request.id;
        self.with_conn("reserve", |conn| {
            // A repeat finds its record with one read, without taking the write lock.
            if let Some(record) = read_record(conn, id)? {
                return Ok(Reservation::Existing(record));
            }
            let _turn = self.wait_turn()?;
            self.check_file()?;
            let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate).map_err(backend)?;
            // Dropping `tx` without a commit rolls it back: nothing charged, no record.
            if let Some(record) = read_record(&tx, id)? {
                return Ok(Reservation::Existing(record));
            }
            let now: i64 =
                tx.prepare_cached(NOW).and_then(|mut stmt| stmt.query_row([], |row| row.get(0))).map_err(backend)?;
            let start_ms = window_start(now, charge.window_ms);
            let key = (charge.budget, charge.scope, start_ms);
            let upsert = params![charge.budget, charge.scope, start_ms, charge.window_ms, charge.limit];
            let (used, raised): (i64, i64) = tx
                .prepare_cached(UPSERT_WINDOW)
                .and_then(|mut stmt| stmt.query_row(upsert, |row| Ok((row.get(0)?, row.get(1)?))))
                .map_err(backend)?;
            if !takes(used, raised, charge) {
                // Only a refusal reads the whole window, to show it.
                let window = window_of(&tx, key)?
                    .ok_or_else(|| StoreError::Backend("the window just written is gone".into()))?;
                return Ok(Reservation::OverBudget(window));
            }
            let charged = params![charge.budget, charge.scope, start_ms, charge.amount];
            tx.prepare_cached(CHARGE).and_then(|mut stmt| stmt.execute(charged)).map_err(backend)?;
            let lease = duration_ms(request.lease);
            let record = params![
                id.namespace,
                id.key,
                request.request,
                now,
                lease,
                charge.budget,
                charge.scope,
                start_ms,
                charge.amount
            ];
            tx.prepare_cached(INSERT_CHARGED).and_then(|mut stmt| stmt.execute(record)).map_err(backend)?;
            let token = tx.last_insert_rowid();
            tx.commit().map_err(backend)?;
            let token = u64::try_from(token).map_err(|e| StoreError::Backend(e.into()))?;
            Ok(Reservation::Acquired { token: Token(token) })
        })
    }
}

impl SqliteStore {
    /// Deletes an in-progress record and refunds its charge, in one transaction:
    /// [`StoreError::Fenced`] when there is no such record.
    pub(super) fn release_refunding(&self, operation: &'static str, held: Held<'_>) -> Result<(), StoreError> {
        self.with_write(operation, |conn| {
            let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate).map_err(backend)?;
            let charged = |row: &rusqlite::Row<'_>| -> rusqlite::Result<[Value; 4]> {
                Ok([row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?])
            };
            let deleted = match held {
                Held::Token(token, id) => tx
                    .prepare_cached(RELEASE_HELD)
                    .and_then(|mut stmt| stmt.query_row(params![token, id.namespace, id.key], charged).optional()),
                Held::Any(id) => tx
                    .prepare_cached(RELEASE_ANY)
                    .and_then(|mut stmt| stmt.query_row(params![id.namespace, id.key], charged).optional()),
            };
            let Some([budget, scope, start_ms, amount]) = deleted.map_err(backend)? else {
                return Err(StoreError::Fenced);
            };
            if amount != Value::Null {
                let refund = params![budget, scope, start_ms, amount];
                tx.prepare_cached(REFUND).and_then(|mut stmt| stmt.execute(refund)).map_err(backend)?;
            }
            tx.commit().map_err(backend)
        })
    }

    /// [`Admin::budgets`](crate::store::Admin::budgets).
    pub(super) fn list_budgets(&self, query: &BudgetQuery<'_>) -> Result<Vec<BudgetWindow>, StoreError> {
        self.with_conn("budgets", |conn| {
            let now: i64 =
                conn.prepare_cached(NOW).and_then(|mut stmt| stmt.query_row([], |row| row.get(0))).map_err(backend)?;
            let mut stmt = conn.prepare_cached(LIST).map_err(backend)?;
            let rows =
                stmt.query_map(params![query.budget, query.scope, query.current, now], read_window).map_err(backend)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(backend)
        })
    }

    /// [`Admin::adjust_budget`](crate::store::Admin::adjust_budget).
    pub(super) fn adjust(&self, adjustment: &Adjustment<'_>) -> Result<BudgetWindow, StoreError> {
        check_adjustment(adjustment)?;
        self.with_write("adjust budget", |conn| {
            let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate).map_err(backend)?;
            let Some(window) = window_of(&tx, adjustment.window)? else { return Err(StoreError::Fenced) };
            let now: i64 =
                tx.prepare_cached(NOW).and_then(|mut stmt| stmt.query_row([], |row| row.get(0))).map_err(backend)?;
            let change = change_text(adjustment.change, window.used);
            let (raise, reset) = match adjustment.change {
                BudgetChange::Raise(by) => (raised_by(window.raised, by).map(|_| by)?, false),
                BudgetChange::Reset => (0, true),
            };
            let (budget, scope, start_ms) = adjustment.window;
            let adjust = params![budget, scope, start_ms, raise, reset, adjustment.by, now, change, adjustment.note];
            tx.prepare_cached(ADJUST).and_then(|mut stmt| stmt.execute(adjust)).map_err(backend)?;
            let adjusted = window_of(&tx, adjustment.window)?.ok_or(StoreError::Fenced)?;
            tx.commit().map_err(backend)?;
            Ok(adjusted)
        })
    }
}

/// What the row of `token` was charged (four NULLs when nothing), for a reissue to keep.
pub(super) fn charge_of(conn: &Connection, token: i64) -> Result<[Value; 4], StoreError> {
    let mut stmt = conn.prepare_cached(CHARGE_OF).map_err(backend)?;
    let charged = stmt
        .query_row([token], |row| Ok([row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?]))
        .optional()
        .map_err(backend)?;
    Ok(charged.unwrap_or([Value::Null, Value::Null, Value::Null, Value::Null]))
}

/// Deletes the windows that ended [`WINDOWS_KEPT_MS`] ago or more.
pub(super) fn purge_windows(conn: &Connection) -> Result<(), StoreError> {
    let mut stmt = conn.prepare_cached(PURGE_WINDOWS).map_err(backend)?;
    stmt.execute([WINDOWS_KEPT_MS]).map(drop).map_err(backend)
}

/// The window under `(budget, scope, start)`, if it was ever charged.
fn window_of(
    conn: &Connection,
    (budget, scope, start_ms): (&str, &str, i64),
) -> Result<Option<BudgetWindow>, StoreError> {
    let mut stmt = conn.prepare_cached(WINDOW).map_err(backend)?;
    stmt.query_row(params![budget, scope, start_ms], read_window).optional().map_err(backend)
}

/// A window from the columns of `window_columns!`.
fn read_window(row: &rusqlite::Row<'_>) -> rusqlite::Result<BudgetWindow> {
    let adjusted = match row.get::<_, Option<String>>(7)? {
        Some(by) => Some(Adjusted { by, at_ms: row.get(8)?, change: row.get(9)?, note: row.get(10)? }),
        None => None,
    };
    Ok(BudgetWindow::new(
        row.get(0)?,
        row.get(1)?,
        (row.get(2)?, row.get(3)?),
        row.get(4)?,
        row.get(5)?,
        row.get(6)?,
        adjusted,
    ))
}
