//! The store protocol on SQLite: one prepared statement (or one short transaction) per
//! operation, fenced by token, every time read from SQLite's clock.

use std::time::Duration;

use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior};

use super::write::text;
use super::writers::Shared;
use super::{SqliteStore, backend, budgets};
use crate::store::{
    Completion, Record, RecordId, RecordState, Renew, Reservation, Reserve, Store, StoreError, Token, duration_ms,
};

/// How often `reserve` retries when the record it lost to vanished before it could be read.
const RESERVE_ROUNDS: usize = 3;

/// Only ever runs after a read found no record, so a conflict means another caller won a
/// race for the key; the new row's rowid is the token. It neither reads `idem_records`
/// nor uses `RETURNING`: either makes SQLite build a temporary table on every call.
pub(super) const INSERT: &str = concat!(
    "INSERT INTO idem_records(namespace,key,state,request,created_at_ms,updated_at_ms,lease_until_ms)",
    "SELECT ?1,?2,'in_progress',?3,ms,ms,ms+?4 FROM(SELECT ",
    now_ms!(),
    " AS ms)WHERE true ON CONFLICT(namespace,key)DO NOTHING"
);

/// The columns [`read_record`] reads. The lease's end is compared with the clock only for
/// in-progress records: reading the clock costs more than the rest of a replay's row.
/// `progress` comes last: a settled row has none, so it costs a replay no conversion.
const SELECT: &str = concat!(
    "SELECT token,state,request,result,created_at_ms,updated_at_ms,lease_until_ms,",
    "CASE WHEN lease_until_ms NOTNULL THEN lease_until_ms<=",
    now_ms!(),
    " END,retain_until_ms,progress FROM idem_records WHERE namespace=?1 AND key=?2"
);

/// The abandoned row, if `token` still holds it and its lease has ended.
const TAKE_OVER_FIND: &str = concat!(
    "SELECT request, created_at_ms FROM idem_records WHERE token = ?1 AND namespace = ?2 AND key = ?3 ",
    "AND state = 'in_progress' AND lease_until_ms <= ",
    now_ms!()
);

const TAKE_OVER_DELETE: &str = "DELETE FROM idem_records WHERE token = ?1";

/// The new row of a reissued record keeps what its reservation charged (`?6`..`?9`).
const TAKE_OVER_INSERT: &str = concat!(
    "INSERT INTO idem_records (namespace, key, state, request, created_at_ms, updated_at_ms, \
     lease_until_ms, charge_budget, charge_scope, charge_start_ms, charge_amount) \
     SELECT ?1, ?2, 'in_progress', ?3, ?4, now.ms, now.ms + ?5, ?6, ?7, ?8, ?9 FROM (SELECT ",
    now_ms!(),
    " AS ms) AS now RETURNING token"
);

const ABANDON: &str = concat!(
    "UPDATE idem_records SET lease_until_ms = ",
    now_ms!(),
    ", updated_at_ms = ",
    now_ms!(),
    " WHERE token = ?1 AND namespace = ?2 AND key = ?3 AND state = 'in_progress'"
);

/// A renewal by the holder: the lease ends `?4` ms after SQLite's now, even when it had
/// already ended (nobody took it over, or the token would not match); a NULL `?5` keeps
/// the stored progress message.
const RENEW: &str = concat!(
    "UPDATE idem_records SET lease_until_ms=",
    now_ms!(),
    "+?4,updated_at_ms=",
    now_ms!(),
    ",progress=COALESCE(?5,progress) WHERE token=?1 AND namespace=?2 AND key=?3 AND state='in_progress'"
);

/// Settles a record: its progress message goes with its lease.
pub(super) const COMPLETE: &str = concat!(
    "UPDATE idem_records SET state=?1,result=?2,updated_at_ms=",
    now_ms!(),
    ",retain_until_ms=",
    now_ms!(),
    "+?6,lease_until_ms=NULL,progress=NULL WHERE token=?3 AND namespace=?4 AND key=?5 AND state='in_progress'"
);

/// Releases an uncharged record only: a charged one is released with its refund
/// ([`budgets::Held`]).
const RELEASE: &str = "DELETE FROM idem_records \
     WHERE token = ?1 AND namespace = ?2 AND key = ?3 AND state = 'in_progress' AND charge_amount IS NULL";

const PURGE: &str = concat!(
    "DELETE FROM idem_records WHERE token IN (SELECT token FROM idem_records ",
    "WHERE retain_until_ms <= ",
    now_ms!(),
    " LIMIT ?1)"
);

/// Gives the in-progress record `token` holds a new, larger token (a new row: tokens are
/// row ids), its lease ending `lease_ms` from now: a take-over, or an operator's reopen.
/// The new row keeps the old one's charge: an effect may have happened.
pub(super) fn reissue(
    tx: &Transaction<'_>,
    token: i64,
    id: RecordId<'_>,
    request: &str,
    created_at_ms: i64,
    lease_ms: i64,
) -> Result<i64, StoreError> {
    let charged = budgets::charge_of(tx, token)?;
    tx.prepare_cached(TAKE_OVER_DELETE).and_then(|mut stmt| stmt.execute([token])).map_err(backend)?;
    let mut insert = tx.prepare_cached(TAKE_OVER_INSERT).map_err(backend)?;
    let [budget, scope, start_ms, amount] = charged;
    let params =
        rusqlite::params![id.namespace, id.key, request, created_at_ms, lease_ms, budget, scope, start_ms, amount];
    insert.query_row(params, |row| row.get(0)).map_err(backend)
}

/// Reads one record row (the columns of [`SELECT`]). Each state's own columns are read
/// only for that state: a replay never converts the lease or progress columns.
pub(super) fn read_record(conn: &Connection, id: RecordId<'_>) -> Result<Option<Record>, StoreError> {
    let corrupt = |why: String| StoreError::Corrupt(format!("{}/{}: {why}", id.namespace, id.key));
    let mut stmt = conn.prepare_cached(SELECT).map_err(backend)?;
    let row = stmt
        .query_row((id.namespace, id.key), |row| {
            let state = row.get_ref(1)?.as_str()?;
            let in_progress = state == "in_progress";
            let result = if in_progress { None } else { row.get(3)? };
            let (lease, progress) =
                if in_progress { ((row.get(6)?, row.get(7)?), row.get(9)?) } else { ((None, None), None) };
            let state = RecordState::from_columns(state, result, lease, progress);
            let token: i64 = row.get(0)?;
            Ok((token, state, row.get(2)?, (row.get(4)?, row.get(5)?, row.get(8)?)))
        })
        .optional()
        .map_err(|e| match e {
            rusqlite::Error::InvalidColumnType(..)
            | rusqlite::Error::FromSqlConversionFailure(..)
            | rusqlite::Error::IntegralValueOutOfRange(..) => corrupt(e.to_string()),
            e => backend(e),
        })?;
    let Some((token, state, request, (created_at_ms, updated_at_ms, retain_until_ms))) = row else {
        return Ok(None);
    };
    let state = state.map_err(corrupt)?;
    let token = Token(u64::try_from(token).map_err(|_| corrupt(format!("negative token {token}")))?);
    Ok(Some(Record { request, token, created_at_ms, updated_at_ms, retain_until_ms, state }))
}

impl Store for SqliteStore {
    async fn reserve(&self, request: Reserve<'_>) -> Result<Reservation, StoreError> {
        let id = request.id;
        let lease = duration_ms(request.lease);
        self.with_conn("reserve", |conn| {
            for _ in 0..RESERVE_ROUNDS {
                // A repeat finds its record with one read, without taking the write lock.
                if let Some(record) = read_record(conn, id)? {
                    return Ok(Reservation::Existing(record));
                }
                let params = vec![text(id.namespace), text(id.key), text(request.request), Value::Integer(lease)];
                let (inserted, rowid) = self.write(conn, Shared { sql: INSERT, params, insert: true })?;
                if inserted == 1 {
                    let token = u64::try_from(rowid).map_err(|e| StoreError::Backend(e.into()))?;
                    return Ok(Reservation::Acquired { token: Token(token) });
                }
                // Lost a race to another caller's INSERT; its record may also be released
                // before we read it, so read again.
            }
            Err(StoreError::Backend(
                format!(
                    "reserving {}/{}: the existing record vanished {RESERVE_ROUNDS} times in a row",
                    id.namespace, id.key
                )
                .into(),
            ))
        })
    }

    async fn take_over(&self, id: RecordId<'_>, expired: Token, lease: Duration) -> Result<Token, StoreError> {
        let expired = i64::try_from(expired.0).map_err(|_| StoreError::Fenced)?;
        self.with_write("take over", |conn| {
            self.check_file()?;
            let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate).map_err(backend)?;
            let found: Option<(String, i64)> = tx
                .prepare_cached(TAKE_OVER_FIND)
                .and_then(|mut stmt| {
                    stmt.query_row((expired, id.namespace, id.key), |row| Ok((row.get(0)?, row.get(1)?))).optional()
                })
                .map_err(backend)?;
            let Some((request, created_at_ms)) = found else {
                return Err(StoreError::Fenced);
            };
            let token = reissue(&tx, expired, id, &request, created_at_ms, duration_ms(lease))?;
            tx.commit().map_err(backend)?;
            u64::try_from(token).map(Token).map_err(|e| StoreError::Backend(e.into()))
        })
    }

    async fn renew(&self, renewal: Renew<'_>) -> Result<(), StoreError> {
        let token = i64::try_from(renewal.token.0).map_err(|_| StoreError::Fenced)?;
        let Renew { id, lease, progress, .. } = renewal;
        let progress = progress.map_or(Value::Null, text);
        let params =
            vec![Value::Integer(token), text(id.namespace), text(id.key), Value::Integer(duration_ms(lease)), progress];
        self.execute_fenced("renew", RENEW, params)
    }

    async fn complete(
        &self,
        id: RecordId<'_>,
        token: Token,
        completion: Completion<'_>,
        retain: Duration,
    ) -> Result<(), StoreError> {
        // A token beyond i64 was never handed out, so it holds nothing.
        let token = i64::try_from(token.0).map_err(|_| StoreError::Fenced)?;
        let (state, result) = match completion {
            Completion::Success(result) => ("completed", result),
            Completion::KeptError(error) => ("failed", error),
        };
        let params = vec![
            text(state),
            text(result),
            Value::Integer(token),
            text(id.namespace),
            text(id.key),
            Value::Integer(duration_ms(retain)),
        ];
        self.execute_fenced("complete", COMPLETE, params)
    }

    async fn abandon(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        let token = i64::try_from(token.0).map_err(|_| StoreError::Fenced)?;
        self.execute_fenced("abandon", ABANDON, vec![Value::Integer(token), text(id.namespace), text(id.key)])
    }

    async fn release(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        let token = i64::try_from(token.0).map_err(|_| StoreError::Fenced)?;
        // An uncharged record (every tool without a budget) goes in a commit shared with
        // other callers' writes, with no read first. A row's charge is fixed when its token
        // is issued, so a row that delete left is either charged (released with its refund,
        // in one transaction) or not this token's (fenced, there too).
        match self.execute_fenced("release", RELEASE, vec![Value::Integer(token), text(id.namespace), text(id.key)]) {
            Err(StoreError::Fenced) => self.release_refunding("release", budgets::Held::Token(token, id)),
            released => released,
        }
    }

    async fn read(&self, id: RecordId<'_>) -> Result<Option<Record>, StoreError> {
        self.with_conn("read", |conn| read_record(conn, id))
    }

    async fn purge(&self, limit: usize) -> Result<usize, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with_write("purge", |conn| {
            let mut stmt = conn.prepare_cached(PURGE).map_err(backend)?;
            let purged = stmt.execute([limit]).map_err(backend)?;
            budgets::purge_windows(conn)?;
            Ok(purged)
        })
    }
}
