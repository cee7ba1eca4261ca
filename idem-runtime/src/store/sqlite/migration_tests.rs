//! Files of older schema versions: each is migrated in place on open, once, keeping its
//! records.

use std::path::Path;
use std::sync::Barrier;
use std::time::Duration;

use rusqlite::Connection;

use super::*;
use crate::store::{BudgetStore, Record, RecordId, RecordState, Renew, Reservation, Reserve, Store, Token, block_on};

fn id(key: &str) -> RecordId<'_> {
    RecordId { namespace: "sqlite-test", key }
}

fn reserve(store: &SqliteStore, key: &str) -> Reservation {
    block_on(store.reserve(Reserve { id: id(key), request: "{}", lease: Duration::from_secs(60) })).unwrap()
}

fn raw(path: &Path) -> Connection {
    Connection::open(path).unwrap()
}

/// A file written by the first schema (before per-record retention) opens, keeps its
/// records, and gives settled ones the default retention.
#[test]
fn a_version_1_file_is_migrated_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.db");
    raw(&path)
        .execute_batch(
            "CREATE TABLE idem_records (token INTEGER PRIMARY KEY AUTOINCREMENT, namespace TEXT NOT NULL,
                 key TEXT NOT NULL, state TEXT NOT NULL, request TEXT NOT NULL, result TEXT,
                 created_at_ms INTEGER NOT NULL, updated_at_ms INTEGER NOT NULL, lease_until_ms INTEGER,
                 UNIQUE (namespace, key));
             CREATE INDEX idem_records_purge ON idem_records (state, updated_at_ms);
             INSERT INTO idem_records VALUES (7, 'sqlite-test', 'old', 'completed', '{}', '\"kept\"', 1000, 2000, NULL);
             INSERT INTO idem_records VALUES (8, 'sqlite-test', 'running', 'in_progress', '{}', NULL, 1000, 1000, 9e15);
             PRAGMA user_version = 1;",
        )
        .unwrap();
    let store = SqliteStore::open(&path).unwrap();
    let old = block_on(store.read(id("old"))).unwrap().unwrap();
    assert_eq!(old.state, RecordState::Completed { result: "\"kept\"".into() });
    assert_eq!(old.retain_until_ms, Some(2000 + crate::store::DEFAULT_RETAIN.as_millis() as i64));
    let running = block_on(store.read(id("running"))).unwrap().unwrap();
    assert_eq!(running.retain_until_ms, None);
    let version: i64 = raw(&path).pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    assert!(matches!(reserve(&store, "new"), Reservation::Acquired { token } if token > Token(8)));
    // Through version 2 to 3: the progress column exists and the old record has none.
    assert!(matches!(running.state, RecordState::InProgress { progress: None, .. }), "{running:?}");
    block_on(store.renew(Renew {
        id: id("running"),
        token: Token(8),
        lease: Duration::from_secs(60),
        progress: Some("p"),
    }))
    .unwrap();
    let renewed = block_on(store.read(id("running"))).unwrap().unwrap();
    assert!(matches!(renewed.state, RecordState::InProgress { progress: Some(ref p), .. } if p == "p"), "{renewed:?}");
}

/// The records table of schema version 2, before progress messages.
const V2_TABLE: &str = "CREATE TABLE idem_records (token INTEGER PRIMARY KEY AUTOINCREMENT, namespace TEXT NOT NULL,
    key TEXT NOT NULL, state TEXT NOT NULL, request TEXT NOT NULL, result TEXT,
    created_at_ms INTEGER NOT NULL, updated_at_ms INTEGER NOT NULL, lease_until_ms INTEGER,
    retain_until_ms INTEGER, UNIQUE (namespace, key));";

/// A file of version 2 (before progress messages) opens at the current version, keeps its
/// records byte for byte, and its in-progress record reads with no message, then takes one.
#[test]
fn a_version_2_file_is_migrated_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.db");
    let conn = raw(&path);
    conn.execute_batch(V2_TABLE).unwrap();
    conn.execute_batch(
        "CREATE INDEX idem_records_retention ON idem_records (retain_until_ms)
             WHERE retain_until_ms IS NOT NULL;
         INSERT INTO idem_records VALUES (7, 'sqlite-test', 'old', 'completed', '{}', '\"kept\"', 1000, 2000, NULL, 5000);
         INSERT INTO idem_records VALUES (8, 'sqlite-test', 'running', 'in_progress', '{}', NULL, 1000, 1000, 9e15, NULL);
         PRAGMA user_version = 2;",
    )
    .unwrap();
    drop(conn);
    let store = SqliteStore::open(&path).unwrap();
    let version: i64 = raw(&path).pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    let old = block_on(store.read(id("old"))).unwrap().unwrap();
    assert_eq!(
        old,
        Record {
            request: "{}".into(),
            token: Token(7),
            created_at_ms: 1000,
            updated_at_ms: 2000,
            retain_until_ms: Some(5000),
            state: RecordState::Completed { result: "\"kept\"".into() },
        }
    );
    let running = block_on(store.read(id("running"))).unwrap().unwrap();
    assert_eq!(running.token, Token(8));
    assert_eq!(
        running.state,
        RecordState::InProgress { lease_until_ms: 9_000_000_000_000_000, lease_expired: false, progress: None }
    );
    let renewal = |progress| Renew { id: id("running"), token: Token(8), lease: Duration::from_secs(60), progress };
    block_on(store.renew(renewal(Some("half way")))).unwrap();
    let renewed = block_on(store.read(id("running"))).unwrap().unwrap();
    assert!(
        matches!(&renewed.state, RecordState::InProgress { progress: Some(p), .. } if p == "half way"),
        "{renewed:?}"
    );
    drop(store);
    // Opening again finds the current version and migrates nothing twice.
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(block_on(store.read(id("running"))).unwrap().unwrap().state, renewed.state);
}

/// A file of version 3 (before budgets) opens at version 4: its records were charged
/// nothing (their release refunds nothing), and budgets work at once.
#[test]
fn a_version_3_file_is_migrated_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v3.db");
    let conn = raw(&path);
    conn.execute_batch(&V2_TABLE.replace("retain_until_ms INTEGER,", "retain_until_ms INTEGER, progress TEXT,"))
        .unwrap();
    conn.execute_batch(
        "INSERT INTO idem_records VALUES (8, 'sqlite-test', 'running', 'in_progress', '{}', NULL, 1000, 1000, 9e15, NULL, 'p');
         PRAGMA user_version = 3;",
    )
    .unwrap();
    drop(conn);
    let store = SqliteStore::open(&path).unwrap();
    let version: i64 = raw(&path).pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    let charge = crate::store::budget::Charge {
        budget: "b",
        scope: "",
        window_ms: 60_000,
        limit: crate::store::budget::UNIT,
        amount: crate::store::budget::UNIT,
        past_limit: false,
    };
    let request = Reserve { id: id("charged"), request: "{}", lease: Duration::from_secs(60) };
    assert!(matches!(block_on(store.reserve_charged(request, charge)).unwrap(), Reservation::Acquired { .. }));
    block_on(store.release(id("running"), Token(8))).unwrap();
    let windows = crate::store::Admin::budgets(&store, &Default::default()).unwrap();
    assert_eq!(windows.len(), 1);
    assert_eq!(windows[0].used, crate::store::budget::UNIT, "an old record's release refunds nothing");
}

/// Concurrent opens of one version-2 file migrate it once: the others wait for the write
/// lock, then find the current version.
#[test]
fn concurrent_opens_of_a_version_2_file_migrate_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2-race.db");
    let conn = raw(&path);
    conn.execute_batch(V2_TABLE).unwrap();
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA user_version = 2;").unwrap();
    drop(conn);
    let barrier = Barrier::new(6);
    std::thread::scope(|scope| {
        for _ in 0..6 {
            scope.spawn(|| {
                barrier.wait();
                let store = SqliteStore::open(&path).unwrap();
                reserve(&store, "after-migration");
            });
        }
    });
    let version: i64 = raw(&path).pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
    assert_eq!(version, SCHEMA_VERSION);
}
