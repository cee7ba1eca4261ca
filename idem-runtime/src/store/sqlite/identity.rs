//! Which file a store answers from.
//!
//! A store opens its path once, and every connection its pool opens later opens the path
//! again. If the file is deleted or replaced meanwhile (an operator "resetting" the store,
//! another process creating it anew), old connections go on answering from the deleted
//! file while new ones open whatever is at the path now: one store would answer from two
//! files, and a key completed in one would answer as new from the other, so its action
//! would run again. So a store remembers the file it opened (device and inode on unix)
//! and stops at the first sign that the path names another file, or none:
//!
//! - every connection after the first is opened without `SQLITE_OPEN_CREATE` (a deleted
//!   file is never recreated empty) and checked against the remembered file;
//! - right before a key is reserved (the only step after which a body runs) the path is
//!   checked with a `stat`, about 2 µs, next to the disk sync of the write that follows;
//! - before any other operation, at most every [`READ_CHECK_INTERVAL`]: a replay costs
//!   about 5 µs, which a `stat` each time would raise by a third. Until the next check, a
//!   read may still answer from the file the store opened, which is still one file;
//! - the store keeps one connection open from open to drop, so the opened file's inode
//!   cannot be freed and given to a replacement, which would then look like the same file.
//!
//! The first mismatch is final for that store object: from then on every operation fails
//! with [`StoreError::Backend`] and its idle connections are closed (SQLite closes a
//! connection to a moved file without deleting the `-wal` and `-shm` files at its path,
//! which may now be another file's). Only a store opened again answers again.
//!
//! On other platforms than unix, a file is known by its creation time where the file
//! system reports one: a deleted file is noticed everywhere, a replaced one only there.
//! (Windows refuses to delete or rename a file SQLite holds open in the first place.)

use std::fmt;
use std::io;
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::store::StoreError;

/// How long a read (a replay, a status read) may go without checking the path.
pub(super) const READ_CHECK_INTERVAL: Duration = Duration::from_millis(10);

/// What tells one file from another at the same path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct FileId {
    #[cfg(unix)]
    dev: u64,
    #[cfg(unix)]
    ino: u64,
    #[cfg(not(unix))]
    created: Option<std::time::SystemTime>,
}

impl FileId {
    /// The file at `path` now (following symlinks, as SQLite does).
    pub(super) fn of(path: &Path) -> io::Result<FileId> {
        let meta = std::fs::metadata(path)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Ok(FileId { dev: meta.dev(), ino: meta.ino() })
        }
        #[cfg(not(unix))]
        Ok(FileId { created: meta.created().ok() })
    }
}

impl fmt::Display for FileId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        #[cfg(unix)]
        return write!(f, "device {}, inode {}", self.dev, self.ino);
        #[cfg(not(unix))]
        match self.created {
            Some(created) => write!(f, "created {created:?}"),
            None => f.write_str("no creation time"),
        }
    }
}

/// How a store found out that its path no longer names the file it opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Lost {
    /// Nothing is at the path (or a directory on it is gone): deleted or moved away.
    Deleted { opened: FileId },
    /// Another file is at the path.
    Replaced { opened: FileId, now: FileId },
    /// A new connection opened another file than the one the path names (again) now:
    /// files were moved in and out while it was being opened.
    Swapped { opened: FileId },
}

impl fmt::Display for Lost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Lost::Deleted { opened } => {
                write!(f, "the file was deleted or moved away after this store opened it ({opened})")?;
            }
            Lost::Replaced { opened, now } => {
                write!(
                    f,
                    "the file was replaced after this store opened it (it opened {opened}; the path now names {now})"
                )?;
            }
            Lost::Swapped { opened } => write!(
                f,
                "files were moved in and out of the path while this store opened a connection (it opened {opened})"
            )?,
        }
        f.write_str(
            "; this store refuses every operation from now on and creates no file in its place: restart the \
             process (or open the store again) once the file at the path is the one to use, and never delete, \
             move or replace a store's file while a process has it open",
        )
    }
}

impl std::error::Error for Lost {}

/// The file a store opened, and whether its path still names it.
#[derive(Debug)]
pub(super) struct Identity {
    opened: FileId,
    epoch: Instant,
    /// When the next read must check the path, in ns since `epoch`.
    next_read_check: AtomicU64,
    lost: OnceLock<Lost>,
}

impl Identity {
    pub(super) fn new(opened: FileId) -> Identity {
        let epoch = Instant::now();
        Identity { opened, epoch, next_read_check: AtomicU64::new(0), lost: OnceLock::new() }
    }

    /// Whether the store has found its file gone: then it must use no connection again.
    pub(super) fn is_lost(&self) -> bool {
        self.lost.get().is_some()
    }

    /// Checks that `path` names the opened file now: before a reservation.
    pub(super) fn check(&self, path: &Path) -> Result<(), StoreError> {
        if let Some(lost) = self.lost.get() {
            return Err(failed(lost));
        }
        let lost = match FileId::of(path) {
            Ok(now) if now == self.opened => return Ok(()),
            Ok(now) => Lost::Replaced { opened: self.opened, now },
            Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => {
                Lost::Deleted { opened: self.opened }
            }
            Err(e) => {
                return Err(StoreError::Backend(
                    format!("cannot check that the file at the path is still the one this store opened: {e}").into(),
                ));
            }
        };
        Err(self.lose(lost))
    }

    /// [`check`](Self::check) at most once per [`READ_CHECK_INTERVAL`] (a clock read
    /// otherwise): before reads, for which a `stat` each time would cost too much.
    pub(super) fn check_now_and_then(&self, path: &Path) -> Result<(), StoreError> {
        if let Some(lost) = self.lost.get() {
            return Err(failed(lost));
        }
        let now = u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
        if now < self.next_read_check.load(Ordering::Relaxed) {
            return Ok(());
        }
        self.check(path)?;
        let interval = READ_CHECK_INTERVAL.as_nanos() as u64;
        self.next_read_check.store(now.saturating_add(interval), Ordering::Relaxed);
        Ok(())
    }

    /// Makes the next [`check_now_and_then`](Self::check_now_and_then) check the path, as
    /// if the interval had passed.
    #[cfg(test)]
    pub(super) fn make_read_check_due(&self) {
        self.next_read_check.store(0, Ordering::Relaxed);
    }

    /// Checks that a connection just opened on `path` opened the store's file.
    pub(super) fn check_connection(&self, conn: &Connection, path: &Path) -> Result<(), StoreError> {
        self.check(path)?;
        // The path names the store's file now; SQLite knows whether it names the file this
        // connection opened (it compares the path's inode with its descriptor's).
        #[cfg(unix)]
        {
            let mut moved = 0;
            conn.file_control(Some(rusqlite::MAIN_DB), rusqlite::FileControl::HasMoved(&mut moved))
                .map_err(|e| StoreError::Backend(Box::new(e)))?;
            if moved != 0 {
                return Err(self.lose(Lost::Swapped { opened: self.opened }));
            }
        }
        #[cfg(not(unix))]
        let _ = conn;
        Ok(())
    }

    /// Records the first way the file was found gone; the error for this and every later
    /// operation.
    fn lose(&self, lost: Lost) -> StoreError {
        failed(self.lost.get_or_init(|| lost))
    }
}

fn failed(lost: &Lost) -> StoreError {
    StoreError::Backend(Box::new(lost.clone()))
}

#[cfg(test)]
#[path = "identity_tests.rs"]
mod tests;
