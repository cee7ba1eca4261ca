//! The SQLite store: one file, shared by every thread and process that opens it.
//!
//! The schema, its version and its migrations: `sqlite/schema.rs`.
//!
//! The token is the `AUTOINCREMENT` rowid: SQLite never hands out a rowid twice, even
//! after the row is deleted, so tokens only grow across release and re-reservation. A
//! take-over deletes the abandoned row and inserts it again in one transaction, so the new
//! holder's token is larger than the old one's, and it starts without the old holder's
//! progress message.
//! Reservation reads the record first (a repeat then costs one read and never takes the
//! write lock) and otherwise runs one `INSERT .. ON CONFLICT DO NOTHING`,
//! so the unique constraint, not Rust code, decides who acquires a key. Every time
//! (creation, update, lease end) is read from SQLite's clock inside the statement that
//! uses it.

use std::path::Path;
use std::sync::Mutex;

use rusqlite::Connection;

use self::identity::Identity;
use self::writers::Writers;
use super::{StoreError, duration_ms};

/// The schema version this code writes and reads.
const SCHEMA_VERSION: i64 = 4;
/// How many unused connections the pool keeps open.
const MAX_IDLE: usize = 8;
/// SQLite's current time in milliseconds; constant within one statement.
macro_rules! now_ms {
    () => {
        "CAST(unixepoch('subsec')*1000 AS INTEGER)"
    };
}

/// A store in an SQLite file: the embedded default, durable across restarts.
///
/// Any number of threads (share one `SqliteStore`) and processes (each opens the same
/// path) may use one file at once: SQLite's locking and the table's unique constraint
/// make [`reserve`](super::Store::reserve) atomic across all of them. Opening is as concurrent:
/// processes that open one new file at the same moment all get the store (within the
/// [busy timeout](SqliteStoreBuilder::busy_timeout)). The file must be on a local
/// disk; SQLite's locks are unreliable on network file systems.
///
/// Each operation borrows a connection from a small internal pool, so calls from several
/// threads do not queue behind one connection. With full durability (the default), the
/// reservations and completions that threads of one process make at the same moment share
/// one commit, and so one disk sync; each call still returns only once its own write is on
/// disk.
///
/// # The file while the store is open
///
/// A store answers from the file it opened, and only that one. While a process has it
/// open, anyone may read the file (`sqlite3`, `idem list`, `idem show`) and settle keys
/// with `idem resolve`; nobody may delete, move or replace it, nor restore a backup into
/// it (`cp`, or sqlite3's `.restore`: keys completed since the backup would run again).
/// A store that finds another file at its path, or none, fails every operation from then
/// on with [`StoreError::Backend`] naming the file and what happened (its tools answer
/// `STORE_UNAVAILABLE` and run nothing), and never creates a file in place of a deleted
/// one; only opening the store again (restarting the process) uses the file then at the
/// path. It checks when it opens a connection, right before it reserves a key, and at
/// most every 10 ms before other operations (so a replay may still come from the file it
/// opened for that long). To reset or restore a store, stop the processes that use it,
/// delete (or replace) the file together with its `-wal` and `-shm` files, and start
/// them again. Files are told apart by device and inode on unix; elsewhere a deleted file
/// is noticed, and a replaced one where the file system records creation times.
#[derive(Debug)]
pub struct SqliteStore {
    options: open::Options,
    identity: Identity,
    idle: Mutex<Vec<Connection>>,
    /// How this store's connections take turns at writing.
    writers: Writers,
    /// The connection that set the file up, open until the store is dropped: while it is,
    /// the file's inode cannot be freed and given to a replacement, which would then pass
    /// for the file this store opened. The pool alone may hold no connection at times (a
    /// transaction body that panics takes its connection with it).
    #[expect(dead_code, reason = "held open, never used")]
    anchor: Mutex<Connection>,
}

impl SqliteStore {
    /// The file this store was opened on, as an absolute path, for logs and error messages.
    pub fn path(&self) -> &Path {
        &self.options.path
    }

    /// A backend failure with this store's file and the operation named, so that a
    /// STORE_UNAVAILABLE answer says which file failed doing what; other errors as they are.
    pub(super) fn within(&self, error: StoreError, operation: &'static str) -> StoreError {
        match error {
            StoreError::Backend(_) => error.within(&crate::store::Admin::describe(self), operation),
            other => other,
        }
    }
}

fn backend(error: rusqlite::Error) -> StoreError {
    StoreError::Backend(Box::new(error))
}

mod admin;
mod budgets;
mod existing;
#[cfg(test)]
mod existing_tests;
mod identity;
#[cfg(test)]
mod migration_tests;
mod open;
mod ops;
mod pool;
mod schema;
#[cfg(test)]
mod tests;
pub(super) mod transaction;
mod write;
mod writers;

pub use open::{SqliteStoreBuilder, Synchronous};
pub use transaction::{Transacted, TransactionError};
