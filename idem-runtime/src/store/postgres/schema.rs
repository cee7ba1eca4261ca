//! The schema, its versioned migrations, and every statement the store prepares.

use std::time::Duration;

use tokio_postgres::Client;

use super::backend;
use crate::store::StoreError;

/// One step of the schema's history. Applied in order, each in the same transaction as
/// the row that records it in `idem_schema_version`; never edited once released.
pub(super) struct Migration {
    pub(super) version: i32,
    pub(super) description: &'static str,
    pub(super) sql: &'static str,
}

/// Every migration, oldest first. A new schema version is a new entry (and a new file).
pub(super) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        description: "records table, token sequence, retention index",
        sql: include_str!("migrations/0001_records.sql"),
    },
    Migration {
        version: 2,
        description: "no CHECK constraints: the store's statements keep them, reads check them",
        sql: include_str!("migrations/0002_no_check_constraints.sql"),
    },
    Migration {
        version: 3,
        description: "progress: a running call's last progress message",
        sql: include_str!("migrations/0003_progress.sql"),
    },
    Migration {
        version: 4,
        description: "budgets: windows, and each record's charge",
        sql: include_str!("migrations/0004_budgets.sql"),
    },
    Migration {
        version: 5,
        description: "idem_reserve_charged: a charged reservation in one round trip",
        sql: include_str!("migrations/0005_reserve_charged.sql"),
    },
];

/// The schema version this code reads and writes: the last migration's.
pub(super) const SCHEMA_VERSION: i32 = MIGRATIONS[MIGRATIONS.len() - 1].version;

/// Keys `pg_advisory_xact_lock(CLASS, hashtext(schema))`, so that processes migrating the
/// same schema at once take turns.
const LOCK_CLASS: i32 = 0x1de3;

/// The server's clock, truncated to whole milliseconds (the unit of [`Record`] times), so
/// that differences of stored times are exact.
///
/// [`Record`]: crate::store::Record
pub(super) const NOW: &str = "date_trunc('milliseconds', now())";

/// The server's clock in milliseconds since the epoch, as budget windows keep it.
pub(super) const NOW_MS: &str = "(extract(epoch FROM date_trunc('milliseconds', now())) * 1000)::int8";

/// A window's columns, in the order `budgets::window` reads them.
pub(super) const WINDOW_COLUMNS: &str = "budget, scope, start_ms, window_ms, used, lim, raised, adjusted_by, \
                                         adjusted_at_ms, adjusted_change, adjusted_note";

/// The columns [`super::decode`] reads, in its order. Times go out as `timestamptz` and
/// become milliseconds in the client: `extract(epoch ..)` computes in `numeric`, which cost
/// a replay about a tenth of its time on a loopback server. `progress` is NULL on a settled
/// record, so a replay carries one null more and decodes nothing more.
pub(super) const COLUMNS: &str = "token, state, request, result, created_at, updated_at, lease_until, lease_until <= now(), \
                       retain_until, progress";

/// The statements a connection prepares (once each, on first use).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Sql {
    /// `$1 namespace, $2 key, $3 request, $4 lease ms`: one row, `acquired` first, then the
    /// new token or the existing record; no row when the insert lost to a record that the
    /// statement's snapshot cannot see yet (a concurrent winner).
    Reserve,
    /// `$1 namespace, $2 key, $3 request, $4 lease ms`: the new token, or no row.
    Insert,
    /// `$1 namespace, $2 key`: the record's columns.
    Read,
    /// `$1 namespace, $2 key, $3 token, $4 lease ms`: the new token, or no row.
    TakeOver,
    /// `$1 namespace, $2 key, $3 token, $4 lease ms, $5 progress (NULL keeps the stored one)`.
    Renew,
    /// `$1 namespace, $2 key, $3 token, $4 state, $5 result, $6 retain ms`.
    Complete,
    /// `$1 namespace, $2 key, $3 token`: how many records it deleted (0 or 1); it refunds
    /// a deleted record's charge in the same statement.
    Release,
    /// `$1 namespace, $2 key, $3 token`.
    Abandon,
    /// `$1 limit`. Deletes the budget windows that ended a week ago too.
    Purge,
    /// `$1 namespace, $2 key, $3 request, $4 lease ms, $5 budget, $6 scope, $7 window ms, $8
    /// limit, $9 amount, $10 past limit, $11 ms to wait for the window, $12 ms to wait for the
    /// record`: `idem_reserve_charged`'s one row: what happened (`acquired`, `existing`,
    /// `over`), then the record's columns ([`COLUMNS`]; only the token when acquired), then the
    /// window's ([`WINDOW_COLUMNS`], when over budget).
    ReserveCharged,
}

impl Sql {
    pub(super) const ALL: [Sql; 10] = [
        Sql::Reserve,
        Sql::Insert,
        Sql::Read,
        Sql::TakeOver,
        Sql::Renew,
        Sql::Complete,
        Sql::Release,
        Sql::Abandon,
        Sql::Purge,
        Sql::ReserveCharged,
    ];
}

/// The statements' text for one schema.
#[derive(Debug)]
pub(super) struct Queries {
    schema: String,
    texts: Vec<String>,
}

impl Queries {
    /// `schema` must be a plain identifier (checked by the builder).
    pub(super) fn new(schema: &str) -> Self {
        let table = format!("{schema}.idem_records");
        let budgets = format!("{schema}.idem_budgets");
        let kept = crate::store::budget::WINDOWS_KEPT_MS;
        // The NOT EXISTS only spares a sequence value (and, every 32 values, a WAL flush)
        // when the key exists; the primary key, through ON CONFLICT, decides every race.
        let insert = format!(
            "INSERT INTO {table} (namespace, key, state, request, created_at, updated_at, lease_until) \
             SELECT $1, $2, 'in_progress', $3, {NOW}, {NOW}, {NOW} + $4::int8 * interval '1 millisecond' \
             WHERE NOT EXISTS (SELECT 1 FROM {table} WHERE namespace = $1 AND key = $2) \
             ON CONFLICT (namespace, key) DO NOTHING RETURNING token"
        );
        let fenced = "namespace = $1 AND key = $2 AND token = $3 AND state = 'in_progress'";
        let texts = Sql::ALL.map(|sql| match sql {
            Sql::Reserve => format!(
                "WITH existing AS (SELECT {COLUMNS} FROM {table} WHERE namespace = $1 AND key = $2), \
                 inserted AS (\
                   INSERT INTO {table} (namespace, key, state, request, created_at, updated_at, lease_until) \
                   SELECT $1, $2, 'in_progress', $3, {NOW}, {NOW}, {NOW} + $4::int8 * interval '1 millisecond' \
                   WHERE NOT EXISTS (SELECT 1 FROM existing) \
                   ON CONFLICT (namespace, key) DO NOTHING RETURNING token) \
                 SELECT true, token, NULL::text, NULL::text, NULL::text, NULL::timestamptz, NULL::timestamptz, \
                        NULL::timestamptz, NULL::bool, NULL::timestamptz, NULL::text FROM inserted \
                 UNION ALL SELECT false, * FROM existing"
            ),
            Sql::Insert => insert.clone(),
            Sql::Read => format!("SELECT {COLUMNS} FROM {table} WHERE namespace = $1 AND key = $2"),
            // The new holder starts without the old one's progress message.
            Sql::TakeOver => format!(
                "UPDATE {table} SET token = nextval('{schema}.idem_tokens'), updated_at = {NOW}, \
                 lease_until = {NOW} + $4::int8 * interval '1 millisecond', progress = NULL \
                 WHERE {fenced} AND lease_until <= now() RETURNING token"
            ),
            // No `lease_until > now()`: the holder may renew a lease that ended, as long as
            // nobody took it over (which changes the token).
            Sql::Renew => format!(
                "UPDATE {table} SET lease_until = {NOW} + $4::int8 * interval '1 millisecond', \
                 updated_at = {NOW}, progress = coalesce($5, progress) WHERE {fenced}"
            ),
            Sql::Complete => format!(
                "UPDATE {table} SET state = $4, result = $5, updated_at = {NOW}, lease_until = NULL, \
                 retain_until = {NOW} + $6::int8 * interval '1 millisecond', progress = NULL WHERE {fenced}"
            ),
            Sql::Release => format!(
                "WITH released AS (DELETE FROM {table} WHERE {fenced} \
                   RETURNING charge_budget, charge_scope, charge_start_ms, charge_amount), \
                 refunded AS (UPDATE {budgets} AS w SET used = greatest(w.used - r.charge_amount, 0) \
                   FROM released AS r WHERE w.budget = r.charge_budget AND w.scope = r.charge_scope \
                   AND w.start_ms = r.charge_start_ms RETURNING 1) \
                 SELECT count(*) FROM released"
            ),
            Sql::Abandon => format!("UPDATE {table} SET lease_until = {NOW}, updated_at = {NOW} WHERE {fenced}"),
            Sql::Purge => format!(
                "WITH windows AS (DELETE FROM {budgets} WHERE (budget, scope, start_ms) IN (\
                   SELECT budget, scope, start_ms FROM {budgets} WHERE start_ms + window_ms + {kept} <= {NOW_MS} \
                   FOR UPDATE SKIP LOCKED)) \
                 DELETE FROM {table} WHERE (namespace, key) IN (SELECT namespace, key FROM {table} \
                 WHERE retain_until <= now() AND state <> 'in_progress' LIMIT $1 FOR UPDATE SKIP LOCKED)"
            ),
            Sql::ReserveCharged => {
                format!(
                    "SELECT * FROM {schema}.idem_reserve_charged($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
                )
            }
        });
        Queries { schema: schema.to_owned(), texts: texts.into() }
    }

    pub(super) fn text(&self, sql: Sql) -> &str {
        &self.texts[sql as usize]
    }

    /// Creates the schema or brings it to [`SCHEMA_VERSION`]; safe to run from many
    /// processes at once. Fails on a schema written by a newer idem.
    pub(super) async fn migrate(&self, client: &mut Client, lock_timeout: Duration) -> Result<(), StoreError> {
        let schema = &self.schema;
        let versions = format!("{schema}.idem_schema_version");
        if self.version(client, &versions).await? == Some(SCHEMA_VERSION) {
            return Ok(());
        }
        let tx = client.transaction().await.map_err(backend)?;
        // Processes starting together wait for each other's migration, longer than idem's
        // statements wait for a record.
        tx.batch_execute(&set_lock_timeout(lock_timeout)).await.map_err(backend)?;
        tx.execute("SELECT pg_advisory_xact_lock($1, hashtext($2))", &[&LOCK_CLASS, schema]).await.map_err(backend)?;
        let exists = tx.query_one("SELECT count(*) > 0 FROM pg_namespace WHERE nspname = $1", &[schema]).await;
        if !exists.map_err(backend)?.get::<_, bool>(0) {
            tx.batch_execute(&format!("CREATE SCHEMA {schema}")).await.map_err(backend)?;
        }
        let current = match self.version(&tx, &versions).await? {
            Some(version) => version,
            None => {
                tx.batch_execute(&format!(
                    "CREATE TABLE {versions} (version integer PRIMARY KEY, description text NOT NULL, \
                     applied_at timestamptz NOT NULL DEFAULT now())"
                ))
                .await
                .map_err(backend)?;
                0
            }
        };
        tx.batch_execute(&format!("SET LOCAL search_path TO {schema}")).await.map_err(backend)?;
        for migration in MIGRATIONS.iter().filter(|m| m.version > current) {
            tx.batch_execute(migration.sql).await.map_err(backend)?;
            let record = format!("INSERT INTO {versions} (version, description) VALUES ($1, $2)");
            tx.execute(&record, &[&migration.version, &migration.description]).await.map_err(backend)?;
        }
        tx.commit().await.map_err(backend)
    }

    /// `Ok` when the schema already holds idem's tables at [`SCHEMA_VERSION`], else what it
    /// holds instead (or the newer version's error). Reads only.
    pub(super) async fn existing(&self, client: &impl tokio_postgres::GenericClient) -> Result<(), StoreError> {
        let schema = &self.schema;
        let not_a_store = |found: String| Err(StoreError::Backend(format!("not an idem store: {found}").into()));
        let exists = client.query_one("SELECT count(*) > 0 FROM pg_namespace WHERE nspname = $1", &[schema]).await;
        if !exists.map_err(backend)?.get::<_, bool>(0) {
            return not_a_store(format!("there is no schema {schema} in this database"));
        }
        let rows = client
            .query("SELECT tablename::text FROM pg_tables WHERE schemaname = $1 ORDER BY 1", &[schema])
            .await
            .map_err(backend)?;
        let tables: Vec<String> = rows.iter().map(|row| row.get(0)).collect();
        let has = |table: &str| tables.iter().any(|t| t == table);
        if !has("idem_schema_version") {
            return not_a_store(match tables.len() {
                0 => format!("the schema {schema} holds no tables"),
                _ if has("idem_records") => "the schema has a table idem_records but no idem_schema_version: \
                                             idem did not create it"
                    .to_owned(),
                n => {
                    let named = tables[..n.min(5)].join(", ");
                    let more = if n > 5 { format!(", ... {n} in all") } else { String::new() };
                    format!("the schema holds other tables ({named}{more}) and no idem tables")
                }
            });
        }
        let versions = format!("{schema}.idem_schema_version");
        match self.version(client, &versions).await? {
            Some(SCHEMA_VERSION) if has("idem_records") => Ok(()),
            Some(SCHEMA_VERSION) => {
                not_a_store("the schema has idem_schema_version but no idem_records table".to_owned())
            }
            Some(version) if version >= 1 => Err(StoreError::Backend(
                format!(
                    "an idem store of schema version {version}, older than this idem's {SCHEMA_VERSION}: using it \
                     would migrate it, and the older idem that wrote it could no longer use it; use an idem of the \
                     tools' version, or let the tools migrate it when they are upgraded"
                )
                .into(),
            )),
            _ => not_a_store("its idem_schema_version table records no migration".to_owned()),
        }
    }

    /// The schema's version: `None` without a version table (a new schema), else the last
    /// migration applied, checked against this code's.
    pub(super) async fn version(
        &self,
        client: &impl tokio_postgres::GenericClient,
        versions: &str,
    ) -> Result<Option<i32>, StoreError> {
        let row = client.query_one("SELECT to_regclass($1) IS NOT NULL", &[&versions]).await.map_err(backend)?;
        if !row.get::<_, bool>(0) {
            return Ok(None);
        }
        let query = format!("SELECT coalesce(max(version), 0) FROM {versions}");
        let version: i32 = client.query_one(&query, &[]).await.map_err(backend)?.get(0);
        if version > SCHEMA_VERSION {
            return Err(StoreError::Backend(
                format!(
                    "cannot use idem schema {}: its version {version} was written by a newer idem (this one \
                     reads version {SCHEMA_VERSION}); upgrade idem, or use another schema",
                    self.schema
                )
                .into(),
            ));
        }
        Ok(Some(version))
    }
}

/// `SET LOCAL lock_timeout` for the transaction it runs in.
pub(super) fn set_lock_timeout(timeout: Duration) -> String {
    format!("SET LOCAL lock_timeout = {}", lock_timeout_ms(timeout))
}

/// `timeout` as `lock_timeout` takes it: whole milliseconds, at least 1 (0 would mean no
/// limit), at most what the setting holds.
pub(super) fn lock_timeout_ms(timeout: Duration) -> i64 {
    timeout.as_millis().clamp(1, i32::MAX as u128) as i64
}
