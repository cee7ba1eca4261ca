//! `--db` naming something that is not an idem store: refused in one line that says what
//! is there, exit 1, and nothing about it changed: the same bytes, no tables, no switch to
//! WAL, no `-wal` or `-shm` file left beside it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use idem_runtime::SqliteStore;
use idem_runtime::store::{Store, block_on};
use rusqlite::Connection;

use super::{idem, text};

/// Every file of `dir` with its bytes: what must not change. Of a `-shm` file only its
/// presence counts: it is the shared memory of the connections that have the file open,
/// where a reader marks what it reads.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let files = std::fs::read_dir(dir).unwrap().map(|entry| entry.unwrap().path());
    let shm = |path: &Path| path.to_string_lossy().ends_with("-shm");
    files.map(|path| (path.clone(), if shm(&path) { Vec::new() } else { std::fs::read(path).unwrap() })).collect()
}

/// The files of `after` that are new, gone or changed since `before`.
fn changed(before: &BTreeMap<PathBuf, Vec<u8>>, after: &BTreeMap<PathBuf, Vec<u8>>) -> Vec<String> {
    let names = before.keys().chain(after.keys()).collect::<std::collections::BTreeSet<_>>();
    names
        .into_iter()
        .filter(|name| before.get(*name) != after.get(*name))
        .map(|name| name.display().to_string())
        .collect()
}

/// Another application's SQLite database: one table and a `user_version` of its own
/// (which may be idem's own version number), in rollback (`delete`) or WAL journal mode.
fn other_application(path: &Path, journal_mode: &str, user_version: i64) {
    let conn = Connection::open(path).unwrap();
    conn.pragma_update_and_check(None, "journal_mode", journal_mode, |_| Ok(())).unwrap();
    conn.execute_batch(
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, amount INTEGER);
         INSERT INTO orders (amount) VALUES (120);",
    )
    .unwrap();
    conn.pragma_update(None, "user_version", user_version).unwrap();
}

/// An idem store whose `user_version` then says `version`.
fn idem_store_at(path: &Path, version: i64) {
    drop(SqliteStore::open(path).unwrap());
    let conn = Connection::open(path).unwrap();
    conn.pragma_update(None, "user_version", version).unwrap();
}

/// Runs every command that opens the store against `db` and checks each is refused, in
/// one line naming the file and containing `found`, and that `dir` did not change.
fn refused_and_unchanged(dir: &Path, db: &Path, found: &str) {
    let before = snapshot(dir);
    for args in [
        &["list"][..],
        &["count"],
        &["purge"],
        &["show", "shop::pay", "pay:1"],
        &["resolve", "shop::pay", "pay:1", "--release", "--yes"],
        &["reopen", "shop::pay", "pay:1", "--yes"],
        &["list", "--json"],
    ] {
        let output = idem(db, args, "y\n");
        let said = text(&output);
        assert_eq!(output.status.code(), Some(1), "{}: {args:?}: {said}", db.display());
        assert!(output.stdout.is_empty(), "{}: {args:?}: nothing on stdout: {said}", db.display());
        assert_eq!(said.lines().count(), 1, "{}: {args:?}: one line: {said}", db.display());
        assert!(said.contains(&db.display().to_string()), "{args:?}: the file is named: {said}");
        assert!(said.contains(found), "{}: {args:?}: says {found:?}: {said}", db.display());
        assert_eq!(changed(&before, &snapshot(dir)), Vec::<String>::new(), "{}: {args:?}: changed", db.display());
    }
}

#[test]
fn an_empty_file_is_refused_and_left_empty() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("empty.db");
    std::fs::write(&db, "").unwrap();
    refused_and_unchanged(dir.path(), &db, "not an idem store: the file is empty (0 bytes)");
}

#[test]
fn a_text_file_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("notes.txt");
    std::fs::write(&db, "these are not the records you are looking for, not at all").unwrap();
    refused_and_unchanged(dir.path(), &db, "not an idem store: not a database (an SQLite file starts with");
}

/// Another application's database, in either journal mode: no idem table is created in
/// it, a rollback-mode file is not switched to WAL, and no `-wal`/`-shm` is left.
#[test]
fn another_applications_database_is_refused_and_left_as_it_was() {
    for (mode, user_version) in [("delete", 0), ("wal", 0), ("delete", 3), ("wal", 3)] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("other-app.db");
        other_application(&db, mode, user_version);
        refused_and_unchanged(dir.path(), &db, "other tables (orders) and no idem_records table");
        let conn = Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        let journal: String = conn.pragma_query_value(None, "journal_mode", |row| row.get(0)).unwrap();
        assert_eq!(journal, mode, "the journal mode is the application's");
    }
}

/// While the application has its WAL-mode database open (its `-wal` and `-shm` beside it),
/// the command reads through them and changes nothing either.
#[test]
fn another_applications_open_database_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("busy-app.db");
    other_application(&db, "wal", 0);
    let app = Connection::open(&db).unwrap();
    app.execute("INSERT INTO orders (amount) VALUES (130)", []).unwrap();
    assert!(dir.path().join("busy-app.db-wal").exists(), "the application holds the file open in WAL mode");
    refused_and_unchanged(dir.path(), &db, "other tables (orders) and no idem_records table");
    drop(app);
}

/// An SQLite file without a table, and one whose `idem_records` was not written by idem.
#[test]
fn an_sqlite_file_without_idems_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("bare.db");
    Connection::open(&bare).unwrap().execute_batch("CREATE TABLE t (x); DROP TABLE t;").unwrap();
    refused_and_unchanged(dir.path(), &bare, "an SQLite database without tables");
    let lookalike = dir.path().join("lookalike.db");
    Connection::open(&lookalike).unwrap().execute_batch("CREATE TABLE idem_records (key TEXT);").unwrap();
    refused_and_unchanged(dir.path(), &lookalike, "a table idem_records, but schema version 0");
}

/// A store of a schema version this command does not read: a newer idem's, and an older
/// one's (which the command would have to migrate, locking out the older tools still
/// using it).
#[test]
fn an_idem_store_of_another_schema_version_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let newer = dir.path().join("newer.db");
    idem_store_at(&newer, 99);
    refused_and_unchanged(dir.path(), &newer, "schema version 99, written by a newer idem");
    let older = dir.path().join("older.db");
    idem_store_at(&older, 2);
    refused_and_unchanged(dir.path(), &older, "schema version 2, older than");
}

/// PostgreSQL: a schema that does not exist, and one with another application's tables,
/// are refused saying so, and no idem table is created in either.
#[test]
fn a_postgres_schema_without_idems_tables_is_refused_and_left_as_it_was() {
    let Some(url) = super::postgres::pg_url("a_postgres_schema_without_idems_tables_is_refused_and_left_as_it_was")
    else {
        return;
    };
    let schema = format!("idem_cli_other_{}", std::process::id());
    let run = |schema: &str| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_idem"))
            .args(["--db", &url, "--schema", schema, "list"])
            .output()
            .unwrap();
        (output.status.code(), text(&output))
    };
    let (code, said) = run(&format!("{schema}_missing"));
    assert_eq!(code, Some(1), "{said}");
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(said.contains("not an idem store: there is no schema"), "{said}");
    super::postgres::sql(&url, &format!("CREATE SCHEMA {schema}; CREATE TABLE {schema}.orders (id int)"));
    let (code, said) = run(&schema);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("not an idem store: the schema holds other tables (orders) and no idem tables"), "{said}");
    let tables = super::postgres::sql_strings(
        &url,
        &format!("SELECT tablename::text FROM pg_tables WHERE schemaname = '{schema}' ORDER BY 1"),
    );
    assert_eq!(tables, ["orders"], "nothing created");
    let missing = super::postgres::sql_strings(
        &url,
        &format!("SELECT nspname::text FROM pg_namespace WHERE nspname = '{schema}_missing'"),
    );
    assert!(missing.is_empty(), "no schema created");
    super::postgres::sql(&url, &format!("DROP SCHEMA {schema} CASCADE"));
}

/// A PostgreSQL store of a newer or an older idem is refused, and stays at its version.
#[test]
fn a_postgres_store_of_another_schema_version_is_refused() {
    let Some(url) = super::postgres::pg_url("a_postgres_store_of_another_schema_version_is_refused") else { return };
    let schema = format!("idem_cli_versions_{}", std::process::id());
    let store = idem_runtime::store::PgStore::builder(&url).schema(&schema).build().unwrap();
    store.migrate_blocking().unwrap();
    let versions = format!("{schema}.idem_schema_version");
    for (change, found) in [
        (format!("INSERT INTO {versions} (version, description) VALUES (99, 'from the future')"), "version 99"),
        (format!("DELETE FROM {versions} WHERE version > 2"), "version 2, older than"),
    ] {
        super::postgres::sql(&url, &change);
        let before = super::postgres::sql_strings(&url, &format!("SELECT max(version)::text FROM {versions}"));
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_idem"))
            .args(["--db", &url, "--schema", &schema, "list"])
            .output()
            .unwrap();
        let said = text(&output);
        assert_eq!(output.status.code(), Some(1), "{said}");
        assert_eq!(said.lines().count(), 1, "{said}");
        assert!(said.contains(found), "{found:?}: {said}");
        let after = super::postgres::sql_strings(&url, &format!("SELECT max(version)::text FROM {versions}"));
        assert_eq!(after, before, "not migrated");
    }
    super::postgres::sql(&url, &format!("DROP SCHEMA {schema} CASCADE"));
}

/// A store whose tools have all exited (no `-wal`, no `-shm`: its main file is complete)
/// is read and changed as usual.
#[test]
fn a_store_no_process_has_open_is_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("idem.db");
    let store = SqliteStore::open(&db).unwrap();
    let id = idem_runtime::store::RecordId { namespace: "shop::pay", key: "pay:1" };
    let reserve = idem_runtime::store::Reserve { id, request: "{}", lease: std::time::Duration::ZERO };
    block_on(store.reserve(reserve)).unwrap();
    drop(store);
    assert!(!dir.path().join("idem.db-wal").exists(), "the last connection removed its WAL");
    let listed = idem(&db, &["list", "--state", "abandoned"], "");
    assert!(listed.status.success() && text(&listed).contains("pay:1"), "{}", text(&listed));
    let released = idem(&db, &["resolve", "shop::pay", "pay:1", "--release", "--yes"], "");
    assert!(released.status.success(), "{}", text(&released));
    let store = SqliteStore::open(&db).unwrap();
    assert_eq!(block_on(store.read(id)).unwrap(), None);
}
