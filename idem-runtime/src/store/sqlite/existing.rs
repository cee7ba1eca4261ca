//! Opening only a file that already is an idem store, for tools that must never create or
//! change one (the `idem` operator command).
//!
//! The file is inspected read-only before anything else touches it. A plain read-only
//! connection is not enough: on a WAL-mode file whose `-wal` and `-shm` are absent, SQLite
//! creates them and leaves them behind. So such a file is read as `immutable` (its main
//! file is then complete: a WAL-mode file without its `-wal` has nothing outside it), and
//! only a file whose `-wal` and `-shm` are both there (an application has it open) is
//! read through them, which creates nothing.

use std::fmt::Write as _;
use std::io::Read;
use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use super::open::SqliteStoreBuilder;
use super::schema::SCHEMA;
use super::{SCHEMA_VERSION, SqliteStore};
use crate::store::StoreError;

/// What every SQLite database file starts with.
const MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// How many of another application's tables a message names.
const TABLES_NAMED: usize = 5;

impl SqliteStoreBuilder {
    /// Opens the store only if the file already is one: it holds idem's table
    /// (`idem_records`, with idem's columns) at the schema version this idem reads. For
    /// tools that must never create or change a store, such as the `idem` operator command.
    ///
    /// The file is inspected read-only first, and anything else is refused with an error
    /// that names the file and says what it holds: no file, a directory, an empty file, a
    /// file that is not an SQLite database, another application's database (its tables are
    /// named), an idem store of an older schema version (which [`open`](Self::open) would
    /// migrate, locking out the older idem that wrote it) or a newer one. A refused file
    /// is left exactly as it was: no table is created, its journal mode is not switched to
    /// WAL, and no `-wal` or `-shm` file is left beside it. A store is then opened as
    /// [`open`](Self::open) opens it, which changes nothing in a store of this version.
    pub fn open_existing(self) -> Result<SqliteStore, StoreError> {
        let path = std::path::absolute(&self.path).unwrap_or_else(|_| self.path.clone());
        inspect(&path).map_err(|found| {
            let error = StoreError::Backend(format!("{found}; the file was left as it was").into());
            error.within(&format!("SQLite {}", path.display()), "open")
        })?;
        self.open()
    }
}

/// `Ok` when the file at `path` holds idem's schema at [`SCHEMA_VERSION`], else what it
/// holds instead.
fn inspect(path: &Path) -> Result<(), String> {
    let header = header(path)?;
    if header.is_empty() {
        return Err("not an idem store: the file is empty (0 bytes)".to_owned());
    }
    if !header.starts_with(MAGIC) || header.len() < 100 {
        let start = String::from_utf8_lossy(&header[..header.len().min(16)]).into_owned();
        return Err(format!(
            "not an idem store: not a database (an SQLite file starts with \"SQLite format 3\", this one with \
             {start:?})"
        ));
    }
    // Bytes 18 and 19: the read and write versions, 2 in WAL mode.
    let wal = header[18] == 2 && header[19] == 2;
    let beside = |suffix: &str| {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        Path::new(&name).exists()
    };
    let immutable = wal && !(beside("-wal") && beside("-shm"));
    let conn = Connection::open_with_flags(
        uri(path, if immutable { "immutable=1" } else { "mode=ro" }),
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| format!("SQLite cannot open it read-only: {e}"))?;
    let unreadable = |e: rusqlite::Error| format!("not an idem store: SQLite cannot read it: {e}");
    let tables = column_of(
        &conn,
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite%' ORDER BY name",
    )
    .map_err(unreadable)?;
    let version: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0)).map_err(unreadable)?;
    if !tables.iter().any(|table| table == "idem_records") {
        return Err(match tables.len() {
            0 => "not an idem store: an SQLite database without tables".to_owned(),
            n => {
                let mut named = tables[..n.min(TABLES_NAMED)].join(", ");
                if n > TABLES_NAMED {
                    let _ = write!(named, ", ... {n} in all");
                }
                format!("not an idem store: an SQLite database with other tables ({named}) and no idem_records table")
            }
        });
    }
    match version {
        SCHEMA_VERSION => {}
        v if v > SCHEMA_VERSION => {
            return Err(format!(
                "an idem store of schema version {v}, written by a newer idem (this one reads version \
                 {SCHEMA_VERSION}): use an idem as new as the tools that wrote it"
            ));
        }
        v if v >= 1 => {
            return Err(format!(
                "an idem store of schema version {v}, older than this idem's {SCHEMA_VERSION}: opening it would \
                 migrate it, and the older idem that wrote it could no longer open it; use an idem of the tools' \
                 version, or let the tools migrate it when they are upgraded"
            ));
        }
        v => {
            return Err(format!(
                "not an idem store: it has a table idem_records, but schema version {v} (PRAGMA user_version), \
                 which idem never writes"
            ));
        }
    }
    let columns =
        column_of(&conn, "SELECT name FROM pragma_table_info('idem_records') ORDER BY cid").map_err(unreadable)?;
    let expected = idem_columns();
    if columns != expected {
        let missing: Vec<&str> =
            expected.iter().filter(|column| !columns.contains(column)).map(String::as_str).collect();
        return Err(format!(
            "not an idem store: its table idem_records does not have idem's columns (missing: {}; has: {})",
            if missing.is_empty() { "none, but in another order".to_owned() } else { missing.join(", ") },
            columns.join(", ")
        ));
    }
    Ok(())
}

/// The file's first 100 bytes (SQLite's header), fewer if it is shorter.
fn header(path: &Path) -> Result<Vec<u8>, String> {
    let file = std::fs::File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "not an idem store: there is no file at this path".to_owned(),
        _ => format!("cannot read it: {e}"),
    })?;
    if file.metadata().is_ok_and(|meta| meta.is_dir()) {
        return Err("not an idem store: it is a directory".to_owned());
    }
    let mut header = Vec::with_capacity(100);
    file.take(100).read_to_end(&mut header).map_err(|e| format!("cannot read it: {e}"))?;
    Ok(header)
}

/// The first column of every row `sql` returns, as text.
fn column_of(conn: &Connection, sql: &str) -> Result<Vec<String>, rusqlite::Error> {
    let mut stmt = conn.prepare(sql)?;
    stmt.query_map([], |row| row.get(0))?.collect()
}

/// The columns of `idem_records` as this idem creates it.
fn idem_columns() -> Vec<String> {
    let conn = Connection::open_in_memory().expect("an in-memory database");
    conn.execute_batch(SCHEMA).expect("idem's schema");
    column_of(&conn, "SELECT name FROM pragma_table_info('idem_records') ORDER BY cid").expect("its columns")
}

/// `path` as an SQLite URI with one query parameter: `file:/a/b.db?mode=ro`. Every byte
/// but letters, digits and `/-._~` is percent-encoded, so `?`, `#` and `%` in a file
/// name stay part of it.
fn uri(path: &Path, parameter: &str) -> String {
    #[cfg(unix)]
    let bytes = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()).to_vec();
    #[cfg(not(unix))]
    let bytes = path.to_string_lossy().replace('\\', "/").into_bytes();
    let mut uri = String::from(if cfg!(windows) { "file:///" } else { "file:" });
    for byte in bytes {
        if byte.is_ascii_alphanumeric() || b"/-._~:".contains(&byte) {
            uri.push(char::from(byte));
        } else {
            let _ = write!(uri, "%{byte:02X}");
        }
    }
    uri + "?" + parameter
}
