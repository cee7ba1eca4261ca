//! Counting what SQLite asks of the disk: a VFS that forwards everything to the default
//! one (`unix`) and counts, for every connection of the process opened after
//! [`install`], each `xSync` (a disk sync: `fsync`/`fdatasync` under `synchronous =
//! FULL`) by file, and the furthest byte written to a WAL file (the WAL's peak size).
//!
//! It is registered as the default VFS, so idem's store and the hand-written rusqlite
//! connections go through it alike, without naming it. It changes no file: each open file
//! keeps the default VFS's own structure, and only its method table is swapped for a copy
//! whose `xSync` and `xWrite` count before they call the original.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use rusqlite::ffi;

/// Counts since the process started; take two [`snapshot`]s and subtract.
static DB_SYNCS: AtomicU64 = AtomicU64::new(0);
static WAL_SYNCS: AtomicU64 = AtomicU64::new(0);
/// The largest end offset of any write to a WAL file since the last [`reset_wal_peak`].
static WAL_PEAK: AtomicU64 = AtomicU64::new(0);

/// What the disk was asked to do.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    /// Syncs of database files: WAL checkpoints (one per checkpoint that copied pages).
    pub db_syncs: u64,
    /// Syncs of WAL files: one per commit at `FULL`, one more per checkpoint.
    pub wal_syncs: u64,
}

impl Counts {
    pub fn syncs(self) -> u64 {
        self.db_syncs + self.wal_syncs
    }

    pub fn since(self, earlier: Counts) -> Counts {
        Counts { db_syncs: self.db_syncs - earlier.db_syncs, wal_syncs: self.wal_syncs - earlier.wal_syncs }
    }
}

pub fn snapshot() -> Counts {
    Counts { db_syncs: DB_SYNCS.load(Ordering::SeqCst), wal_syncs: WAL_SYNCS.load(Ordering::SeqCst) }
}

/// The furthest any WAL file was written since the last reset: the peak WAL size.
pub fn wal_peak() -> u64 {
    WAL_PEAK.load(Ordering::SeqCst)
}

pub fn reset_wal_peak() {
    WAL_PEAK.store(0, Ordering::SeqCst);
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Db,
    Wal,
    Other,
}

/// A copy of a file's method table that counts; `methods` comes first, so a file's
/// `pMethods` points at the whole struct.
#[repr(C)]
struct Counting {
    methods: ffi::sqlite3_io_methods,
    original: *const ffi::sqlite3_io_methods,
    kind: Kind,
}

/// The tables made so far (leaked, one per original table and kind), as addresses.
static TABLES: Mutex<Vec<(usize, u8, usize)>> = Mutex::new(Vec::new());

fn table_for(original: *const ffi::sqlite3_io_methods, kind: Kind) -> *const ffi::sqlite3_io_methods {
    let mut tables = TABLES.lock().unwrap();
    let tag = kind as u8;
    if let Some(&(_, _, table)) = tables.iter().find(|(o, k, _)| *o == original as usize && *k == tag) {
        return table as *const ffi::sqlite3_io_methods;
    }
    // SAFETY: `original` is the live, static method table SQLite's own VFS just installed.
    let mut methods = unsafe { *original };
    methods.xSync = Some(x_sync);
    methods.xWrite = Some(x_write);
    let table = Box::leak(Box::new(Counting { methods, original, kind })) as *const Counting;
    tables.push((original as usize, tag, table as usize));
    table.cast()
}

/// # Safety
/// Called by SQLite on a file this VFS opened, whose `pMethods` is a [`Counting`].
unsafe fn original(file: *mut ffi::sqlite3_file) -> (&'static ffi::sqlite3_io_methods, Kind) {
    // SAFETY: see above; the tables are leaked, so they live for the process.
    unsafe {
        let counting = &*((*file).pMethods as *const Counting);
        (&*counting.original, counting.kind)
    }
}

unsafe extern "C" fn x_sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    // SAFETY: SQLite calls this on a file of this VFS.
    let (methods, kind) = unsafe { original(file) };
    match kind {
        Kind::Db => DB_SYNCS.fetch_add(1, Ordering::SeqCst),
        Kind::Wal => WAL_SYNCS.fetch_add(1, Ordering::SeqCst),
        Kind::Other => 0,
    };
    // SAFETY: the original method on the original file structure.
    unsafe { methods.xSync.expect("every file can sync")(file, flags) }
}

unsafe extern "C" fn x_write(file: *mut ffi::sqlite3_file, data: *const c_void, amount: c_int, offset: i64) -> c_int {
    // SAFETY: SQLite calls this on a file of this VFS.
    let (methods, kind) = unsafe { original(file) };
    if kind == Kind::Wal {
        WAL_PEAK.fetch_max(u64::try_from(offset + i64::from(amount)).unwrap_or(0), Ordering::SeqCst);
    }
    // SAFETY: the original method on the original file structure.
    unsafe { methods.xWrite.expect("every file can write")(file, data, amount, offset) }
}

unsafe extern "C" fn x_open(
    vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    // SAFETY: `pAppData` is the default VFS this one wraps; the arguments are SQLite's.
    unsafe {
        let base = (*vfs).pAppData.cast::<ffi::sqlite3_vfs>();
        let rc = (*base).xOpen.expect("a VFS opens files")(base, name, file, flags, out_flags);
        if rc == ffi::SQLITE_OK && !(*file).pMethods.is_null() {
            let kind = if flags & ffi::SQLITE_OPEN_WAL != 0 {
                Kind::Wal
            } else if flags & ffi::SQLITE_OPEN_MAIN_DB != 0 {
                Kind::Db
            } else {
                Kind::Other
            };
            (*file).pMethods = table_for((*file).pMethods, kind);
        }
        rc
    }
}

/// Registers the counting VFS as the process's default, once; connections opened from
/// then on are counted.
pub fn install() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        // SAFETY: the default VFS is static; the copy is leaked, as SQLite requires a
        // registered VFS to outlive every connection that uses it.
        unsafe {
            let base = ffi::sqlite3_vfs_find(std::ptr::null());
            assert!(!base.is_null(), "SQLite has a default VFS");
            let mut vfs = *base;
            vfs.zName = c"idem-bench-counting".as_ptr();
            vfs.pAppData = base.cast();
            vfs.pNext = std::ptr::null_mut();
            vfs.xOpen = Some(x_open);
            let vfs = Box::leak(Box::new(vfs));
            assert_eq!(ffi::sqlite3_vfs_register(vfs, 1), ffi::SQLITE_OK);
        }
    });
}
