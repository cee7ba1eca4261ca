//! Operator access to an SQLite store: list records, and settle a stuck key by hand after
//! checking with the provider. Tools never call these; the `idem` command does.

use std::time::Duration;

use rusqlite::params;

use super::{SqliteStore, backend, duration_ms, read_record};
use crate::store::{Record, RecordId, RecordState, StoreError};
use crate::testing::conformance::PlantRecord;

/// Which records [`SqliteStore::list`] returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StateFilter {
    /// Every record.
    #[default]
    All,
    /// Reserved and not settled, lease live or not.
    InProgress,
    /// Reserved, not settled, and its lease has ended: the outcome is unknown.
    Abandoned,
    /// Completed with a result.
    Completed,
    /// Settled with a kept error.
    Failed,
}

/// A record with the key it belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedRecord {
    /// The tool's namespace.
    pub namespace: String,
    /// The derived key.
    pub key: String,
    /// The record.
    pub record: Record,
}

const SET_DONE: &str = concat!(
    "UPDATE idem_records SET state = 'completed', result = ?1, lease_until_ms = NULL, progress = NULL, \
     updated_at_ms = ",
    now_ms!(),
    ", retain_until_ms = ",
    now_ms!(),
    " + ?2 WHERE namespace = ?3 AND key = ?4 AND state = 'in_progress'"
);

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

/// How many records of one namespace are in one state: what [`SqliteStore::count`] returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateCount {
    /// The tool's namespace.
    pub namespace: String,
    /// `in_progress` (lease live), `abandoned` (lease ended), `completed` or `failed`; a
    /// state a newer idem wrote is given as stored.
    pub state: String,
    /// How many.
    pub records: u64,
    /// When the oldest of them was reserved, in milliseconds since the Unix epoch.
    pub oldest_ms: i64,
}

const RELEASE_ANY: &str = "DELETE FROM idem_records WHERE namespace = ?1 AND key = ?2 AND state = 'in_progress'";

impl SqliteStore {
    /// Up to `limit` records matching `filter` (and `namespace`, when given), oldest first.
    pub fn list(
        &self,
        filter: StateFilter,
        namespace: Option<&str>,
        limit: usize,
    ) -> Result<Vec<ListedRecord>, StoreError> {
        self.list_in_scope(filter, namespace, None, limit)
    }

    /// [`list`](Self::list), of one scope's records only when `scope` is given: those of
    /// tools with `scope = expr` whose scope was `scope` (see [`scope_prefix`](crate::scope_prefix)).
    pub fn list_in_scope(
        &self,
        filter: StateFilter,
        namespace: Option<&str>,
        scope: Option<&str>,
        limit: usize,
    ) -> Result<Vec<ListedRecord>, StoreError> {
        let prefix = scope.map(crate::scope_prefix);
        let state = match filter {
            StateFilter::All => None,
            StateFilter::InProgress | StateFilter::Abandoned => Some("in_progress"),
            StateFilter::Completed => Some("completed"),
            StateFilter::Failed => Some("failed"),
        };
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with_conn("list", |conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT namespace, key FROM idem_records WHERE (?1 IS NULL OR state = ?1) \
                     AND (?2 IS NULL OR namespace = ?2) AND (?3 IS NULL OR substr(key, 1, length(?3)) = ?3) \
                     ORDER BY created_at_ms, token",
                )
                .map_err(backend)?;
            let ids = stmt
                .query_map(params![state, namespace, prefix], |row| {
                    Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
                })
                .map_err(backend)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(backend)?;
            let mut listed = Vec::new();
            for (namespace, key) in ids {
                if listed.len() as i64 >= limit {
                    break;
                }
                let Some(record) = read_record(conn, RecordId { namespace: &namespace, key: &key })? else {
                    continue; // settled and purged since the listing
                };
                let abandoned = matches!(record.state, RecordState::InProgress { lease_expired: true, .. });
                if filter != StateFilter::Abandoned || abandoned {
                    listed.push(ListedRecord { namespace, key, record });
                }
            }
            Ok(listed)
        })
    }

    /// Records per namespace and state, by namespace then state: what an operator looks
    /// at first (how many calls were abandoned, and since when).
    pub fn count(&self) -> Result<Vec<StateCount>, StoreError> {
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

    /// Marks an in-progress key done by hand with `result` (JSON), kept for `retain`: for
    /// an operator who checked with the provider that the action happened. Whoever still
    /// holds the key is fenced. [`StoreError::Fenced`] when the key is not in progress.
    pub fn resolve_done(&self, id: RecordId<'_>, result: &str, retain: Duration) -> Result<(), StoreError> {
        let changed = self.with_conn("resolve", |conn| {
            let mut stmt = conn.prepare_cached(SET_DONE).map_err(backend)?;
            stmt.execute(params![result, duration_ms(retain), id.namespace, id.key]).map_err(backend)
        })?;
        if changed == 0 { Err(StoreError::Fenced) } else { Ok(()) }
    }

    /// Releases an in-progress key by hand, so that the next call runs the action: for an
    /// operator who checked with the provider that it did not happen. Whoever still holds
    /// the key is fenced. [`StoreError::Fenced`] when the key is not in progress.
    pub fn resolve_release(&self, id: RecordId<'_>) -> Result<(), StoreError> {
        let changed = self.with_conn("resolve", |conn| {
            let mut stmt = conn.prepare_cached(RELEASE_ANY).map_err(backend)?;
            stmt.execute(params![id.namespace, id.key]).map_err(backend)
        })?;
        if changed == 0 { Err(StoreError::Fenced) } else { Ok(()) }
    }
}

impl PlantRecord for SqliteStore {
    fn plant_state(&self, id: RecordId<'_>, state: &str) -> Result<(), StoreError> {
        self.with_conn("plant", |conn| {
            conn.execute(PLANT, params![id.namespace, id.key, state]).map(drop).map_err(backend)
        })
    }
}
