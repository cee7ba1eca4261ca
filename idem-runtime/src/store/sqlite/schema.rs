//! The SQLite store's schema (version 4, kept in `PRAGMA user_version`) and the
//! migrations that bring older files to it.
//!
//! ```sql
//! CREATE TABLE idem_records (
//!     token          INTEGER PRIMARY KEY AUTOINCREMENT, -- the fencing token
//!     namespace      TEXT NOT NULL,
//!     key            TEXT NOT NULL,
//!     state          TEXT NOT NULL,     -- 'in_progress' | 'completed' | 'failed'
//!     request        TEXT NOT NULL,     -- the compared fields, canonical JSON
//!     result         TEXT,              -- result JSON (completed) or error JSON (failed)
//!     created_at_ms  INTEGER NOT NULL,  -- ms since the Unix epoch, SQLite's clock
//!     updated_at_ms  INTEGER NOT NULL,
//!     lease_until_ms INTEGER,           -- NULL once settled
//!     retain_until_ms INTEGER,          -- settled records: kept until then (version 2)
//!     progress       TEXT,              -- in progress: the body's last message (version 3)
//!     charge_budget  TEXT,              -- what the reservation charged, NULL for none (version 4)
//!     charge_scope   TEXT,
//!     charge_start_ms INTEGER,          -- the start of the window it was charged to
//!     charge_amount  INTEGER,           -- in millionths
//!     UNIQUE (namespace, key)
//! );
//! CREATE INDEX idem_records_retention ON idem_records (retain_until_ms)
//!     WHERE retain_until_ms IS NOT NULL;
//! CREATE TABLE idem_budgets (           -- budget windows (version 4)
//!     budget TEXT NOT NULL, scope TEXT NOT NULL,
//!     start_ms INTEGER NOT NULL,        -- a whole multiple of window_ms, SQLite's clock
//!     window_ms INTEGER NOT NULL,
//!     used INTEGER NOT NULL,            -- millionths
//!     lim INTEGER NOT NULL,             -- the last charge's limit
//!     raised INTEGER NOT NULL DEFAULT 0,-- what operators added
//!     adjusted_by TEXT, adjusted_at_ms INTEGER, adjusted_change TEXT, adjusted_note TEXT,
//!     PRIMARY KEY (budget, scope, start_ms)
//! ) WITHOUT ROWID;
//! ```
//!
//! Older files are migrated in place on open, one version after the other, in one
//! transaction. Version 1 (without `retain_until_ms`): settled records get the default
//! retention counted from their last change. Version 2 (without `progress`): records get
//! no progress message. Version 3 (without budgets): records were charged nothing, and
//! `idem_budgets` starts empty.
//!
//! A record's charge lives in its own row rather than a table beside it: it goes when the
//! record goes (a purge needs no second delete, and a charge can never outlive its record
//! to be refunded by a later one of the same key), and a take-over's new row copies it.
//! Budgeted reservations, their releases and windows: `sqlite/budgets.rs`.

use super::SCHEMA_VERSION;

/// The budget windows (version 4): one row per budget, scope and window start.
macro_rules! budgets_table {
    () => {
        "CREATE TABLE IF NOT EXISTS idem_budgets (
            budget TEXT NOT NULL,
            scope TEXT NOT NULL,
            start_ms INTEGER NOT NULL,
            window_ms INTEGER NOT NULL,
            used INTEGER NOT NULL,
            lim INTEGER NOT NULL,
            raised INTEGER NOT NULL DEFAULT 0,
            adjusted_by TEXT,
            adjusted_at_ms INTEGER,
            adjusted_change TEXT,
            adjusted_note TEXT,
            PRIMARY KEY (budget, scope, start_ms)
        ) WITHOUT ROWID;"
    };
}

pub(super) const SCHEMA: &str = concat!(
    "
CREATE TABLE IF NOT EXISTS idem_records (
    token INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    state TEXT NOT NULL,
    request TEXT NOT NULL,
    result TEXT,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    lease_until_ms INTEGER,
    retain_until_ms INTEGER,
    progress TEXT,
    charge_budget TEXT,
    charge_scope TEXT,
    charge_start_ms INTEGER,
    charge_amount INTEGER,
    UNIQUE (namespace, key)
);
CREATE INDEX IF NOT EXISTS idem_records_retention ON idem_records (retain_until_ms)
    WHERE retain_until_ms IS NOT NULL;
",
    budgets_table!(),
    "PRAGMA user_version = 4;"
);

/// From version 1: retention per record. Settled records keep the default retention,
/// counted from their last change.
pub(super) const MIGRATE_1_TO_2: &str = concat!(
    "ALTER TABLE idem_records ADD COLUMN retain_until_ms INTEGER;
     UPDATE idem_records SET retain_until_ms = updated_at_ms + ",
    "604800000", // DEFAULT_RETAIN (store/defaults.rs) in ms: 7 days
    " WHERE state IN ('completed', 'failed');
     DROP INDEX IF EXISTS idem_records_purge;
     CREATE INDEX IF NOT EXISTS idem_records_retention ON idem_records (retain_until_ms)
         WHERE retain_until_ms IS NOT NULL;
     PRAGMA user_version = 2;"
);

/// From version 2: a running call's progress message. Existing records have none; adding
/// a column without a default rewrites no row.
pub(super) const MIGRATE_2_TO_3: &str = "ALTER TABLE idem_records ADD COLUMN progress TEXT;
     PRAGMA user_version = 3;";

/// From version 3: budgets. A record remembers what its reservation charged (the four
/// `charge_` columns, NULL for a record without a budget), and `idem_budgets` holds the
/// windows. Existing records charged nothing; adding columns without defaults rewrites no row.
pub(super) const MIGRATE_3_TO_4: &str = concat!(
    "ALTER TABLE idem_records ADD COLUMN charge_budget TEXT;
     ALTER TABLE idem_records ADD COLUMN charge_scope TEXT;
     ALTER TABLE idem_records ADD COLUMN charge_start_ms INTEGER;
     ALTER TABLE idem_records ADD COLUMN charge_amount INTEGER;
     ",
    budgets_table!(),
    "PRAGMA user_version = 4;"
);

/// The migration from each old version to the next, starting with version 1's: a file at
/// version `v` runs `MIGRATIONS[v - 1..]` in order, in one transaction.
pub(super) const MIGRATIONS: [&str; 3] = [MIGRATE_1_TO_2, MIGRATE_2_TO_3, MIGRATE_3_TO_4];
const _: () = assert!(MIGRATIONS.len() as i64 == SCHEMA_VERSION - 1, "one migration per older version");
