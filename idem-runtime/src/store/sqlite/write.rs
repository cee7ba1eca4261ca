//! How the store writes: in its turn at `FULL`, and the single-statement writes of
//! reservations, completions, renewals and releases in commits shared between threads
//! (see [`writers`](super::writers)).

use rusqlite::Connection;
use rusqlite::types::Value;

use super::writers::{Shared, Turn, Written};
use super::{SqliteStore, Synchronous, backend};
use crate::store::StoreError;

impl SqliteStore {
    /// Runs `f`, which writes, on a pooled connection, in this store's turn to write (see
    /// [`writers`](super::writers)).
    pub(super) fn with_write<T>(
        &self,
        operation: &'static str,
        f: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.with_conn(operation, |conn| {
            let _turn = self.wait_turn()?;
            f(conn)
        })
    }

    /// This connection's turn to write, at `FULL`; see [`writers`](super::writers) for why not at `NORMAL`.
    pub(super) fn wait_turn(&self) -> Result<Option<Turn<'_>>, StoreError> {
        if self.options.synchronous() != Synchronous::Full {
            return Ok(None);
        }
        self.writers.wait_turn(self.options.busy_timeout()).map(Some)
    }

    /// Runs a statement that changes one record, if it still is as the statement expects
    /// (held by a token, or in the state an operator's change is for): [`StoreError::Fenced`]
    /// when it changed nothing.
    pub(super) fn execute_fenced(
        &self,
        operation: &'static str,
        sql: &'static str,
        params: Vec<Value>,
    ) -> Result<(), StoreError> {
        let (changed, _) = self.with_conn(operation, |conn| self.write(conn, Shared { sql, params, insert: false }))?;
        if changed == 0 { Err(StoreError::Fenced) } else { Ok(()) }
    }

    /// Runs `write`: at `FULL` in a commit shared with the other callers' writes of this
    /// moment (see [`writers`](super::writers)), which returns once that commit has; at `NORMAL` alone, on
    /// `conn`.
    pub(super) fn write(&self, conn: &Connection, write: Shared) -> Written {
        if self.options.synchronous() != Synchronous::Full {
            return self.write_one(conn, &write);
        }
        self.writers.write_shared(write, self.options.busy_timeout(), |group| self.commit(conn, group))
    }

    /// One write, on its own or inside a transaction; a reservation checks its file first.
    fn write_one(&self, conn: &Connection, write: &Shared) -> Written {
        if write.insert {
            self.check_file()?;
        }
        let changed = conn
            .prepare_cached(write.sql)
            .and_then(|mut stmt| stmt.execute(rusqlite::params_from_iter(&write.params)))
            .map_err(backend)?;
        Ok((changed, if write.insert { conn.last_insert_rowid() } else { 0 }))
    }

    /// Commits `group` (the writes of several callers) in one transaction on `conn`: one
    /// WAL sync for all of them. A write that fails alone (its statement is rolled back,
    /// the transaction stays open) fails only its caller; when the transaction itself fails
    /// (BEGIN, COMMIT, or an error that rolls it back), nothing of it was committed and
    /// every write fails.
    pub(super) fn commit(&self, conn: &Connection, group: Vec<Shared>) -> Vec<Written> {
        if let [write] = &group[..] {
            return vec![self.write_one(conn, write)];
        }
        let all_failed = |why: &dyn std::fmt::Display| -> Vec<Written> {
            group
                .iter()
                .map(|_| {
                    Err(StoreError::Backend(format!("committing a group of {} writes: {why}", group.len()).into()))
                })
                .collect()
        };
        if let Err(e) = conn.execute_batch("BEGIN IMMEDIATE") {
            return all_failed(&e);
        }
        let mut written = Vec::with_capacity(group.len());
        for write in &group {
            written.push(self.write_one(conn, write));
            if conn.is_autocommit() {
                // The failure rolled the whole transaction back.
                return all_failed(&"the transaction was rolled back by a failed write");
            }
        }
        if let Err(e) = conn.execute_batch("COMMIT") {
            if !conn.is_autocommit() {
                let _ = conn.execute_batch("ROLLBACK");
            }
            return all_failed(&e);
        }
        written
    }
}

pub(super) fn text(value: &str) -> Value {
    Value::Text(value.to_owned())
}
