//! The SQLite store's own checks, beyond the shared conformance suite.

use std::sync::Barrier;
use std::sync::atomic::{AtomicUsize, Ordering};

use rusqlite::params;

use std::time::Duration;

use rusqlite::types::Value;

use super::ops::INSERT;
use super::write::text;
use super::writers::Shared;
use super::*;
use crate::store::{Completion, RecordId, RecordState, Renew, Reservation, Reserve, Store, StoreError, block_on};
use crate::testing::conformance::{check_exclusive_reserve, check_store, check_unknown_state};

fn id(key: &str) -> RecordId<'_> {
    RecordId { namespace: "sqlite-test", key }
}

fn reserve(store: &SqliteStore, key: &str) -> Reservation {
    let request = Reserve { id: id(key), request: "{}", lease: Duration::from_secs(60) };
    block_on(store.reserve(request)).unwrap()
}

fn raw(path: &Path) -> Connection {
    Connection::open(path).unwrap()
}

#[test]
fn passes_the_conformance_checks() {
    let dir = tempfile::tempdir().unwrap();
    let n = AtomicUsize::new(0);
    check_store(|| {
        let path = dir.path().join(format!("store-{}.db", n.fetch_add(1, Ordering::Relaxed)));
        SqliteStore::open(path).unwrap()
    });
    check_unknown_state(&SqliteStore::open(dir.path().join("unknown-state.db")).unwrap());
    crate::testing::conformance::check_admin(|| {
        let path = dir.path().join(format!("admin-{}.db", n.fetch_add(1, Ordering::Relaxed)));
        SqliteStore::open(path).unwrap()
    });
    crate::testing::conformance::check_approvals(|| {
        let path = dir.path().join(format!("approvals-{}.db", n.fetch_add(1, Ordering::Relaxed)));
        SqliteStore::open(path).unwrap()
    });
}

/// Budgets, at both durabilities: at `FULL` writers take turns in the store, at `NORMAL`
/// they meet at SQLite's lock.
#[test]
fn passes_the_budget_checks() {
    let dir = tempfile::tempdir().unwrap();
    let n = AtomicUsize::new(0);
    for synchronous in [Synchronous::Full, Synchronous::Normal] {
        crate::testing::conformance::check_budgets(|| {
            let path = dir.path().join(format!("budgets-{}.db", n.fetch_add(1, Ordering::Relaxed)));
            SqliteStore::builder(path).synchronous(synchronous).open().unwrap()
        });
    }
}

#[test]
fn first_open_creates_directories_file_and_schema() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a/b/c/idem.db");
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.path(), path);
    assert!(path.is_file());
    let conn = raw(&path);
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    let mode: String = conn.pragma_query_value(None, "journal_mode", |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
    let tables: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name IN ('idem_records', 'idem_records_retention')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(tables, 2, "the table and its retention index must exist");
}

#[test]
fn reopening_keeps_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idem.db");
    let store = SqliteStore::open(&path).unwrap();
    let Reservation::Acquired { token } = reserve(&store, "kept") else {
        panic!("a new key must be acquired");
    };
    block_on(store.complete(id("kept"), token, Completion::Success("[]"), Duration::from_secs(60))).unwrap();
    drop(store);
    let store = SqliteStore::open(&path).unwrap();
    let Reservation::Existing(record) = reserve(&store, "kept") else {
        panic!("the record must survive reopening");
    };
    assert_eq!(record.token, token);
    assert_eq!(record.state, RecordState::Completed { result: "[]".into() });
}

#[test]
fn a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idem.db");
    drop(SqliteStore::open(&path).unwrap());
    raw(&path).pragma_update(None, "user_version", 99).unwrap();
    let error = SqliteStore::open(&path).unwrap_err().to_string();
    assert!(error.contains("newer idem"), "unexpected error: {error}");
    assert!(error.contains("99"), "the error must name the version: {error}");
}

#[test]
fn concurrent_first_opens_create_the_schema_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new/idem.db");
    let barrier = Barrier::new(8);
    std::thread::scope(|scope| {
        for _ in 0..8 {
            scope.spawn(|| {
                barrier.wait();
                let store = SqliteStore::open(&path).unwrap();
                reserve(&store, "after-open");
            });
        }
    });
}

#[test]
fn two_handles_on_one_file_acquire_each_id_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let stores = [SqliteStore::open(&path).unwrap(), SqliteStore::open(&path).unwrap()];
    check_exclusive_reserve(&stores);
}

#[test]
fn synchronous_normal_works() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::builder(dir.path().join("normal.db"))
        .synchronous(Synchronous::Normal)
        .busy_timeout(Duration::from_secs(1))
        .open()
        .unwrap();
    let mode: i64 =
        store.with_conn("read", |c| c.pragma_query_value(None, "synchronous", |r| r.get(0)).map_err(backend)).unwrap();
    assert_eq!(mode, 1, "PRAGMA synchronous must be NORMAL (1)");
    let Reservation::Acquired { token } = reserve(&store, "normal") else {
        panic!("a new key must be acquired");
    };
    block_on(store.complete(id("normal"), token, Completion::Success("1"), Duration::from_secs(60))).unwrap();
    let record = block_on(store.read(id("normal"))).unwrap().unwrap();
    assert_eq!(record.state, RecordState::Completed { result: "1".into() });
}

#[test]
fn unreadable_rows_are_corrupt_and_name_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idem.db");
    let store = SqliteStore::open(&path).unwrap();
    let conn = raw(&path);
    let insert = "INSERT INTO idem_records (namespace, key, state, request, result, \
                  created_at_ms, updated_at_ms) VALUES ('sqlite-test', ?1, ?2, '{}', NULL, 0, 0)";
    conn.execute(insert, params!["odd-state", "paused"]).unwrap();
    conn.execute(insert, params!["no-result", "completed"]).unwrap();
    for key in ["odd-state", "no-result"] {
        match block_on(store.read(id(key))) {
            Err(StoreError::Corrupt(what)) => assert!(what.contains(key), "{what}"),
            other => panic!("{key}: expected Corrupt, got {other:?}"),
        }
        match block_on(store.reserve(Reserve { id: id(key), request: "{}", lease: Duration::ZERO })) {
            Err(StoreError::Corrupt(_)) => {}
            other => panic!("{key}: reserve must report Corrupt, got {other:?}"),
        }
    }
}

#[test]
fn is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<SqliteStore>();
}

/// A file that another connection keeps locked for longer than the busy timeout fails to
/// open, after the timeout, with an error that says what happened.
#[test]
fn a_file_locked_past_the_busy_timeout_fails_to_open_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("locked.db");
    let holder = raw(&path);
    holder.execute_batch("BEGIN EXCLUSIVE; CREATE TABLE other (x);").unwrap();
    let error = SqliteStore::builder(&path).busy_timeout(Duration::from_millis(100)).open().unwrap_err();
    let message = error.to_string();
    assert!(message.contains("busy timeout") && message.contains("locked.db"), "{message}");
    holder.execute_batch("ROLLBACK").unwrap();
    SqliteStore::builder(&path).busy_timeout(Duration::from_millis(100)).open().unwrap();
}

/// A backend failure names the store's file and the operation, so that STORE_UNAVAILABLE
/// says which file failed doing what, and keeps the original error as its source; other
/// errors pass unchanged.
#[test]
fn backend_failures_name_the_file_and_keep_their_source() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("named.db")).unwrap();
    let io = std::io::Error::other("disk full");
    let wrapped = store.within(StoreError::Backend(Box::new(io)), "complete");
    let text = wrapped.to_string();
    assert_eq!(text, format!("store failed: SQLite {}: complete: disk full", store.path().display()));
    let StoreError::Backend(inner) = &wrapped else { panic!("{wrapped:?}") };
    assert_eq!(std::error::Error::source(&**inner).unwrap().to_string(), "disk full");
    assert!(matches!(store.within(StoreError::Fenced, "renew"), StoreError::Fenced));
}

/// Every failure to open names the file, whatever step failed.
#[test]
fn open_failures_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let not_a_db = dir.path().join("garbage.db");
    std::fs::write(&not_a_db, "this is not an SQLite file, and long enough to be read as one").unwrap();
    let not_a_dir = dir.path().join("a-file");
    std::fs::write(&not_a_dir, "").unwrap();
    for path in [not_a_db, not_a_dir.join("keys.db")] {
        let error = SqliteStore::open(&path).unwrap_err().to_string();
        assert!(error.contains(&path.display().to_string()), "{error}");
    }
}

/// A file SQLite cannot open fails with the path, the operation and the operating
/// system's reason, not SQLite's "unable to open database file" alone. These fail for
/// root too, whom permission bits do not stop.
#[test]
fn open_failures_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let a_file = dir.path().join("a-file");
    std::fs::write(&a_file, "").unwrap();
    let blocked = format!("creating its directory {0}/sub: {0} exists and is not a directory", a_file.display());
    let cases = [(a_file.join("sub/keys.db"), blocked.as_str()), (dir.path().to_path_buf(), "the path is a directory")];
    for (path, why) in cases {
        let error = SqliteStore::open(&path).unwrap_err().to_string();
        let named = format!("store failed: SQLite {}: open: ", path.display());
        assert!(error.starts_with(&named) && error.contains(why), "{error}");
    }
}

/// Settling a record clears its progress column, by its holder or by hand: a settled row
/// never carries a message that no read would show.
#[test]
fn settling_clears_the_progress_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("progress.db");
    let store = SqliteStore::open(&path).unwrap();
    for key in ["completed", "failed", "resolved"] {
        let Reservation::Acquired { token } = reserve(&store, key) else { panic!("a new key must be acquired") };
        block_on(store.renew(Renew { id: id(key), token, lease: Duration::from_secs(60), progress: Some("busy") }))
            .unwrap();
        let retain = Duration::from_secs(60);
        match key {
            "completed" => block_on(store.complete(id(key), token, Completion::Success("1"), retain)).unwrap(),
            "failed" => block_on(store.complete(id(key), token, Completion::KeptError("{}"), retain)).unwrap(),
            _ => crate::store::Admin::resolve_done(&store, id(key), "1", retain).unwrap(),
        }
    }
    let left: i64 =
        raw(&path).query_row("SELECT count(*) FROM idem_records WHERE progress NOTNULL", [], |r| r.get(0)).unwrap();
    assert_eq!(left, 0, "no settled row may keep a progress message");
}

fn insert(key: &str) -> Shared {
    let params = vec![text("sqlite-test"), text(key), text("{}"), Value::Integer(60_000)];
    Shared { sql: INSERT, params, insert: true }
}

/// A group's writes commit together; one that fails alone (here a statement SQLite cannot
/// prepare) fails only its own caller, and the others are committed.
#[test]
fn a_group_commits_its_writes_and_a_failing_one_fails_alone() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("group.db")).unwrap();
    let bad = Shared { sql: "UPDATE no_such_table SET x = 1", params: Vec::new(), insert: false };
    let written = store.with_conn("test", |conn| Ok(store.commit(conn, vec![insert("a"), bad, insert("b")]))).unwrap();
    assert!(matches!(written[0], Ok((1, _))), "{written:?}");
    assert!(written[1].is_err(), "{written:?}");
    assert!(matches!(written[2], Ok((1, _))), "{written:?}");
    let (Ok((_, a)), Ok((_, b))) = (&written[0], &written[2]) else { unreachable!() };
    assert!(a < b, "each insert answers its own row id: {written:?}");
    for key in ["a", "b"] {
        assert!(matches!(reserve(&store, key), Reservation::Existing(_)), "{key} was committed");
    }
    // A repeat in a later group inserts nothing.
    let again = store.with_conn("test", |conn| Ok(store.commit(conn, vec![insert("a"), insert("c")]))).unwrap();
    assert!(matches!(again[..], [Ok((0, _)), Ok((1, _))]), "{again:?}");
}

/// Many threads' first calls at `FULL` share commits, and every reservation and completion
/// lands.
#[test]
fn concurrent_writes_share_commits_and_all_land() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("shared.db")).unwrap();
    let store = &store;
    let (threads, per_thread) = (8, 50);
    std::thread::scope(|scope| {
        for t in 0..threads {
            scope.spawn(move || {
                for i in 0..per_thread {
                    let key = format!("k{t}-{i}");
                    let Reservation::Acquired { token } = reserve(store, &key) else { panic!("{key} was taken") };
                    block_on(store.complete(id(&key), token, Completion::Success("1"), Duration::from_secs(60)))
                        .unwrap();
                }
            });
        }
    });
    for t in 0..threads {
        for i in 0..per_thread {
            let key = format!("k{t}-{i}");
            assert!(
                matches!(block_on(store.read(id(&key))).unwrap().unwrap().state, RecordState::Completed { .. }),
                "{key}"
            );
        }
    }
    let shared = store.writers.shared.load(Ordering::Relaxed);
    assert!(shared > 0, "of {} writes none shared a commit", threads * per_thread * 2);
}
