//! [`Admin`] for PostgreSQL: what an operator does with the store, one statement each
//! (a budget's adjustment and a release that refunds: one short transaction), within the
//! operation timeout. Rare, so the statements are not prepared.

use std::time::Duration;

use tokio_postgres::types::ToSql;

use super::budgets::window_of;
use super::ops::{decode, unix_ms};
use super::pool::block_on;
use super::schema::{COLUMNS, NOW, NOW_MS, WINDOW_COLUMNS, set_lock_timeout};
use super::{PgStore, backend, duration_ms};
use crate::store::budget::{
    Adjustment, BudgetChange, BudgetQuery, BudgetWindow, change_text, check_adjustment, raised_by,
};
use crate::store::{Admin, ListQuery, ListedRecord, RecordId, StateCount, StoreError};

impl PgStore {
    /// Checks that the store's schema already holds idem's tables at the schema version
    /// this idem reads, reading only: for tools that must never create or change a store,
    /// such as the `idem` operator command. Anything else is an error that names the store
    /// and says what its schema holds: no such schema, no tables, another application's
    /// tables (named), an idem schema of an older version (which using it would migrate,
    /// locking out the older idem that wrote it) or a newer one. Nothing is created or
    /// changed. Once it has passed, this store never creates or migrates the schema.
    pub fn check_existing_blocking(&self) -> Result<(), StoreError> {
        block_on(self.operation("open", async {
            let conn = self.inner.pool.get().await?;
            self.inner.queries.existing(&conn.client).await
        }))?;
        // The schema is at this idem's version: a later operation must not create it again
        // if someone drops it meanwhile.
        let _ = self.inner.migrated.set(());
        Ok(())
    }

    fn table(&self) -> String {
        format!("{}.idem_records", self.schema())
    }

    fn budgets_table(&self) -> String {
        format!("{}.idem_budgets", self.schema())
    }

    /// Runs an operator's change: [`StoreError::Fenced`] when it changed nothing.
    fn changed_one(
        &self,
        operation: &'static str,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<(), StoreError> {
        let changed = block_on(self.operation(operation, async {
            let conn = self.conn().await?;
            conn.client.execute(sql, params).await.map_err(backend)
        }))?;
        if changed == 0 { Err(StoreError::Fenced) } else { Ok(()) }
    }
}

/// The conditions of a listing: `$1` state, `$2` namespace, `$3` key prefix, `$4` minimum
/// age in ms, `$5` whether the lease is live.
fn selected() -> String {
    format!(
        "($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR namespace = $2) \
         AND ($3::text IS NULL OR left(key, length($3)) = $3) \
         AND ($4::int8 IS NULL OR created_at <= {NOW} - $4 * interval '1 millisecond') \
         AND ($5::bool IS NULL OR $5 = (lease_until > now()))"
    )
}

/// A [`ListQuery`]'s conditions as [`selected`] binds them.
struct Selected {
    state: Option<&'static str>,
    older_than: Option<i64>,
    lease_live: Option<bool>,
}

impl Selected {
    fn of(query: &ListQuery<'_>) -> Self {
        Selected {
            state: query.state.stored_state(),
            older_than: query.older_than.map(duration_ms),
            lease_live: query.state.lease_live(),
        }
    }
}

impl Admin for PgStore {
    fn describe(&self) -> String {
        self.inner.described.clone()
    }

    fn list(&self, query: &ListQuery<'_>) -> Result<Vec<ListedRecord>, StoreError> {
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let sql = format!(
            "SELECT namespace, key, {COLUMNS} FROM {} WHERE {} ORDER BY created_at, token LIMIT $6",
            self.table(),
            selected()
        );
        let selected = Selected::of(query);
        let params: [&(dyn ToSql + Sync); 6] =
            [&selected.state, &query.namespace, &query.key_prefix, &selected.older_than, &selected.lease_live, &limit];
        block_on(self.operation("list", async {
            let conn = self.conn().await?;
            let rows = conn.client.query(&sql, &params).await.map_err(backend)?;
            rows.iter()
                .map(|row| {
                    let (namespace, key): (String, String) = (row.get(0), row.get(1));
                    let record = decode(RecordId { namespace: &namespace, key: &key }, row, 2)?;
                    Ok(ListedRecord { namespace, key, record })
                })
                .collect()
        }))
    }

    fn count_matching(&self, query: &ListQuery<'_>) -> Result<u64, StoreError> {
        let sql = format!("SELECT count(*) FROM {} WHERE {}", self.table(), selected());
        let selected = Selected::of(query);
        let params: [&(dyn ToSql + Sync); 5] =
            [&selected.state, &query.namespace, &query.key_prefix, &selected.older_than, &selected.lease_live];
        block_on(self.operation("count", async {
            let conn = self.conn().await?;
            let records: i64 = conn.client.query_one(&sql, &params).await.map_err(backend)?.get(0);
            Ok(u64::try_from(records).unwrap_or(0))
        }))
    }

    fn count(&self) -> Result<Vec<StateCount>, StoreError> {
        let sql = format!(
            "SELECT namespace, CASE WHEN state = 'in_progress' AND lease_until <= now() THEN 'abandoned' ELSE state END \
             AS shown, count(*), min(created_at) FROM {} GROUP BY namespace, shown ORDER BY namespace, shown",
            self.table()
        );
        block_on(self.operation("count", async {
            let conn = self.conn().await?;
            let rows = conn.client.query(&sql, &[]).await.map_err(backend)?;
            rows.iter()
                .map(|row| {
                    let records: i64 = row.try_get(2).map_err(backend)?;
                    Ok(StateCount {
                        namespace: row.try_get(0).map_err(backend)?,
                        state: row.try_get(1).map_err(backend)?,
                        records: u64::try_from(records).unwrap_or(0),
                        oldest_ms: unix_ms(row.try_get(3).map_err(backend)?),
                    })
                })
                .collect()
        }))
    }

    fn resolve_done(&self, id: RecordId<'_>, result: &str, retain: Duration) -> Result<(), StoreError> {
        let sql = format!(
            "UPDATE {} SET state = 'completed', result = $3, lease_until = NULL, progress = NULL, updated_at = {NOW}, \
             retain_until = {NOW} + $4::int8 * interval '1 millisecond' \
             WHERE namespace = $1 AND key = $2 AND state = 'in_progress'",
            self.table()
        );
        self.changed_one("resolve", &sql, &[&id.namespace, &id.key, &result, &duration_ms(retain)])
    }

    fn resolve_release(&self, id: RecordId<'_>) -> Result<(), StoreError> {
        // Refunds the record's charge in the same statement.
        let sql = format!(
            "WITH released AS (DELETE FROM {} WHERE namespace = $1 AND key = $2 AND state = 'in_progress' \
               RETURNING charge_budget, charge_scope, charge_start_ms, charge_amount), \
             refunded AS (UPDATE {} AS w SET used = greatest(w.used - r.charge_amount, 0) FROM released AS r \
               WHERE w.budget = r.charge_budget AND w.scope = r.charge_scope AND w.start_ms = r.charge_start_ms \
               RETURNING 1) \
             SELECT count(*) FROM released",
            self.table(),
            self.budgets_table()
        );
        let deleted: i64 = block_on(self.operation("resolve", async {
            let mut conn = self.conn().await?;
            let tx = conn.client.transaction().await.map_err(backend)?;
            tx.batch_execute(&set_lock_timeout(self.inner.lock_timeout)).await.map_err(backend)?;
            let deleted = tx.query_one(&sql, &[&id.namespace, &id.key]).await.map_err(backend)?.get(0);
            tx.commit().await.map_err(backend)?;
            Ok(deleted)
        }))?;
        if deleted == 0 { Err(StoreError::Fenced) } else { Ok(()) }
    }

    fn budgets(&self, query: &BudgetQuery<'_>) -> Result<Vec<BudgetWindow>, StoreError> {
        // Ordered bytewise ("C"), as the other stores order text, whatever the database's collation.
        let sql = format!(
            "SELECT {WINDOW_COLUMNS} FROM {} WHERE ($1::text IS NULL OR budget = $1) \
             AND ($2::text IS NULL OR scope = $2) AND (NOT $3::bool OR start_ms + window_ms > {NOW_MS}) \
             ORDER BY start_ms DESC, budget COLLATE \"C\", scope COLLATE \"C\"",
            self.budgets_table()
        );
        let params: [&(dyn ToSql + Sync); 3] = [&query.budget, &query.scope, &query.current];
        block_on(self.operation("budgets", async {
            let conn = self.conn().await?;
            let rows = conn.client.query(&sql, &params).await.map_err(backend)?;
            rows.iter().map(window_of).collect()
        }))
    }

    fn adjust_budget(&self, adjustment: &Adjustment<'_>) -> Result<BudgetWindow, StoreError> {
        check_adjustment(adjustment)?;
        let table = self.budgets_table();
        let key = "budget = $1 AND scope = $2 AND start_ms = $3";
        let select = format!("SELECT {WINDOW_COLUMNS} FROM {table} WHERE {key} FOR UPDATE");
        let update = format!(
            "UPDATE {table} SET raised = raised + $4, used = CASE WHEN $5 THEN 0 ELSE used END, adjusted_by = $6, \
             adjusted_at_ms = {NOW_MS}, adjusted_change = $7, adjusted_note = $8 WHERE {key} \
             RETURNING {WINDOW_COLUMNS}"
        );
        let (budget, scope, start_ms) = adjustment.window;
        let (raise, reset) = match adjustment.change {
            BudgetChange::Raise(by) => (by, false),
            BudgetChange::Reset => (0, true),
        };
        block_on(self.operation("adjust budget", async {
            let mut conn = self.conn().await?;
            let tx = conn.client.transaction().await.map_err(backend)?;
            tx.batch_execute(&set_lock_timeout(self.inner.lock_timeout)).await.map_err(backend)?;
            let found = tx.query_opt(&select, &[&budget, &scope, &start_ms]).await.map_err(backend)?;
            let Some(found) = found else { return Err(StoreError::Fenced) };
            let found = window_of(&found)?;
            raised_by(found.raised, raise)?;
            let change = change_text(adjustment.change, found.used);
            let params: [&(dyn ToSql + Sync); 8] =
                [&budget, &scope, &start_ms, &raise, &reset, &adjustment.by, &change, &adjustment.note];
            let adjusted = window_of(&tx.query_one(&update, &params).await.map_err(backend)?)?;
            tx.commit().await.map_err(backend)?;
            Ok(adjusted)
        }))
    }

    fn reopen(&self, id: RecordId<'_>) -> Result<(), StoreError> {
        let sql = format!(
            "UPDATE {} SET state = 'in_progress', token = nextval('{}.idem_tokens'), result = NULL, progress = NULL, \
             retain_until = NULL, lease_until = {NOW}, updated_at = {NOW} \
             WHERE namespace = $1 AND key = $2 AND state IN ('completed', 'failed')",
            self.table(),
            self.schema()
        );
        self.changed_one("reopen", &sql, &[&id.namespace, &id.key])
    }
}
