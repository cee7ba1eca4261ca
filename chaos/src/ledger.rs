//! The provider: an SQLite file apart from idem's store, which every worker's tool bodies
//! write their effects to and the checker reads afterwards. For half of the tools it
//! honours the idempotency key (a re-send with a key it has seen returns the first effect,
//! as Stripe does); for the other half it records the key for look-ups only, so a re-send
//! is a second effect and only idem stands between a fault and a double one.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::{Deserialize, Serialize};

use crate::now_ms;

/// What a tool returns: the effect the provider recorded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Effect {
    /// The provider's id for the effect.
    pub id: i64,
    /// The amount the effect was made for.
    pub amount: u32,
    /// `true` when idem answered from its record (a replay).
    #[serde(default)]
    pub replayed: bool,
}

/// One effect as the provider recorded it.
#[derive(Clone, Debug)]
pub struct Row {
    pub id: i64,
    pub tool: String,
    pub action: String,
    pub amount: u32,
    pub pid: u32,
    pub at_ms: i64,
}

/// The ledger file.
#[derive(Clone, Debug)]
pub struct Ledger {
    path: PathBuf,
}

impl Ledger {
    pub fn at(dir: &Path) -> Ledger {
        Ledger { path: dir.join("ledger.db") }
    }

    fn open(&self) -> Connection {
        let conn = Connection::open(&self.path).expect("the ledger opens");
        // A worker stopped (SIGSTOP) inside a ledger transaction holds its lock until it
        // is continued: a few seconds, well inside this.
        conn.busy_timeout(Duration::from_secs(120)).expect("busy timeout");
        conn
    }

    /// Creates the tables. A rollback journal, not WAL: a worker killed inside its commit
    /// leaves a hot journal that the next writer rolls back, so an effect is either there
    /// when the checker looks or never (in WAL mode a dead writer's frame can surface later).
    pub fn create(&self) {
        let conn = self.open();
        conn.pragma_update(None, "journal_mode", "DELETE").expect("journal mode");
        conn.execute_batch(
            "CREATE TABLE effects (id INTEGER PRIMARY KEY AUTOINCREMENT, tool TEXT NOT NULL,
                 action TEXT NOT NULL, idem_key TEXT NOT NULL, amount INTEGER NOT NULL,
                 pid INTEGER NOT NULL, at_ms INTEGER NOT NULL,
                 -- the provider's idempotency key: set by the tools whose provider honours it
                 honoured_key TEXT UNIQUE);
             CREATE TABLE requests (tool TEXT NOT NULL, action TEXT NOT NULL, pid INTEGER NOT NULL,
                 at_ms INTEGER NOT NULL);
             CREATE TABLE notifications (action TEXT NOT NULL, pid INTEGER NOT NULL, at_ms INTEGER NOT NULL);",
        )
        .expect("the ledger's tables");
    }

    /// Sends an effect with `idem_key`: logs the request and makes (or, where the provider
    /// honours keys and has seen this one, finds) the effect, in one transaction, so a kill
    /// inside it leaves neither.
    pub fn send(&self, tool: &str, action: &str, idem_key: &str, amount: u32, honours_key: bool) -> Effect {
        let mut conn = self.open();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).expect("begin");
        let (pid, at) = (std::process::id(), now_ms());
        tx.execute("INSERT INTO requests VALUES (?1, ?2, ?3, ?4)", params![tool, action, pid, at]).expect("request");
        let honoured = honours_key.then_some(idem_key);
        if let Some(key) = honoured {
            let first: Option<(i64, u32)> = tx
                .query_row("SELECT id, amount FROM effects WHERE honoured_key = ?1", [key], |row| {
                    Ok((row.get(0)?, row.get(1)?))
                })
                .optional()
                .expect("look-up");
            if let Some((id, amount)) = first {
                tx.commit().expect("commit");
                return Effect { id, amount, replayed: false };
            }
        }
        tx.execute(
            "INSERT INTO effects (tool, action, idem_key, amount, pid, at_ms, honoured_key)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![tool, action, idem_key, amount, pid, at, honoured],
        )
        .expect("effect");
        let id = tx.last_insert_rowid();
        tx.commit().expect("commit");
        Effect { id, amount, replayed: false }
    }

    /// The first effect sent with `idem_key`, what a `reconcile` hook asks the provider, and
    /// the newest effect id at that moment (one read, so the two agree).
    pub fn lookup(&self, idem_key: &str) -> (Option<Effect>, i64) {
        let mut conn = self.open();
        let tx = conn.transaction().expect("begin");
        let found = tx
            .query_row("SELECT id, amount FROM effects WHERE idem_key = ?1 ORDER BY id LIMIT 1", [idem_key], |row| {
                Ok(Effect { id: row.get(0)?, amount: row.get(1)?, replayed: false })
            })
            .optional()
            .expect("look-up");
        let newest = tx.query_row("SELECT COALESCE(MAX(id), 0) FROM effects", [], |row| row.get(0)).expect("newest");
        tx.commit().expect("commit");
        (found, newest)
    }

    /// An approval request reached the approvers' channel.
    pub fn notified(&self, action: &str) {
        self.open()
            .execute("INSERT INTO notifications VALUES (?1, ?2, ?3)", params![action, std::process::id(), now_ms()])
            .expect("notification");
    }

    pub fn effects(&self) -> Vec<Row> {
        let conn = self.open();
        let mut statement =
            conn.prepare("SELECT id, tool, action, amount, pid, at_ms FROM effects ORDER BY id").expect("prepare");
        let rows = statement.query_map([], |row| {
            Ok(Row {
                id: row.get(0)?,
                tool: row.get(1)?,
                action: row.get(2)?,
                amount: row.get(3)?,
                pid: row.get(4)?,
                at_ms: row.get(5)?,
            })
        });
        rows.expect("effects").map(|row| row.expect("an effect row")).collect()
    }

    /// `(action, requests)` for every action sent more than once.
    pub fn resent(&self) -> Vec<(String, u32)> {
        self.counts("SELECT action, COUNT(*) FROM requests GROUP BY action HAVING COUNT(*) > 1")
    }

    /// The approval requests notified after the one numbered `after`: `(number, key)`, oldest
    /// first. What the approvers read in their channel.
    pub fn notified_after(&self, after: i64) -> Vec<(i64, String)> {
        let conn = self.open();
        let mut statement =
            conn.prepare("SELECT rowid, action FROM notifications WHERE rowid > ?1 ORDER BY rowid").expect("prepare");
        let rows = statement.query_map([after], |row| Ok((row.get(0)?, row.get(1)?)));
        rows.expect("notifications").map(|row| row.expect("a notification")).collect()
    }

    /// `(action, notifications)` for every action its approvers heard of.
    pub fn notifications(&self) -> Vec<(String, u32)> {
        self.counts("SELECT action, COUNT(*) FROM notifications GROUP BY action")
    }

    fn counts(&self, sql: &str) -> Vec<(String, u32)> {
        let conn = self.open();
        let mut statement = conn.prepare(sql).expect("prepare");
        let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)));
        rows.expect("counts").map(|row| row.expect("a count")).collect()
    }
}
