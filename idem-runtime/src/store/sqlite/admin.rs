//! [`Admin`] for SQLite: what an operator does with a store file.

use std::time::Duration;

use rusqlite::types::Value;
use rusqlite::{OptionalExtension, Transaction, TransactionBehavior, params};

use super::budgets::Held;
use super::ops::{read_record, reissue};
use super::write::text;
use super::{SqliteStore, backend, duration_ms};
use crate::store::budget::{Adjustment, BudgetQuery, BudgetWindow};
use crate::store::{Admin, ListQuery, ListedRecord, RecordId, StateCount, StoreError};

const SET_DONE: &str = concat!(
    "UPDATE idem_records SET state = 'completed', result = ?1, lease_until_ms = NULL, progress = NULL, \
     updated_at_ms = ",
    now_ms!(),
    ", retain_until_ms = ",
    now_ms!(),
    " + ?2 WHERE namespace = ?3 AND key = ?4 AND state = 'in_progress'"
);

#[cfg(any(test, feature = "testing"))]
const PLANT: &str = concat!(
    "INSERT INTO idem_records (namespace, key, state, request, created_at_ms, updated_at_ms) SELECT ?1, ?2, ?3, '{}', ms, ms FROM (SELECT ",
    now_ms!(),
    " AS ms)"
);

/// Records per namespace and state, an expired in-progress record counted as abandoned.
const COUNT: &str = concat!(
    "SELECT namespace, CASE WHEN state = 'in_progress' AND lease_until_ms <= ",
    now_ms!(),
    " THEN 'abandoned' ELSE state END AS shown, count(*), min(created_at_ms) FROM idem_records \
     GROUP BY namespace, shown ORDER BY namespace, shown"
);

/// The conditions of a listing: `?1` state, `?2` namespace, `?3` key prefix, `?4` minimum
/// age in ms, `?5` whether the lease is live.
macro_rules! selected {
    () => {
        concat!(
            "(?1 IS NULL OR state = ?1) AND (?2 IS NULL OR namespace = ?2) \
             AND (?3 IS NULL OR substr(key, 1, length(?3)) = ?3) AND (?4 IS NULL OR created_at_ms <= ",
            now_ms!(),
            " - ?4) AND (?5 IS NULL OR ?5 = (lease_until_ms > ",
            now_ms!(),
            "))"
        )
    };
}

const LIST: &str =
    concat!("SELECT namespace, key FROM idem_records WHERE ", selected!(), " ORDER BY created_at_ms, token LIMIT ?6");

const COUNT_SELECTED: &str = concat!("SELECT count(*) FROM idem_records WHERE ", selected!());

/// A settled record, to reopen: its token, request and reservation time.
const SETTLED: &str = "SELECT token, request, created_at_ms FROM idem_records WHERE namespace = ?1 AND key = ?2 \
     AND state IN ('completed', 'failed')";

/// The operator's operations, each one statement (a listing then reads each record as
/// `read` does).
impl Admin for SqliteStore {
    fn describe(&self) -> String {
        format!("SQLite {}", self.path().display())
    }

    fn list(&self, query: &ListQuery<'_>) -> Result<Vec<ListedRecord>, StoreError> {
        let state = query.state.stored_state();
        let lease_live = query.state.lease_live();
        let older_than = query.older_than.map(duration_ms);
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let params = params![state, query.namespace, query.key_prefix, older_than, lease_live, limit];
        self.with_conn("list", |conn| {
            let mut stmt = conn.prepare_cached(LIST).map_err(backend)?;
            let ids = stmt
                .query_map(params, |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?)))
                .map_err(backend)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(backend)?;
            let mut listed = Vec::with_capacity(ids.len());
            for (namespace, key) in ids {
                let Some(record) = read_record(conn, RecordId { namespace: &namespace, key: &key })? else {
                    continue; // settled and purged since the listing
                };
                listed.push(ListedRecord { namespace, key, record });
            }
            Ok(listed)
        })
    }

    fn count_matching(&self, query: &ListQuery<'_>) -> Result<u64, StoreError> {
        let (state, lease_live) = (query.state.stored_state(), query.state.lease_live());
        let older_than = query.older_than.map(duration_ms);
        let params = params![state, query.namespace, query.key_prefix, older_than, lease_live];
        self.with_conn("count", |conn| {
            let mut stmt = conn.prepare_cached(COUNT_SELECTED).map_err(backend)?;
            let records: i64 = stmt.query_row(params, |row| row.get(0)).map_err(backend)?;
            Ok(u64::try_from(records).unwrap_or(0))
        })
    }

    fn count(&self) -> Result<Vec<StateCount>, StoreError> {
        self.with_conn("count", |conn| {
            let mut stmt = conn.prepare_cached(COUNT).map_err(backend)?;
            let rows = stmt
                .query_map([], |row| {
                    let records: i64 = row.get(2)?;
                    Ok(StateCount {
                        namespace: row.get(0)?,
                        state: row.get(1)?,
                        records: u64::try_from(records).unwrap_or(0),
                        oldest_ms: row.get(3)?,
                    })
                })
                .map_err(backend)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(backend)
        })
    }

    fn resolve_done(&self, id: RecordId<'_>, result: &str, retain: Duration) -> Result<(), StoreError> {
        let retain = Value::Integer(duration_ms(retain));
        self.execute_fenced("resolve", SET_DONE, vec![text(result), retain, text(id.namespace), text(id.key)])
    }

    fn resolve_release(&self, id: RecordId<'_>) -> Result<(), StoreError> {
        // Refunds the record's charge in the same transaction.
        self.release_refunding("resolve", Held::Any(id))
    }

    fn budgets(&self, query: &BudgetQuery<'_>) -> Result<Vec<BudgetWindow>, StoreError> {
        self.list_budgets(query)
    }

    fn adjust_budget(&self, adjustment: &Adjustment<'_>) -> Result<BudgetWindow, StoreError> {
        self.adjust(adjustment)
    }

    fn reopen(&self, id: RecordId<'_>) -> Result<(), StoreError> {
        // A new token is a new row (tokens are row ids), as in a take-over: the record is
        // deleted and written again, in progress with its lease ended now.
        self.with_write("reopen", |conn| {
            let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate).map_err(backend)?;
            let settled: Option<(i64, String, i64)> = tx
                .prepare_cached(SETTLED)
                .and_then(|mut stmt| {
                    stmt.query_row((id.namespace, id.key), |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?))).optional()
                })
                .map_err(backend)?;
            let Some((token, request, created_at_ms)) = settled else { return Err(StoreError::Fenced) };
            reissue(&tx, token, id, &request, created_at_ms, 0)?;
            tx.commit().map_err(backend)
        })
    }
}

impl SqliteStore {
    /// Writes a record in `state` as this store keeps it, bypassing every rule of its
    /// operations: what `testing::conformance::PlantRecord` plants for tests.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn plant_record(&self, id: RecordId<'_>, state: &str) -> Result<(), StoreError> {
        self.with_write("plant", |conn| {
            conn.execute(PLANT, params![id.namespace, id.key, state]).map(drop).map_err(backend)
        })
    }
}
