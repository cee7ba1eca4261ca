//! Transactional mode, for effects in the store's own database: the key, the body's writes
//! and the result commit together or not at all. Checked on SQLite and PostgreSQL (which
//! needs IDEM_TEST_DATABASE_URL; without it the PostgreSQL tests say SKIPPED, or fail
//! under CI).

use std::sync::Barrier;
use std::time::Duration;

use idem::store::DEFAULT_RETAIN;
use idem::store::block_on;
use idem::store::postgres::Begun;
use idem::store::{PgStore, RecordId, Store, Transacted, TransactionError};
use idem::{ErrorCode, SqliteStore, idempotent};
use tokio_postgres::NoTls;

use crate::support::postgres;

const KEYS: usize = 40;
const RACERS: usize = 6;

fn id(key: &str) -> RecordId<'_> {
    RecordId { namespace: "tx-test", key }
}

fn sqlite() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("shop.db")).unwrap();
    let setup = rusqlite::Connection::open(dir.path().join("shop.db")).unwrap();
    setup.execute("CREATE TABLE effects (key TEXT NOT NULL, amount INTEGER NOT NULL)", []).unwrap();
    (dir, store)
}

fn sqlite_effects(dir: &tempfile::TempDir, key: &str) -> i64 {
    let conn = rusqlite::Connection::open(dir.path().join("shop.db")).unwrap();
    conn.query_row("SELECT count(*) FROM effects WHERE key = ?1", [key], |row| row.get(0)).unwrap()
}

/// Writes one effect row in the transaction, then answers `Ok(amount)` or `Err`.
fn sqlite_order(
    store: &SqliteStore,
    key: &str,
    amount: i64,
    fail: bool,
) -> Result<Transacted<i64>, TransactionError<String>> {
    let compare = serde_json::json!({ "amount": amount });
    store.transaction(id(key), &compare, DEFAULT_RETAIN, |tx| {
        tx.execute("INSERT INTO effects VALUES (?1, ?2)", (key, amount)).map_err(|e| e.to_string())?;
        std::thread::sleep(Duration::from_millis(2));
        if fail { Err("declined".to_string()) } else { Ok(amount) }
    })
}

#[test]
fn sqlite_commits_the_key_and_the_effect_together() {
    let (dir, store) = sqlite();
    assert_eq!(sqlite_order(&store, "a", 120, false).unwrap(), Transacted::Ran(120));
    assert_eq!(sqlite_order(&store, "a", 120, false).unwrap(), Transacted::Replayed(120));
    assert_eq!(sqlite_effects(&dir, "a"), 1, "a replay writes nothing");
    let Err(TransactionError::Idem(conflict)) = sqlite_order(&store, "a", 150, false) else { panic!() };
    assert_eq!(conflict.code(), ErrorCode::Conflict);
    assert_eq!(conflict.differences()[0].field, "amount");
    assert_eq!(sqlite_effects(&dir, "a"), 1, "a conflict writes nothing");
}

#[test]
fn sqlite_rolls_back_the_key_and_the_effect_on_error_and_panic() {
    let (dir, store) = sqlite();
    assert!(matches!(sqlite_order(&store, "b", 1, true), Err(TransactionError::Body(e)) if e == "declined"));
    assert_eq!((sqlite_effects(&dir, "b"), block_on(store.read(id("b"))).unwrap()), (0, None), "nothing is left");
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        store.transaction(id("b"), &(), DEFAULT_RETAIN, |tx| -> Result<(), String> {
            tx.execute("INSERT INTO effects VALUES ('b', 2)", []).unwrap();
            panic!("the body panics after its write");
        })
    }));
    assert!(panicked.is_err());
    assert_eq!((sqlite_effects(&dir, "b"), block_on(store.read(id("b"))).unwrap()), (0, None), "nothing is left");
    assert_eq!(sqlite_order(&store, "b", 1, false).unwrap(), Transacted::Ran(1), "a retry runs");
    assert_eq!(sqlite_effects(&dir, "b"), 1);
}

#[test]
fn sqlite_concurrent_duplicates_write_one_effect() {
    let (dir, store) = sqlite();
    let barrier = Barrier::new(RACERS);
    let ran: Vec<usize> = std::thread::scope(|scope| {
        let racers: Vec<_> = (0..RACERS)
            .map(|_| {
                scope.spawn(|| {
                    (0..KEYS)
                        .map(|k| {
                            barrier.wait();
                            match sqlite_order(&store, &format!("race-{k}"), 5, false) {
                                Ok(Transacted::Ran(_)) => 1,
                                Ok(Transacted::Replayed(_)) => 0,
                                Err(e) => panic!("race-{k}: {e}"),
                            }
                        })
                        .collect::<Vec<usize>>()
                })
            })
            .collect();
        let runs: Vec<Vec<usize>> = racers.into_iter().map(|r| r.join().unwrap()).collect();
        (0..KEYS).map(|k| runs.iter().map(|r| r[k]).sum()).collect()
    });
    for (k, ran) in ran.iter().enumerate() {
        assert_eq!(*ran, 1, "race-{k}: the body ran {ran} times");
        assert_eq!(sqlite_effects(&dir, &format!("race-{k}")), 1, "race-{k}: one effect");
    }
}

/// The test server and a fresh schema with an `effects` table, or `None` after SKIPPED.
fn postgres(test: &str) -> Option<(String, PgStore, tokio::runtime::Runtime)> {
    let url = postgres::test_url(test)?;
    let schema = format!("idem_tx_{}_{}", std::process::id(), test.len());
    let store = PgStore::builder(&url).schema(&schema).build().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        store.migrate().await.unwrap();
        let (client, connection) = tokio_postgres::connect(&url, NoTls).await.unwrap();
        tokio::spawn(connection);
        client.batch_execute(&format!("CREATE TABLE {schema}.effects (key text NOT NULL, amount int8)")).await.unwrap();
    });
    Some((url, store, runtime))
}

fn drop_schema(url: &str, store: &PgStore, runtime: &tokio::runtime::Runtime) {
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(url, NoTls).await.unwrap();
        tokio::spawn(connection);
        client.batch_execute(&format!("DROP SCHEMA {} CASCADE", store.schema())).await.unwrap();
    });
}

/// Writes one effect row in the transaction, then commits `amount` or fails.
async fn pg_order(store: &PgStore, key: &str, amount: i64, fail: bool) -> Result<Transacted<i64>, String> {
    let insert = format!("INSERT INTO {}.effects VALUES ($1, $2)", store.schema());
    let compare = serde_json::json!({ "amount": amount });
    match store.begin(id(key), &compare, DEFAULT_RETAIN).await.map_err(|e| e.code().to_string())? {
        Begun::Replayed(amount) => Ok(Transacted::Replayed(amount)),
        Begun::Run(tx) => {
            tx.execute(&insert, &[&key, &amount]).await.map_err(|e| e.to_string())?;
            tokio::time::sleep(Duration::from_millis(3)).await;
            if fail {
                return Err("declined".to_string()); // drops `tx`: rolled back
            }
            tx.commit(&amount).await.map_err(|e| e.to_string())?;
            Ok(Transacted::Ran(amount))
        }
    }
}

async fn pg_effects(url: &str, store: &PgStore, key: &str) -> i64 {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await.unwrap();
    tokio::spawn(connection);
    let count = format!("SELECT count(*) FROM {}.effects WHERE key = $1", store.schema());
    client.query_one(&count, &[&key]).await.unwrap().get(0)
}

#[test]
fn postgres_commits_the_key_and_the_effect_together_or_not_at_all() {
    let Some((url, store, runtime)) = postgres("postgres_commits_the_key_and_the_effect_together_or_not_at_all") else {
        return;
    };
    runtime.block_on(async {
        assert_eq!(pg_order(&store, "a", 120, false).await.unwrap(), Transacted::Ran(120));
        assert_eq!(pg_order(&store, "a", 120, false).await.unwrap(), Transacted::Replayed(120));
        assert_eq!(pg_order(&store, "a", 150, false).await, Err("CONFLICT".to_string()));
        assert_eq!(pg_effects(&url, &store, "a").await, 1, "one effect, with its completion");

        assert_eq!(pg_order(&store, "b", 1, true).await, Err("declined".to_string()));
        assert_eq!(pg_effects(&url, &store, "b").await, 0, "a failed body leaves no effect");
        assert_eq!(block_on(store.read(id("b"))).unwrap(), None, "and no reservation");

        let insert = format!("INSERT INTO {}.effects VALUES ('c', 1)", store.schema());
        let cancelled = tokio::time::timeout(Duration::from_millis(50), async {
            let Ok(Begun::<()>::Run(tx)) = store.begin(id("c"), &(), DEFAULT_RETAIN).await else { panic!() };
            tx.batch_execute(&insert).await.unwrap();
            tokio::time::sleep(Duration::from_secs(60)).await;
            tx.commit(&()).await
        })
        .await;
        assert!(cancelled.is_err(), "the caller gave up on the body");
        assert_eq!(pg_effects(&url, &store, "c").await, 0, "a cancelled body leaves no effect");
        assert_eq!(block_on(store.read(id("c"))).unwrap(), None, "and no reservation");
        assert_eq!(pg_order(&store, "c", 1, false).await.unwrap(), Transacted::Ran(1), "a retry runs");

        let panicking = store.clone();
        let panicked = tokio::spawn(async move {
            let Ok(Begun::<()>::Run(tx)) = panicking.begin(id("d"), &(), DEFAULT_RETAIN).await else { panic!() };
            tx.batch_execute(&format!("INSERT INTO {}.effects VALUES ('d', 1)", panicking.schema())).await.unwrap();
            panic!("the body panics after its write");
        });
        assert!(panicked.await.unwrap_err().is_panic());
        assert_eq!(pg_effects(&url, &store, "d").await, 0, "a panicked body leaves no effect");
        assert_eq!(pg_order(&store, "d", 1, false).await.unwrap(), Transacted::Ran(1), "a retry runs at once");
    });
    drop_schema(&url, &store, &runtime);
}

#[test]
fn postgres_concurrent_duplicates_write_one_effect() {
    let Some((url, store, runtime)) = postgres("postgres_concurrent_duplicates_write_one_effect") else { return };
    runtime.block_on(async {
        for k in 0..KEYS {
            let key = format!("race-{k}");
            let racers: Vec<_> = (0..RACERS)
                .map(|_| {
                    let (store, key) = (store.clone(), key.clone());
                    tokio::spawn(async move {
                        // A duplicate of a transaction still open is told IN_PROGRESS and
                        // asks again, as a caller following the answer does.
                        loop {
                            match pg_order(&store, &key, 5, false).await {
                                Err(code) if code == "IN_PROGRESS" => {
                                    tokio::time::sleep(Duration::from_millis(5)).await
                                }
                                answer => return answer,
                            }
                        }
                    })
                })
                .collect();
            let mut ran = 0;
            for racer in racers {
                match racer.await.unwrap() {
                    Ok(Transacted::Ran(_)) => ran += 1,
                    Ok(Transacted::Replayed(_)) => {}
                    Err(e) => panic!("{key}: {e}"),
                }
            }
            assert_eq!(ran, 1, "{key}: the body ran {ran} times");
            assert_eq!(pg_effects(&url, &store, &key).await, 1, "{key}: one effect");
        }
    });
    drop_schema(&url, &store, &runtime);
}

/// A tool whose key is held by a transaction still open (same namespace and key).
#[idempotent(key = "<key>", namespace = "tx-test", store = store)]
async fn order_tool(store: &PgStore, key: String) -> Result<i64, idem::Error> {
    panic!("{key}: the body must not run while the transaction holds the key, nor after it committed")
}

/// A tool call that duplicates an open `begin` is IN_PROGRESS (with a retry hint) well
/// before the transaction's `lock_timeout`, and once the transaction commits it replays the
/// transaction's result.
#[test]
fn postgres_a_tool_call_behind_an_open_transaction_is_in_progress_at_once() {
    let Some((url, store, runtime)) =
        postgres("postgres_a_tool_call_behind_an_open_transaction_is_in_progress_at_once")
    else {
        return;
    };
    let slow_locks =
        PgStore::builder(&url).schema(store.schema()).lock_timeout(Duration::from_secs(60)).build().unwrap();
    runtime.block_on(async {
        let Ok(Begun::<i64>::Run(tx)) = slow_locks.begin(id("held"), &(), DEFAULT_RETAIN).await else { panic!() };
        let started = std::time::Instant::now();
        let error = order_tool(&slow_locks, "held".into()).await.unwrap_err();
        assert_eq!(error.code(), ErrorCode::InProgress, "{error}");
        let running = error.running().expect("a retry hint");
        assert!(running.retry_after >= Duration::from_millis(100), "{running:?}");
        assert!(started.elapsed() < Duration::from_secs(20), "waited {:?} of a 60 s lock_timeout", started.elapsed());
        tx.commit(&42).await.unwrap();
        assert_eq!(order_tool(&slow_locks, "held".into()).await.unwrap(), 42);
    });
    drop_schema(&url, &store, &runtime);
}
