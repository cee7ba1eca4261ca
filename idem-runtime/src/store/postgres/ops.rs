//! The store's operations: one prepared statement each, fenced by token.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio_postgres::Row;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;

use super::schema::Sql;
use super::{PgStore, Pooled, backend, duration_ms};
use crate::store::{Completion, Record, RecordId, RecordState, Renew, Reservation, Reserve, Store, StoreError, Token};

/// How often `reserve` tries again when the record it lost to vanished before it was read.
const RESERVE_ROUNDS: usize = 3;

impl PgStore {
    /// Runs a prepared statement that returns at most one row.
    async fn query_opt(&self, sql: Sql, params: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>, StoreError> {
        let mut conn = self.conn().await?;
        let statement = conn.statement(&self.inner.queries, sql).await?;
        conn.client.query_opt(&statement, params).await.map_err(backend)
    }

    /// Runs a statement that changes the record held by a token: [`StoreError::Fenced`]
    /// when it changed nothing, because the token no longer holds the record.
    async fn execute_fenced(&self, sql: Sql, params: &[&(dyn ToSql + Sync)]) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        let statement = conn.statement(&self.inner.queries, sql).await?;
        let changed = conn.client.execute(&statement, params).await.map_err(backend)?;
        if changed == 0 { Err(StoreError::Fenced) } else { Ok(()) }
    }

    /// A reservation, counted for `store::repeats`: did it find a record?
    pub(super) async fn counted(
        &self,
        reservation: impl Future<Output = Result<Reservation, StoreError>>,
    ) -> Result<Reservation, StoreError> {
        let reserved = reservation.await;
        if let Ok(reservation) = &reserved {
            self.inner.repeats.saw(matches!(reservation, Reservation::Existing(_)));
        }
        reserved
    }

    /// After a stretch of repeats (see `store::repeats`), the record of `id` read with a
    /// plain `SELECT`, which a reservation that finds one answers from; `None` otherwise.
    pub(super) async fn read_first(
        &self,
        conn: &mut Pooled<'_>,
        id: RecordId<'_>,
    ) -> Result<Option<Record>, StoreError> {
        if !self.inner.repeats.read_first() {
            return Ok(None);
        }
        let read = conn.statement(&self.inner.queries, Sql::Read).await?;
        let found = conn.client.query_opt(&read, &[&id.namespace, &id.key]).await.map_err(backend)?;
        found.map(|row| decode(id, &row, 0)).transpose()
    }

    async fn reserve_with(&self, request: Reserve<'_>) -> Result<Reservation, StoreError> {
        let id = request.id;
        let lease = duration_ms(request.lease);
        let mut conn = self.conn().await?;
        let params: [&(dyn ToSql + Sync); 4] = [&id.namespace, &id.key, &request.request, &lease];
        if let Some(existing) = self.read_first(&mut conn, id).await? {
            return Ok(Reservation::Existing(existing));
        }
        let reserve = conn.statement(&self.inner.queries, Sql::Reserve).await?;
        if let Some(row) = conn.client.query_opt(&reserve, &params).await.map_err(locked_or_backend)? {
            let acquired: bool = row.try_get(0).map_err(|e| corrupt(id, e))?;
            return if acquired {
                Ok(Reservation::Acquired { token: token_of(id, row.try_get(1))? })
            } else {
                Ok(Reservation::Existing(decode(id, &row, 1)?))
            };
        }
        // Lost to a row committed after this statement's snapshot: read it (a new statement
        // sees it), or try again if it was released meanwhile.
        let read = conn.statement(&self.inner.queries, Sql::Read).await?;
        let insert = conn.statement(&self.inner.queries, Sql::Insert).await?;
        for _ in 0..RESERVE_ROUNDS {
            if let Some(row) = conn.client.query_opt(&read, &params[..2]).await.map_err(backend)? {
                return Ok(Reservation::Existing(decode(id, &row, 0)?));
            }
            if let Some(row) = conn.client.query_opt(&insert, &params).await.map_err(locked_or_backend)? {
                return Ok(Reservation::Acquired { token: token_of(id, row.try_get(0))? });
            }
        }
        Err(StoreError::Backend(
            format!(
                "reserving {}/{}: the existing record vanished {RESERVE_ROUNDS} times in a row",
                id.namespace, id.key
            )
            .into(),
        ))
    }
}

/// A reservation's failure: [`StoreError::Locked`] when it gave up waiting for a row
/// another transaction inserted and has not committed (a [`PgStore::begin`] still open),
/// which waits at most [`IDEM_LOCK_WAIT`](super::IDEM_LOCK_WAIT).
pub(super) fn locked_or_backend(error: tokio_postgres::Error) -> StoreError {
    match error.code() {
        Some(&SqlState::LOCK_NOT_AVAILABLE) => StoreError::Locked,
        _ => backend(error),
    }
}

fn corrupt(id: RecordId<'_>, why: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("{}/{}: {why}", id.namespace, id.key))
}

/// A token as the database stores it; one beyond `i64` was never handed out.
fn db_token(token: Token) -> Result<i64, StoreError> {
    i64::try_from(token.0).map_err(|_| StoreError::Fenced)
}

pub(super) fn token_of(id: RecordId<'_>, token: Result<i64, tokio_postgres::Error>) -> Result<Token, StoreError> {
    let token = token.map_err(|e| corrupt(id, e))?;
    u64::try_from(token).map(Token).map_err(|_| corrupt(id, format!("negative token {token}")))
}

/// Reads a record from the columns of `schema::COLUMNS`, starting at column `at`.
pub(super) fn decode(id: RecordId<'_>, row: &Row, at: usize) -> Result<Record, StoreError> {
    let get_err = |e: tokio_postgres::Error| corrupt(id, e);
    let token = token_of(id, row.try_get(at))?;
    let state: &str = row.try_get(at + 1).map_err(get_err)?;
    let request: String = row.try_get(at + 2).map_err(get_err)?;
    let result: Option<String> = row.try_get(at + 3).map_err(get_err)?;
    let time = |column: usize| -> Result<Option<i64>, StoreError> {
        Ok(row.try_get::<_, Option<SystemTime>>(at + column).map_err(get_err)?.map(unix_ms))
    };
    let required = |column: usize, name: &str| time(column)?.ok_or_else(|| corrupt(id, format!("no {name}")));
    let created_at_ms = required(4, "created_at")?;
    let updated_at_ms = required(5, "updated_at")?;
    let lease: (Option<i64>, Option<bool>) = (time(6)?, row.try_get(at + 7).map_err(get_err)?);
    let retain_until_ms = time(8)?;
    // Only an in-progress record has a progress message: a replay decodes no more.
    let progress = if state == "in_progress" { row.try_get(at + 9).map_err(get_err)? } else { None };
    let state = RecordState::from_columns(state, result, lease, progress).map_err(|why| corrupt(id, why))?;
    Ok(Record { request, token, created_at_ms, updated_at_ms, retain_until_ms, state })
}

/// Milliseconds since the Unix epoch (negative before it). The server stores whole
/// milliseconds, so nothing is rounded away.
pub(super) fn unix_ms(time: SystemTime) -> i64 {
    let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => ms(after),
        Err(before) => -ms(before.duration()),
    }
}

impl Store for PgStore {
    async fn reserve(&self, request: Reserve<'_>) -> Result<Reservation, StoreError> {
        self.operation("reserve", self.counted(self.reserve_with(request))).await
    }

    async fn take_over(&self, id: RecordId<'_>, expired: Token, lease: Duration) -> Result<Token, StoreError> {
        let expired = db_token(expired)?;
        let params: [&(dyn ToSql + Sync); 4] = [&id.namespace, &id.key, &expired, &duration_ms(lease)];
        match self.operation("take over", self.query_opt(Sql::TakeOver, &params)).await? {
            Some(row) => token_of(id, row.try_get(0)),
            None => Err(StoreError::Fenced),
        }
    }

    async fn complete(
        &self,
        id: RecordId<'_>,
        token: Token,
        completion: Completion<'_>,
        retain: Duration,
    ) -> Result<(), StoreError> {
        let token = db_token(token)?;
        let (state, result) = match completion {
            Completion::Success(result) => ("completed", result),
            Completion::KeptError(error) => ("failed", error),
        };
        let params: [&(dyn ToSql + Sync); 6] = [&id.namespace, &id.key, &token, &state, &result, &duration_ms(retain)];
        self.operation("complete", self.execute_fenced(Sql::Complete, &params)).await
    }

    async fn renew(&self, renewal: Renew<'_>) -> Result<(), StoreError> {
        let token = db_token(renewal.token)?;
        let Renew { id, lease, progress, .. } = renewal;
        let params: [&(dyn ToSql + Sync); 5] = [&id.namespace, &id.key, &token, &duration_ms(lease), &progress];
        self.operation("renew", self.execute_fenced(Sql::Renew, &params)).await
    }

    async fn release(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        self.operation("release", self.release_refunding(id, token)).await
    }

    async fn abandon(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        let token = db_token(token)?;
        let params: [&(dyn ToSql + Sync); 3] = [&id.namespace, &id.key, &token];
        self.operation("abandon", self.execute_fenced(Sql::Abandon, &params)).await
    }

    async fn read(&self, id: RecordId<'_>) -> Result<Option<Record>, StoreError> {
        let params: [&(dyn ToSql + Sync); 2] = [&id.namespace, &id.key];
        let row = self.operation("read", self.query_opt(Sql::Read, &params)).await?;
        row.map(|row| decode(id, &row, 0)).transpose()
    }

    async fn purge(&self, limit: usize) -> Result<usize, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let purged = async {
            let mut conn = self.conn().await?;
            let statement = conn.statement(&self.inner.queries, Sql::Purge).await?;
            conn.client.execute(&statement, &[&limit]).await.map_err(backend)
        };
        let deleted = self.operation("purge", purged).await?;
        Ok(usize::try_from(deleted).unwrap_or(usize::MAX))
    }
}

impl PgStore {
    /// Writes a record in `state` as this store keeps it, bypassing every rule of its
    /// operations: what `testing::conformance::PlantRecord` plants for tests.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn plant_record(&self, id: RecordId<'_>, state: &str) -> Result<(), StoreError> {
        let sql = format!(
            "INSERT INTO {}.idem_records (namespace, key, state, request, created_at, updated_at) \
             VALUES ($1, $2, $3, '{{}}', now(), now())",
            self.schema()
        );
        super::pool::block_on(async {
            let conn = self.conn().await?;
            conn.client.execute(&sql, &[&id.namespace, &id.key, &state]).await.map(drop).map_err(backend)
        })
    }
}
