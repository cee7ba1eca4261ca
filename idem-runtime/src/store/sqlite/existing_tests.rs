//! Another application's database: what `open` does with it (shares it, or refuses it
//! untouched), and `open_existing`, which only ever opens a store.

use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;

use super::{SCHEMA_VERSION, SqliteStore};
use crate::store::{RecordId, Transacted};

/// An application's database in rollback journal mode: a table, a row, and `user_version`.
fn application_database(path: &Path, user_version: i64) {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(
        "CREATE TABLE orders (id TEXT PRIMARY KEY, amount INTEGER); INSERT INTO orders VALUES ('o-0', 5);",
    )
    .unwrap();
    conn.pragma_update(None, "user_version", user_version).unwrap();
}

fn journal_mode(path: &Path) -> String {
    Connection::open(path).unwrap().pragma_query_value(None, "journal_mode", |row| row.get(0)).unwrap()
}

/// Sharing a file with the application's own tables is what the transactional mode is
/// for: `open` adds idem's table beside them, keeps theirs, and switches the file to WAL
/// (for good: every connection then uses WAL).
#[test]
fn open_shares_an_applications_database_and_switches_it_to_wal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.db");
    application_database(&path, 0);
    assert_eq!(journal_mode(&path), "delete");
    let store = SqliteStore::open(&path).unwrap();
    let id = RecordId { namespace: "shop", key: "o-1" };
    let placed = store.transaction(id, &(), Duration::from_secs(60), |tx| {
        tx.execute("INSERT INTO orders VALUES ('o-1', 120)", []).map(|_| "placed".to_owned())
    });
    assert!(matches!(&placed, Ok(Transacted::Ran(text)) if text == "placed"), "{placed:?}");
    drop(store);
    let conn = Connection::open(&path).unwrap();
    let orders: i64 = conn.query_row("SELECT count(*) FROM orders", [], |row| row.get(0)).unwrap();
    assert_eq!(orders, 2, "the application's row and the transaction's");
    let version: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0)).unwrap();
    assert_eq!(version, SCHEMA_VERSION, "idem keeps its schema version in user_version");
    assert_eq!(journal_mode(&path), "wal", "switched to WAL, and it stays");
}

/// An application that keeps its own version in `user_version` cannot share the file:
/// `open` refuses it, saying why, and leaves it as it was (not even switched to WAL),
/// where it took the number for idem's (version 3: every call then failed on a missing
/// table; version 2: the migration failed).
#[test]
fn open_refuses_an_applications_database_with_a_user_version_of_its_own() {
    for user_version in [1, 2, SCHEMA_VERSION, SCHEMA_VERSION + 4] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.db");
        application_database(&path, user_version);
        let before = std::fs::read(&path).unwrap();
        let error = SqliteStore::open(&path).unwrap_err().to_string();
        assert!(
            error.contains(&format!("its PRAGMA user_version is {user_version} but it has no idem_records table")),
            "{error}"
        );
        assert!(error.contains(&path.display().to_string()), "{error}");
        assert_eq!(std::fs::read(&path).unwrap(), before, "version {user_version}: the file changed");
        assert_eq!(journal_mode(&path), "delete");
    }
}

#[test]
fn open_existing_opens_a_store_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    // `?`, `#`, `%` and a space in the name: a URI's special characters stay part of it.
    let store_path = dir.path().join("a?b#c%d e.db");
    drop(SqliteStore::open(&store_path).unwrap());
    let store = SqliteStore::builder(&store_path).open_existing().unwrap();
    assert_eq!(store.path(), store_path);
    drop(store);
    let app = dir.path().join("app?x#y%z.db");
    application_database(&app, 0);
    let error = SqliteStore::builder(&app).open_existing().unwrap_err().to_string();
    assert!(error.contains("other tables (orders) and no idem_records table"), "{error}");
    for (path, found) in
        [(dir.path().join("missing.db"), "there is no file at this path"), (dir.path().to_owned(), "it is a directory")]
    {
        let error = SqliteStore::builder(&path).open_existing().unwrap_err().to_string();
        assert!(error.contains(found) && error.contains(&path.display().to_string()), "{error}");
    }
    assert!(!dir.path().join("missing.db").exists(), "nothing created");
}
