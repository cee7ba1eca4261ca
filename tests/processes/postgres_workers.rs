//! Worker processes on one PostgreSQL database, each with its own `PgStore` (its own pool),
//! race on the same 200 keys with a body that takes a few milliseconds and writes one row
//! to an effects table: exactly one effect per key, over every trial.
//!
//! The workers are this test binary run again; they start together when the parent closes
//! their standard input. Needs IDEM_TEST_DATABASE_URL; without it the tests say SKIPPED, or
//! fail under CI. Each run uses a fresh schema, dropped at the end.

use crate::support;
use std::io::Read;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, OnceLock};
use std::time::{Duration, Instant};

use idem::idempotent;
use idem::store::PgStore;
use tokio_postgres::NoTls;

use crate::support::postgres;
use postgres::{fresh_schema, test_url};

const PROCESSES: usize = 4;
const TRIALS: usize = 5;
const KEYS: usize = 200;
/// Calls in flight at once in each worker.
const IN_FLIGHT: usize = 4;
const URL_ENV: &str = "IDEM_TEST_DATABASE_URL";
const SCHEMA_ENV: &str = "IDEM_TEST_WORKERS_SCHEMA";

async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name}: set by the parent"))
}

/// A worker's own store: its own pool, on the schema the parent made.
static STORE: LazyLock<PgStore> = LazyLock::new(|| {
    PgStore::builder(&env(URL_ENV)).schema(env(SCHEMA_ENV)).max_connections(IN_FLIGHT).build().unwrap()
});
/// A worker's connection for the effects (not the store's: the effect is "outside").
static EFFECTS: OnceLock<tokio_postgres::Client> = OnceLock::new();

/// The effect: one row in the effects table, written by whichever worker runs the body.
#[idempotent(key = "effect:<trial>/<key>", store = *STORE)]
async fn record_effect(trial: usize, key: usize) -> Result<u32, idem::Error> {
    tokio::time::sleep(Duration::from_millis(2 + (key % 4) as u64)).await;
    let pid = std::process::id();
    let insert = format!("INSERT INTO {}.effects VALUES ($1, $2)", STORE.schema());
    let effects = EFFECTS.get().expect("connected before the first call");
    effects.execute(&insert, &[&format!("{trial}/{key}"), &i64::from(pid)]).await.unwrap();
    Ok(pid)
}

#[test]
#[ignore = "a worker process of `worker_processes_run_each_key_once`"]
fn worker_process() {
    let trial: usize = env("IDEM_TEST_TRIAL").parse().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        EFFECTS.set(connect(&env(URL_ENV)).await).ok().unwrap();
        // Wait for the start signal: the parent closes our stdin once every worker is ready.
        std::io::stdin().read_to_end(&mut Vec::new()).unwrap();
        // Workers take keys in the same order, so they collide on each one.
        let next = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..IN_FLIGHT)
            .map(|_| {
                let next = next.clone();
                tokio::spawn(async move {
                    loop {
                        let key = next.fetch_add(1, Ordering::Relaxed);
                        if key >= KEYS {
                            return;
                        }
                        match record_effect(trial, key).await {
                            Ok(_) => {}
                            Err(e) if e.code() == idem::ErrorCode::InProgress => {}
                            Err(e) => panic!("worker {}: key {key}: {e}", std::process::id()),
                        }
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
    });
}

#[test]
fn worker_processes_run_each_key_once() {
    let Some(url) = test_url("worker_processes_run_each_key_once") else { return };
    let schema = fresh_schema("idem_workers");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let client = runtime.block_on(async {
        let client = connect(&url).await;
        let create = format!("CREATE SCHEMA {schema}; CREATE TABLE {schema}.effects (key text NOT NULL, pid int8);");
        client.batch_execute(&create).await.unwrap();
        client
    });
    let started = Instant::now();
    for trial in 0..TRIALS {
        // The first trial's workers also create idem's tables, all at once.
        let mut workers: Vec<_> = (0..PROCESSES)
            .map(|_| {
                support::rerun(module_path!(), "worker_process")
                    .env(URL_ENV, &url)
                    .env(SCHEMA_ENV, &schema)
                    .env("IDEM_TEST_TRIAL", trial.to_string())
                    .stdin(Stdio::piped())
                    .stdout(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        std::thread::sleep(Duration::from_millis(300)); // let them connect
        for worker in &mut workers {
            drop(worker.stdin.take());
        }
        for worker in workers {
            let status = worker.wait_with_output().unwrap().status;
            assert!(status.success(), "a worker process failed: {status}");
        }
    }
    let (keys, effects, repeated, writers, completed) = runtime.block_on(async {
        let counts = format!(
            "SELECT count(*), coalesce(sum(n), 0)::int8, count(*) FILTER (WHERE n > 1),
                    (SELECT count(DISTINCT pid) FROM {schema}.effects),
                    (SELECT count(*) FROM {schema}.idem_records WHERE state = 'completed')
             FROM (SELECT key, count(*) AS n FROM {schema}.effects GROUP BY key) AS per_key"
        );
        let row = client.query_one(&counts, &[]).await.unwrap();
        let counts: (i64, i64, i64, i64, i64) = (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
        client.batch_execute(&format!("DROP SCHEMA {schema} CASCADE")).await.unwrap();
        counts
    });
    eprintln!(
        "postgres workers: {PROCESSES} processes x {TRIALS} trials x {KEYS} keys in {:.1?}: {keys} keys, \
         {effects} effects, {repeated} keys with more than one effect, {writers} processes ran bodies",
        started.elapsed()
    );
    assert_eq!(repeated, 0, "keys with more than one effect");
    assert_eq!(keys as usize, TRIALS * KEYS, "every key ran once");
    assert_eq!(effects, keys);
    assert_eq!(completed, keys, "every key is recorded as completed");
}

static SHARED: OnceLock<PgStore> = OnceLock::new();

/// A sync tool: its calls block the thread, here a tokio worker's, without deadlocking.
#[idempotent(key = "sync:<n>", store = *SHARED.get().expect("set by the test"))]
fn sync_tool(n: u32) -> Result<u32, idem::Error> {
    Ok(n * 2)
}

#[idempotent(key = "async:<n>", store = *SHARED.get().expect("set by the test"))]
async fn async_tool(n: u32) -> Result<u32, idem::Error> {
    Ok(n * 3)
}

#[tokio::test]
async fn sync_and_async_tools_run_on_the_postgres_store() {
    let Some(url) = test_url("sync_and_async_tools_run_on_the_postgres_store") else { return };
    let schema = fresh_schema("idem_tools");
    SHARED.set(PgStore::builder(&url).schema(&schema).build().unwrap()).ok().unwrap();
    for _ in 0..2 {
        assert_eq!(sync_tool(21).unwrap(), 42);
        assert_eq!(async_tool(14).await.unwrap(), 42);
    }
    let (sync_status, async_status) = (sync_tool_status(21).unwrap(), async_tool_status(14).await.unwrap());
    assert!(matches!(sync_status, idem::Status::Completed(42)), "{sync_status:?}");
    assert!(matches!(async_status, idem::Status::Completed(42)), "{async_status:?}");
    let (replayed, observed) = idem::telemetry::observe_async(async_tool(14)).await;
    assert_eq!((replayed.unwrap(), observed[0].outcome), (42, idem::telemetry::Outcome::Replayed));
    connect(&url).await.batch_execute(&format!("DROP SCHEMA {schema} CASCADE")).await.unwrap();
}
