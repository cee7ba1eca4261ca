//! The connection pool: each operation borrows a connection, opening one when none is
//! idle, and only ever one to the file the store opened (see [`identity`](super::identity)).

use std::sync::PoisonError;

use rusqlite::{Connection, OpenFlags};

use super::{MAX_IDLE, SqliteStore, backend};
use crate::store::StoreError;

impl SqliteStore {
    /// Runs `f` on a pooled connection, opening one if none is idle; a backend failure
    /// names this store and `operation`.
    pub(super) fn with_conn<T>(
        &self,
        operation: &'static str,
        f: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.on_conn(f).map_err(|e| self.within(e, operation))
    }

    fn on_conn<T>(&self, f: impl FnOnce(&Connection) -> Result<T, StoreError>) -> Result<T, StoreError> {
        self.identity.check_now_and_then(self.path()).map_err(|e| self.forget_if_lost(e))?;
        let idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
        let conn = match idle {
            Some(conn) => conn,
            None => self.connect().map_err(|e| self.forget_if_lost(e))?,
        };
        let result = f(&conn);
        self.put_back(conn);
        result
    }

    /// Checks right before a key is reserved, after which a body runs, that the path still
    /// names the file this store opened.
    pub(super) fn check_file(&self) -> Result<(), StoreError> {
        self.identity.check(self.path())
    }

    /// Opens a connection for the pool, to the file this store opened: never a new file,
    /// not even in place of a deleted one.
    pub(super) fn connect(&self) -> Result<Connection, StoreError> {
        let path = self.path();
        let conn = match self.options.connect(OpenFlags::default().difference(OpenFlags::SQLITE_OPEN_CREATE)) {
            Ok(conn) => conn,
            Err(e) => {
                // A file that is gone is the reason, and for good.
                self.identity.check(path)?;
                return Err(self.options.explained(e));
            }
        };
        // SQLite opens the -wal and -shm files by name at the first read: read now, so that
        // the check below also vouches for them.
        conn.pragma_query_value(None, "user_version", |row| row.get::<_, i64>(0)).map_err(backend)?;
        self.identity.check_connection(&conn, path)?;
        Ok(conn)
    }

    /// Returns a connection to the pool, unless the pool is full or the connection was left
    /// inside a transaction, or the store's file is gone.
    fn put_back(&self, conn: Connection) {
        if self.identity.is_lost() {
            drop(conn);
            self.forget_idle();
            return;
        }
        if !conn.is_autocommit() {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < MAX_IDLE {
            idle.push(conn);
        }
    }

    /// `error`, after closing the idle connections if it says the file is gone: none of
    /// them may answer again.
    fn forget_if_lost(&self, error: StoreError) -> StoreError {
        if self.identity.is_lost() {
            self.forget_idle();
        }
        error
    }

    fn forget_idle(&self) {
        // Closing a connection whose file was deleted or replaced is safe: SQLite neither
        // checkpoints nor deletes the -wal and -shm files by name on closing a moved file.
        drop(std::mem::take(&mut *self.idle.lock().unwrap_or_else(PoisonError::into_inner)));
    }
}
