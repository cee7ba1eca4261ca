//! Opening an SQLite store: the file, the switch to WAL, the schema and its migration,
//! safe when many processes open one new file at the same moment.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags, Transaction, TransactionBehavior};

use super::identity::{FileId, Identity};
use super::schema::{MIGRATIONS, SCHEMA};
use super::writers::Writers;
use super::{SCHEMA_VERSION, SqliteStore, backend};
use crate::store::StoreError;

/// The longest pause between two attempts to set a file up while another connection holds it.
const MAX_INIT_PAUSE: Duration = Duration::from_millis(20);

// The statements of every call (INSERT, SELECT, RENEW, COMPLETE) are written without spare
// spaces: rusqlite hashes, compares and copies a statement's text each time it takes it
// from its cache, about three instructions a byte.

/// How hard SQLite works to make each commit durable (`PRAGMA synchronous`).
///
/// A completion must survive whatever the caller fears most: a retry that finds no
/// record runs the action again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Synchronous {
    /// Every commit reaches the disk before the call returns: records survive power loss
    /// and operating-system crashes. The safe default.
    #[default]
    Full,
    /// Commits survive a crash of the application, but the last few may be lost on power
    /// loss or an operating-system crash, so a retry after such a crash may run the action
    /// again. Faster: the disk is synced at WAL checkpoints, not on every commit.
    Normal,
}

/// Options for opening a [`SqliteStore`]; start with [`SqliteStore::builder`].
#[derive(Clone, Debug)]
pub struct SqliteStoreBuilder {
    pub(super) path: PathBuf,
    synchronous: Synchronous,
    busy_timeout: Duration,
}

impl SqliteStoreBuilder {
    /// Trades durability on power loss for speed; see [`Synchronous`]. Default: `Full`.
    pub fn synchronous(mut self, synchronous: Synchronous) -> Self {
        self.synchronous = synchronous;
        self
    }

    /// How long an operation waits for another connection's write lock before it fails
    /// with [`StoreError::Backend`], and how long [`open`](Self::open) keeps trying to set
    /// a file up (WAL switch, schema) while other processes do the same. Default: 5 seconds. Raise it when many processes
    /// write at once; a failed reserve means the tool answers `STORE_UNAVAILABLE`.
    pub fn busy_timeout(mut self, busy_timeout: Duration) -> Self {
        self.busy_timeout = busy_timeout;
        self
    }

    /// Opens the store, creating the file, its missing parent directories and the schema
    /// on first use. A relative path is made absolute against the working directory now,
    /// once: connections the pool opens later use the same file even if the process
    /// changes its working directory.
    /// Every failure names the file, and the operating system's reason where SQLite's
    /// own message does not give one. A new file is created with the process's umask, as
    /// `sqlite3` creates one; SQLite gives its `-wal` and `-shm` the file's permissions.
    ///
    /// A database another application already uses may hold the store too: that is what
    /// [`SqliteStore::transaction`] is for, with the application's tables and idem's in one
    /// file. Its tables and rows are left alone; `open` adds the tables `idem_records` and
    /// `idem_budgets`, the index `idem_records_retention` (and SQLite's `sqlite_sequence`), sets `PRAGMA
    /// user_version` to idem's schema version, and switches the file to WAL journal mode,
    /// which persists: every connection to the file then uses WAL (its `-wal` and `-shm`
    /// files beside it, a local disk). idem keeps its schema version in `user_version`, so
    /// a database whose `user_version` is not 0 but that has no `idem_records` table (an
    /// application keeps its own version there) is refused, naming the version, and left
    /// as it was. [`open_existing`](Self::open_existing) opens only a file that already is
    /// a store.
    pub fn open(self) -> Result<SqliteStore, StoreError> {
        let named = |e: StoreError, path: &Path| e.within(&format!("SQLite {}", path.display()), "open");
        let path = std::path::absolute(&self.path)
            .map_err(|e| named(StoreError::Backend(format!("making the path absolute: {e}").into()), &self.path))?;
        let options = Options { path, synchronous: self.synchronous, busy_timeout: self.busy_timeout };
        let anchor = options.create_parent().and_then(|()| options.set_up()).map_err(|e| named(e, &options.path))?;
        let identity = FileId::of(&options.path)
            .map(Identity::new)
            .map_err(|e| StoreError::Backend(format!("reading which file it is (device and inode): {e}").into()));
        // The file just set up must be the one at the path, or this store would answer
        // from a file nobody else opens.
        let identity =
            identity.and_then(|identity| identity.check_connection(&anchor, &options.path).map(|()| identity));
        let identity = identity.map_err(|e| named(e, &options.path))?;
        Ok(SqliteStore {
            options,
            identity,
            idle: Mutex::new(Vec::new()),
            writers: Writers::default(),
            anchor: Mutex::new(anchor),
        })
    }
}

/// Where and how a store opens its connections.
#[derive(Debug)]
pub(super) struct Options {
    /// Absolute.
    pub(super) path: PathBuf,
    synchronous: Synchronous,
    busy_timeout: Duration,
}

impl SqliteStore {
    /// Opens (or creates) the store at `path` with the default options: full durability
    /// and a 5 second busy timeout. See [`SqliteStoreBuilder::open`] for what it creates,
    /// and what it does with a database another application already uses.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::builder(path).open()
    }

    /// Options for opening the store at `path`, for a faster [`Synchronous`] mode or a
    /// longer busy timeout.
    pub fn builder(path: impl AsRef<Path>) -> SqliteStoreBuilder {
        SqliteStoreBuilder {
            path: path.as_ref().to_path_buf(),
            synchronous: Synchronous::Full,
            busy_timeout: Duration::from_secs(5),
        }
    }
}

impl Options {
    pub(super) fn synchronous(&self) -> Synchronous {
        self.synchronous
    }

    /// How long an operation waits for other writers.
    pub(super) fn busy_timeout(&self) -> Duration {
        self.busy_timeout
    }

    fn create_parent(&self) -> Result<(), StoreError> {
        let Some(parent) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) else {
            return Ok(());
        };
        std::fs::create_dir_all(parent).map_err(|e| {
            // With a file in the way, `create_dir_all` says only "File exists".
            let blocker = parent.ancestors().find(|a| a.symlink_metadata().is_ok()).filter(|a| !a.is_dir());
            let why = match blocker {
                Some(blocker) => format!("{} exists and is not a directory", blocker.display()),
                None => e.to_string(),
            };
            StoreError::Backend(format!("creating its directory {}: {why}", parent.display()).into())
        })
    }

    /// Opens and configures a new connection (per-connection pragmas only).
    pub(super) fn connect(&self, flags: OpenFlags) -> Result<Connection, rusqlite::Error> {
        let mut conn = Connection::open_with_flags(&self.path, flags)?;
        conn.busy_handler(Some(wait_for_lock(self.busy_timeout)))?;
        let synchronous = match self.synchronous {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
        };
        conn.pragma_update(None, "synchronous", synchronous)?;
        Ok(conn)
    }

    /// Opens a connection, switches the file to WAL and creates (or migrates) the schema
    /// if needed, once, even when several processes open a new file at the same moment;
    /// returns the connection.
    ///
    /// On a fresh file, `PRAGMA journal_mode=WAL` answers SQLITE_BUSY at once, without
    /// calling the busy handler, while another connection switches it; other steps may too
    /// while another process creates the schema. So a busy answer repeats the whole step,
    /// with a growing pause, until the busy timeout has passed; only then does open fail.
    fn set_up(&self) -> Result<Connection, StoreError> {
        let started = Instant::now();
        let mut pause = Duration::from_micros(200);
        loop {
            let attempt = self.connect(OpenFlags::default()).map_err(Init::from).and_then(|conn| {
                self.init_once(&conn)?;
                Ok(conn)
            });
            let error = match attempt {
                Err(Init::Busy(error)) => error,
                Err(Init::Failed(error)) => return Err(error),
                Err(Init::Driver(error)) => return Err(self.explained(error)),
                Ok(conn) => return Ok(conn),
            };
            let waited = started.elapsed();
            if waited >= self.busy_timeout {
                return Err(self.open_error(format!(
                    "it stayed locked by other connections for the whole busy timeout ({:?}) while it \
                     was being set up (WAL switch, schema): {error}; raise the busy timeout if many \
                     processes open it at once",
                    self.busy_timeout
                )));
            }
            // A little jitter, so that processes that collided do not retry in step.
            let jitter = Duration::from_nanos(u64::from(std::process::id() % 97) * 1_000);
            std::thread::sleep((pause + jitter).min(self.busy_timeout - waited));
            pause = (pause * 2).min(MAX_INIT_PAUSE);
        }
    }

    /// One attempt of [`set_up`](Self::set_up), on a new connection. The version is read
    /// first, so that a file refused for it is not switched to WAL.
    fn init_once(&self, conn: &Connection) -> Result<(), Init> {
        let version = self.check_version(conn)?;
        let mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(Init::Failed(self.open_error(format!(
                "cannot use WAL journal mode (got {mode:?}); the path must be a file on a local disk"
            ))));
        }
        if version == SCHEMA_VERSION {
            return Ok(());
        }
        // Check again under the write lock: another process may have created it meanwhile.
        let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
        match self.check_version(&tx)? {
            0 => tx.execute_batch(SCHEMA)?,
            SCHEMA_VERSION => {}
            old => {
                let from = usize::try_from(old - 1).expect("check_version returns 0 up to SCHEMA_VERSION");
                for migration in &MIGRATIONS[from..] {
                    tx.execute_batch(migration)?;
                }
            }
        }
        Ok(tx.commit()?)
    }

    /// The file's schema version: 0 (new), an older one to migrate, or [`SCHEMA_VERSION`];
    /// a newer one is an error, and so is a version without idem's table: idem keeps its
    /// version in `PRAGMA user_version`, so another application that keeps its own there
    /// cannot share the file.
    fn check_version(&self, conn: &Connection) -> Result<i64, Init> {
        let version: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
        if version == 0 {
            return Ok(0);
        }
        let why = if !has_idem_records(conn)? {
            format!(
                "its PRAGMA user_version is {version} but it has no idem_records table: another application \
                 keeps its own version there, where idem keeps its schema version, so they cannot share the \
                 file; use another file for idem"
            )
        } else if version > SCHEMA_VERSION {
            format!(
                "its schema version {version} was written by a newer idem (this one reads version \
                 {SCHEMA_VERSION}); upgrade idem, or use another file"
            )
        } else if version < 0 {
            format!("unknown schema version {version}; is it an idem store?")
        } else {
            return Ok(version);
        };
        Err(Init::Failed(self.open_error(why)))
    }

    /// [`open`](SqliteStoreBuilder::open) adds the file's path.
    fn open_error(&self, why: String) -> StoreError {
        StoreError::Backend(format!("cannot be opened as an idem store: {why}").into())
    }

    /// A driver error, with the operating system's reason where SQLite gives none: it says
    /// "unable to open database file" or "attempt to write a readonly database" whatever
    /// the cause.
    pub(super) fn explained(&self, error: rusqlite::Error) -> StoreError {
        use rusqlite::ErrorCode::{CannotOpen, ReadOnly};
        let refused = matches!(error.sqlite_error_code(), Some(CannotOpen | ReadOnly));
        match refused.then(|| why_refused(&self.path)).flatten() {
            Some(why) => StoreError::Backend(Box::new(Refused { error, why })),
            None => backend(error),
        }
    }
}

/// Whether the file has idem's table.
fn has_idem_records(conn: &Connection) -> Result<bool, rusqlite::Error> {
    let sql = "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'idem_records'";
    conn.query_row(sql, [], |row| row.get::<_, i64>(0)).map(|tables| tables > 0)
}

/// Why the operating system refuses SQLite the file at `path`, found by trying what SQLite
/// needs, but never by opening the file itself: closing any descriptor of it would
/// release the locks this process's SQLite connections hold on it.
fn why_refused(path: &Path) -> Option<String> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => return Some("the path is a directory".to_owned()),
        Ok(meta) if meta.permissions().readonly() => return Some("the file is read-only".to_owned()),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Some(format!("reading its metadata: {e}")),
    }
    // SQLite creates the file, or its -wal and -shm files, in its directory.
    static PROBES: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent()?;
    let probe = dir.join(format!(".idem-probe-{}-{}", std::process::id(), PROBES.fetch_add(1, Ordering::Relaxed)));
    match std::fs::OpenOptions::new().write(true).create_new(true).open(&probe) {
        Ok(file) => {
            drop(file);
            let _ = std::fs::remove_file(&probe);
            None
        }
        Err(e) => Some(format!("creating a file in {}: {e}", dir.display())),
    }
}

/// A driver error and the operating system's reason for it.
#[derive(Debug)]
struct Refused {
    error: rusqlite::Error,
    why: String,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.error, self.why)
    }
}

impl std::error::Error for Refused {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// Why one attempt to set a file up failed: busy (another connection holds the lock it
/// needs; try again) or for good.
enum Init {
    Busy(rusqlite::Error),
    Driver(rusqlite::Error),
    Failed(StoreError),
}

impl From<rusqlite::Error> for Init {
    fn from(error: rusqlite::Error) -> Self {
        match error.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => Init::Busy(error),
            _ => Init::Driver(error),
        }
    }
}

/// A busy handler: waits for another connection's lock for at most `timeout`.
///
/// SQLite's own busy timeout sleeps 1, 2, 5, 10, 15, 20, 25 ms... between attempts, so a
/// writer that loses a race by microseconds waits tens of milliseconds. Locks here are
/// held for one short statement, so polling starts at 50 µs and backs off to 6.4 ms.
fn wait_for_lock(timeout: Duration) -> impl FnMut(i32) -> bool + Send + 'static {
    let mut started = Instant::now();
    move |attempt| {
        if attempt == 0 {
            started = Instant::now();
        }
        let waited = started.elapsed();
        if waited >= timeout {
            return false;
        }
        let pause = Duration::from_micros(50 << attempt.clamp(0, 7));
        std::thread::sleep(pause.min(timeout - waited));
        true
    }
}
