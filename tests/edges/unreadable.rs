//! A record the store cannot interpret (a state a newer idem wrote during a rolling
//! deploy, a row damaged by hand) is RECORD_UNREADABLE: not retryable, a person must look,
//! on the call path and the status path, sync and async, in every store. Never
//! STORE_UNAVAILABLE, which would have an agent retry forever; never a re-run.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::postgres::{fresh_schema, test_url};
use idem::store::RecordId;
use idem::store::Store;
use idem::testing::conformance::PlantRecord;
use idem::{ErrorCode, MemoryStore, SqliteStore, idempotent};

const NAMESPACE: &str = "unreadable.notify";
const KEY: &str = "notify:u1";

/// Runs of the body: a record nobody can read must never let it run.
static RUNS: AtomicUsize = AtomicUsize::new(0);

#[idempotent(key = "notify:<user>", namespace = "unreadable.notify", store = store)]
fn notify<S: Store>(store: &S, user: String) -> Result<String, idem::Error> {
    RUNS.fetch_add(1, Ordering::SeqCst);
    Ok(format!("sent to {user}"))
}

#[idempotent(key = "notify:<user>", namespace = "unreadable.notify", store = store)]
async fn notify_async<S: Store>(store: &S, user: String) -> Result<String, idem::Error> {
    RUNS.fetch_add(1, Ordering::SeqCst);
    Ok(format!("sent to {user}"))
}

/// Every way a user reaches the key answers RECORD_UNREADABLE, naming namespace and key,
/// and the body never runs.
fn assert_unreadable<S: Store>(store: &S) {
    let before = RUNS.load(Ordering::SeqCst);
    let check = |what: &str, error: idem::Error| {
        assert_eq!(error.code(), ErrorCode::RecordUnreadable, "{what}: {error}");
        assert!(!error.retryable(), "{what}: no retry can read the record: {error}");
        assert!(error.message().contains(NAMESPACE) && error.message().contains(KEY), "{what}: {error}");
        assert!(error.suggestion().is_some_and(|s| s.contains("a person must inspect")), "{what}: {error}");
        assert_eq!(error.to_json()["error"]["retryable"], false);
    };
    check("the call", notify(store, "u1".into()).unwrap_err());
    check("a retry", notify(store, "U1 ".into()).unwrap_err());
    check("the status", notify_status(store, "u1".into()).unwrap_err());
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    check("the async call", runtime.block_on(notify_async(store, "u1".into())).unwrap_err());
    check("the async status", runtime.block_on(notify_async_status(store, "u1".into())).unwrap_err());
    assert_eq!(RUNS.load(Ordering::SeqCst), before, "the body must not run");
}

#[test]
fn an_unknown_state_in_sqlite_written_by_hand_is_record_unreadable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idem.db");
    let store = SqliteStore::open(&path).unwrap();
    // A newer idem's state, written straight into the file.
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "INSERT INTO idem_records (namespace, key, state, request, result, created_at_ms, updated_at_ms)
             VALUES (?1, ?2, 'paused', '{}', NULL, 0, 0)",
            (NAMESPACE, KEY),
        )
        .unwrap();
    assert_unreadable(&store);
}

#[test]
fn an_unknown_state_is_record_unreadable_in_the_memory_and_sqlite_stores() {
    let id = RecordId { namespace: NAMESPACE, key: KEY };
    let memory = MemoryStore::new();
    memory.plant_state(id, "paused").unwrap();
    assert_unreadable(&memory);

    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open(dir.path().join("idem.db")).unwrap();
    sqlite.plant_state(id, "archived_v9").unwrap();
    assert_unreadable(&sqlite);
}

#[test]
fn an_unknown_state_in_postgres_is_record_unreadable() {
    let Some(url) = test_url("an_unknown_state_in_postgres_is_record_unreadable") else { return };
    let schema = fresh_schema("idem_unreadable");
    let store = idem::store::PgStore::builder(&url).schema(&schema).build().unwrap();
    store.plant_state(RecordId { namespace: NAMESPACE, key: KEY }, "paused").unwrap();
    assert_unreadable(&store);
    drop(store);
    crate::pg::drop_schema(&url, &schema);
}
