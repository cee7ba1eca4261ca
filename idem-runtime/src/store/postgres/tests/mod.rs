//! The PostgreSQL store's checks: the shared conformance suite and
//! what only this store has (schema, migrations, pool, the sync entry inside runtimes).
//!
//! They need a server: `IDEM_TEST_DATABASE_URL=postgres://...` (`bash .ci/pg start DIR`
//! starts a throwaway one). Without it each test says SKIPPED, or fails under CI. Each
//! store gets a fresh schema, dropped at the end of the test.

use std::io::Write;
use std::sync::Barrier;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use super::pool::block_on;
use super::*;
use crate::store::{Completion, RecordId, RecordState, Renew, Reservation, Reserve, Store};
use crate::testing::conformance::{check_exclusive_reserve, check_store, check_unknown_state};
use tokio_postgres::config::Host;
use tokio_postgres::{Config, NoTls};

mod locks;

/// The variable that names the test server.
const TEST_URL_ENV: &str = "IDEM_TEST_DATABASE_URL";

/// A test's server and the schemas it made; drops them at the end.
struct TestDb {
    url: String,
    schemas: std::sync::Mutex<Vec<String>>,
}

impl TestDb {
    /// The test server, or `None` after saying loudly that the test is skipped. Under CI an
    /// unset variable fails the test: CI always runs the PostgreSQL tests.
    fn get(test: &str) -> Option<TestDb> {
        match std::env::var(TEST_URL_ENV) {
            Ok(url) if !url.is_empty() => Some(TestDb { url, schemas: Default::default() }),
            _ if std::env::var("CI").is_ok_and(|ci| !ci.is_empty() && ci != "false" && ci != "0") => {
                panic!("{test}: {TEST_URL_ENV} is not set under CI; CI must run the PostgreSQL tests (see .ci/run)")
            }
            _ => {
                // Straight to stderr, past the test harness's capture: a skip is never silent.
                let _ = writeln!(
                    std::io::stderr(),
                    "SKIPPED {test}: set {TEST_URL_ENV}=postgres://user@host:port/db to run the PostgreSQL \
                     tests (`bash .ci/pg start DIR` starts a throwaway server and prints its URL)"
                );
                None
            }
        }
    }

    /// A new schema name, unique across processes and runs.
    fn schema(&self) -> String {
        static N: AtomicUsize = AtomicUsize::new(0);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
        let schema = format!("idem_test_{}_{}_{nanos}", std::process::id(), N.fetch_add(1, Ordering::Relaxed));
        self.schemas.lock().unwrap().push(schema.clone());
        schema
    }

    /// A store on a fresh, empty schema.
    fn store(&self) -> PgStore {
        self.builder().build().unwrap()
    }

    fn builder(&self) -> PgStoreBuilder {
        PgStore::builder(&self.url).schema(self.schema())
    }

    /// Runs SQL on a connection of its own.
    fn sql(&self, sql: &str) -> Result<(), tokio_postgres::Error> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let (client, connection) = tokio_postgres::connect(&self.url, NoTls).await?;
            tokio::spawn(connection);
            client.batch_execute(sql).await
        })
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let schemas = std::mem::take(&mut *self.schemas.lock().unwrap_or_else(|e| e.into_inner()));
        if !schemas.is_empty() {
            let drops: Vec<String> = schemas.iter().map(|s| format!("DROP SCHEMA IF EXISTS {s} CASCADE;")).collect();
            if let Err(e) = self.sql(&drops.join("\n")) {
                eprintln!("could not drop the test schemas {schemas:?}: {e}");
            }
        }
    }
}

fn id(key: &str) -> RecordId<'_> {
    RecordId { namespace: "pg-test", key }
}

fn reserve(store: &PgStore, key: &str) -> Result<Reservation, StoreError> {
    block_on(store.reserve(Reserve { id: id(key), request: "{}", lease: Duration::from_secs(60) }))
}

#[test]
fn passes_the_conformance_checks_through_the_sync_entry() {
    let Some(db) = TestDb::get("passes_the_conformance_checks_through_the_sync_entry") else { return };
    check_store(|| db.store());
    check_unknown_state(&db.store());
    crate::testing::conformance::check_admin(|| db.store());
    crate::testing::conformance::check_approvals(|| db.store());
}

/// Budgets, through the sync entry (which runs the async impl to its end on the calling
/// thread, with connections driven by the store's IO thread).
#[test]
fn passes_the_budget_checks() {
    let Some(db) = TestDb::get("passes_the_budget_checks") else { return };
    crate::testing::conformance::check_budgets(|| db.store());
}

/// The same checks with every reservation reading first (what a store does after a
/// stretch of repeats), so that both ways of reserving keep every promise.
#[test]
fn passes_the_conformance_checks_reading_first() {
    let Some(db) = TestDb::get("passes_the_conformance_checks_reading_first") else { return };
    let reading_first = || {
        let store = db.store();
        store.inner.repeats.always_read_first.store(true, Ordering::Relaxed);
        store
    };
    check_store(reading_first);
    crate::testing::conformance::check_budgets(reading_first);
}

/// A stretch of repeats turns reservations to reading first; a stretch of first calls
/// turns them back; every answer stays what it was.
#[test]
fn reservations_read_first_after_repeats_and_not_after_first_calls() {
    let Some(db) = TestDb::get("reservations_read_first_after_repeats_and_not_after_first_calls") else { return };
    let store = db.store();
    assert!(matches!(reserve(&store, "repeated"), Ok(Reservation::Acquired { .. })));
    for _ in 0..20 {
        assert!(matches!(reserve(&store, "repeated"), Ok(Reservation::Existing(_))));
    }
    assert!(store.inner.repeats.read_first());
    for i in 0..20 {
        let key = format!("new-{i}");
        assert!(matches!(reserve(&store, &key), Ok(Reservation::Acquired { .. })), "{key}");
    }
    assert!(!store.inner.repeats.read_first());
    assert!(matches!(reserve(&store, "new-0"), Ok(Reservation::Existing(_))));
}

/// Two pools on one schema stand for two worker processes.
#[test]
fn two_pools_on_one_schema_acquire_each_id_once() {
    let Some(db) = TestDb::get("two_pools_on_one_schema_acquire_each_id_once") else { return };
    let schema = db.schema();
    let pools = [0, 1].map(|_| PgStore::builder(&db.url).schema(&schema).max_connections(4).build().unwrap());
    check_exclusive_reserve(&pools);
}

#[test]
fn first_use_creates_the_schema_and_records_its_version() {
    let Some(db) = TestDb::get("first_use_creates_the_schema_and_records_its_version") else { return };
    let store = db.store();
    assert!(matches!(reserve(&store, "first"), Ok(Reservation::Acquired { .. })));
    let check = format!(
        "DO $$ BEGIN
           IF (SELECT string_agg(version::text, ',' ORDER BY version) FROM {s}.idem_schema_version) <> '{v}' THEN
             RAISE EXCEPTION 'wrong versions';
           END IF;
           IF to_regclass('{s}.idem_records_retention') IS NULL OR to_regclass('{s}.idem_tokens') IS NULL THEN
             RAISE EXCEPTION 'missing index or sequence';
           END IF;
         END $$;",
        s = store.schema(),
        v = schema::MIGRATIONS.iter().map(|m| m.version.to_string()).collect::<Vec<_>>().join(","),
    );
    db.sql(&check).unwrap();
}

/// A schema at version 1, with records in it, is brought to the current version by the
/// next store that uses it, its records intact.
#[test]
fn a_version_1_schema_is_migrated_with_its_records() {
    let Some(db) = TestDb::get("a_version_1_schema_is_migrated_with_its_records") else { return };
    let old = db.store();
    assert!(matches!(reserve(&old, "kept"), Ok(Reservation::Acquired { .. })));
    let s = old.schema().to_owned();
    // Back to what version 1 left: its constraints, no progress column, its version row only.
    db.sql(&format!(
        "ALTER TABLE {s}.idem_records ADD CONSTRAINT idem_records_state
             CHECK (state IN ('in_progress', 'completed', 'failed'));
         DROP FUNCTION {s}.idem_reserve_charged;
         DROP TABLE {s}.idem_budgets;
         ALTER TABLE {s}.idem_records DROP COLUMN charge_budget, DROP COLUMN charge_scope,
             DROP COLUMN charge_start_ms, DROP COLUMN charge_amount;
         ALTER TABLE {s}.idem_records DROP COLUMN progress;
         DELETE FROM {s}.idem_schema_version WHERE version > 1;"
    ))
    .unwrap();
    let store = PgStore::builder(&db.url).schema(&s).build().unwrap();
    assert!(matches!(block_on(store.read(id("kept"))), Ok(Some(_))), "the record survives the migration");
    db.sql(&format!(
        "DO $$ BEGIN
           IF (SELECT max(version) FROM {s}.idem_schema_version) <> {v} THEN RAISE EXCEPTION 'not migrated'; END IF;
           IF EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = '{s}.idem_records'::regclass AND contype = 'c') THEN
             RAISE EXCEPTION 'CHECK constraints left';
           END IF;
         END $$;",
        v = schema::SCHEMA_VERSION,
    ))
    .unwrap();
}

/// A schema at version 2 holding an in-progress record is brought to version 3 (the
/// progress column), 4 (budgets) and 5 (the charged reservation's function) by the next
/// store that uses it: the record reads back as it was, with
/// no progress message, and its holder can still renew it and report progress.
#[test]
fn a_version_2_schema_is_migrated_with_an_in_progress_record() {
    let Some(db) = TestDb::get("a_version_2_schema_is_migrated_with_an_in_progress_record") else { return };
    let old = db.store();
    let Ok(Reservation::Acquired { token }) = reserve(&old, "running") else { panic!("a new key is acquired") };
    let s = old.schema().to_owned();
    // Back to what version 2 left: no progress column, no budgets, no later version rows.
    db.sql(&format!(
        "DROP FUNCTION {s}.idem_reserve_charged;
         DROP TABLE {s}.idem_budgets;
         ALTER TABLE {s}.idem_records DROP COLUMN charge_budget, DROP COLUMN charge_scope,
             DROP COLUMN charge_start_ms, DROP COLUMN charge_amount;
         ALTER TABLE {s}.idem_records DROP COLUMN progress;
         DELETE FROM {s}.idem_schema_version WHERE version > 2;"
    ))
    .unwrap();
    let store = PgStore::builder(&db.url).schema(&s).build().unwrap();
    let record = block_on(store.read(id("running"))).unwrap().expect("the record survives the migration");
    assert_eq!(record.token, token);
    assert!(
        matches!(record.state, RecordState::InProgress { lease_expired: false, progress: None, .. }),
        "a migrated in-progress record has a live lease and no progress message: {record:?}"
    );
    db.sql(&format!(
        "DO $$ BEGIN
           IF (SELECT string_agg(version::text, ',' ORDER BY version) FROM {s}.idem_schema_version) <> '1,2,3,4,5' THEN
             RAISE EXCEPTION 'not migrated to 5';
           END IF;
         END $$;"
    ))
    .unwrap();
    let renewal = Renew { id: id("running"), token, lease: Duration::from_secs(60), progress: Some("migrated") };
    block_on(store.renew(renewal)).unwrap();
    let renewed = block_on(store.read(id("running"))).unwrap().unwrap();
    assert!(
        matches!(&renewed.state, RecordState::InProgress { progress: Some(p), .. } if p == "migrated"),
        "{renewed:?}"
    );
}

/// Settling a record clears its progress column: a settled row never carries a message
/// that no read would show.
#[test]
fn settling_clears_the_progress_column() {
    let Some(db) = TestDb::get("settling_clears_the_progress_column") else { return };
    let store = db.store();
    for (key, completion) in [("completed", Completion::Success("1")), ("failed", Completion::KeptError("{}"))] {
        let Ok(Reservation::Acquired { token }) = reserve(&store, key) else { panic!("a new key is acquired") };
        block_on(store.renew(Renew { id: id(key), token, lease: Duration::from_secs(60), progress: Some("busy") }))
            .unwrap();
        block_on(store.complete(id(key), token, completion, Duration::from_secs(60))).unwrap();
    }
    db.sql(&format!(
        "DO $$ BEGIN
           IF (SELECT count(*) FROM {s}.idem_records) <> 2 THEN RAISE EXCEPTION 'records missing'; END IF;
           IF EXISTS (SELECT 1 FROM {s}.idem_records WHERE progress IS NOT NULL) THEN
             RAISE EXCEPTION 'a settled row kept its progress message';
           END IF;
         END $$;",
        s = store.schema(),
    ))
    .unwrap();
}

#[test]
fn a_schema_from_a_newer_idem_is_refused() {
    let Some(db) = TestDb::get("a_schema_from_a_newer_idem_is_refused") else { return };
    let store = db.store();
    store.migrate_blocking().unwrap();
    db.sql(&format!("INSERT INTO {}.idem_schema_version VALUES (99, 'from the future')", store.schema())).unwrap();
    let later = PgStore::builder(&db.url).schema(store.schema()).build().unwrap();
    let error = reserve(&later, "k").unwrap_err().to_string();
    assert!(error.contains("newer idem") && error.contains("99"), "unexpected error: {error}");
}

#[test]
fn concurrent_first_uses_create_the_schema_once() {
    let Some(db) = TestDb::get("concurrent_first_uses_create_the_schema_once") else { return };
    let schema = db.schema();
    let barrier = Barrier::new(6);
    std::thread::scope(|scope| {
        for _ in 0..6 {
            scope.spawn(|| {
                let store = PgStore::builder(&db.url).schema(&schema).max_connections(1).build().unwrap();
                barrier.wait();
                reserve(&store, "after-first-use").unwrap();
            });
        }
    });
}

#[test]
fn unreadable_rows_are_corrupt_and_name_the_key() {
    let Some(db) = TestDb::get("unreadable_rows_are_corrupt_and_name_the_key") else { return };
    let store = db.store();
    store.migrate_blocking().unwrap();
    let s = store.schema();
    db.sql(&format!(
        "INSERT INTO {s}.idem_records (namespace, key, state, request, created_at, updated_at)
         VALUES ('pg-test', 'odd-state', 'paused', '{{}}', now(), now()),
                ('pg-test', 'no-result', 'completed', '{{}}', now(), now()),
                ('pg-test', 'no-lease', 'in_progress', '{{}}', now(), now());"
    ))
    .unwrap();
    for key in ["odd-state", "no-result", "no-lease"] {
        match block_on(store.read(id(key))) {
            Err(StoreError::Corrupt(what)) => assert!(what.contains(key), "{what}"),
            other => panic!("{key}: expected Corrupt, got {other:?}"),
        }
        assert!(matches!(reserve(&store, key), Err(StoreError::Corrupt(_))), "{key}: reserve must say Corrupt");
    }
}

/// A sync tool called from async code blocks its thread but never deadlocks, even on a
/// current-thread runtime whose only thread it blocks.
#[test]
fn the_sync_entry_works_inside_tokio_runtimes() {
    let Some(db) = TestDb::get("the_sync_entry_works_inside_tokio_runtimes") else { return };
    let store = db.store();
    let current = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    current.block_on(async { assert!(matches!(reserve(&store, "current"), Ok(Reservation::Acquired { .. }))) });
    let multi = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    multi.block_on(async {
        let tasks: Vec<_> = (0..8)
            .map(|i| {
                let store = store.clone();
                tokio::spawn(async move { reserve(&store, &format!("multi-{i}")).map(|_| ()) })
            })
            .collect();
        for task in tasks {
            task.await.unwrap().unwrap();
        }
    });
}

/// Connections live on the store's own thread, so a store outlives the runtimes that used it.
#[test]
fn a_store_outlives_the_runtimes_that_used_it() {
    let Some(db) = TestDb::get("a_store_outlives_the_runtimes_that_used_it") else { return };
    let store = db.store();
    for round in 0..3 {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let key = format!("round-{round}");
            let request = Reserve { id: id(&key), request: "{}", lease: Duration::from_secs(60) };
            assert!(matches!(store.reserve(request).await, Ok(Reservation::Acquired { .. })));
        });
    }
}

/// Async callers on a multi-threaded runtime use connections that runtime drives; a
/// runtime that shuts down takes only those with it, so calls on another runtime and from
/// sync code go on without an error, and the pool never holds more than its maximum.
#[test]
fn each_runtime_drives_its_own_connections() {
    let Some(db) = TestDb::get("each_runtime_drives_its_own_connections") else { return };
    const MAX: usize = 4;
    let store = db.builder().max_connections(MAX).build().unwrap();
    store.migrate_blocking().unwrap();
    let multi = || tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let acquire = |store: &PgStore, key: String| {
        let store = store.clone();
        async move {
            let request = Reserve { id: id(&key), request: "{}", lease: Duration::from_secs(60) };
            let reserved = store.reserve(request).await;
            assert!(matches!(reserved, Ok(Reservation::Acquired { .. })), "{key}: {reserved:?}");
        }
    };
    let steady = multi();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let calls = steady.spawn({
        let (store, stop) = (store.clone(), Arc::clone(&stop));
        async move {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                acquire(&store, format!("steady-{n}")).await;
                n += 1;
            }
            n
        }
    });
    for round in 0..20 {
        let short = multi();
        short.block_on(async {
            let tasks: Vec<_> = (0..MAX).map(|t| tokio::spawn(acquire(&store, format!("short-{round}-{t}")))).collect();
            for task in tasks {
                task.await.unwrap();
            }
        });
        let (_, runtime_driven, _) = store.inner.pool.census();
        assert!(runtime_driven >= 1, "round {round}: async calls used runtime-driven connections");
        // Shut down with calls in flight: their connections end, and nothing else may.
        for t in 0..MAX {
            short.spawn(acquire(&store, format!("cut-{round}-{t}")));
        }
        drop(short);
        assert!(matches!(reserve(&store, &format!("sync-{round}")), Ok(Reservation::Acquired { .. })));
        let (io, runtime_driven, out) = store.inner.pool.census();
        assert!(io >= 1, "round {round}: the sync entry uses the IO thread's connections");
        assert!(io + runtime_driven + out <= MAX, "round {round}: {io} + {runtime_driven} + {out} > {MAX}");
    }
    stop.store(true, Ordering::Relaxed);
    let steady_calls = steady.block_on(calls).unwrap();
    assert!(steady_calls > 0, "the steady runtime made calls throughout");
}

#[test]
fn a_full_pool_fails_after_the_checkout_timeout() {
    let Some(db) = TestDb::get("a_full_pool_fails_after_the_checkout_timeout") else { return };
    let store = db.builder().max_connections(1).checkout_timeout(Duration::from_millis(200)).build().unwrap();
    store.migrate_blocking().unwrap();
    let held = block_on(store.inner.pool.get()).unwrap();
    let started = Instant::now();
    let error = reserve(&store, "waits").unwrap_err().to_string();
    assert!(error.contains("no PostgreSQL connection came free"), "unexpected error: {error}");
    assert!(started.elapsed() >= Duration::from_millis(150), "gave up too early: {:?}", started.elapsed());
    drop(held);
    assert!(matches!(reserve(&store, "waits"), Ok(Reservation::Acquired { .. })));
}

/// Needs no server: a refused connection is a backend error (STORE_UNAVAILABLE), never
/// a conflict or a reservation.
#[test]
fn an_unreachable_server_is_a_backend_error() {
    let store = PgStore::builder("postgres://idem@127.0.0.1:1/none").build().unwrap();
    assert!(matches!(reserve(&store, "k"), Err(StoreError::Backend(_))));
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let read = runtime.block_on(store.read(id("k")));
    assert!(matches!(read, Err(StoreError::Backend(_))));
}

#[test]
fn bad_options_are_refused_when_building() {
    for schema in ["", "Idem", "1idem", "idem-x", "idem;drop", &"x".repeat(64)] {
        let error = PgStore::builder("postgres://localhost/db").schema(schema).build().unwrap_err();
        assert!(error.to_string().contains("schema"), "{schema:?}: {error}");
    }
    assert!(PgStore::builder("postgres://localhost/db").max_connections(0).build().is_err());
    assert!(PgStore::new("postgres://localhost:notaport/db").is_err());
    let store = PgStore::builder("postgres://u:secret@localhost/db").schema("idem_x").build().unwrap();
    let debug = format!("{store:?}");
    assert!(debug.contains("idem_x") && !debug.contains("secret"), "{debug}");
}

#[test]
fn is_send_sync_and_clone() {
    fn check<T: Send + Sync + Clone + 'static>() {}
    check::<PgStore>();
}

/// Per-call costs on this server, for the `store::postgres` docs (Cost per call):
/// `IDEM_TEST_DATABASE_URL=... cargo test --release -p idem-runtime --features postgres per_call_costs -- --ignored --nocapture`
#[test]
#[ignore = "a measurement, not a check"]
fn per_call_costs() {
    let Some(db) = TestDb::get("per_call_costs") else { return };
    const N: usize = 2000;
    let store = db.store();
    store.migrate_blocking().unwrap();
    // Multi-threaded, as servers run: the async calls use connections its workers drive.
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let keys: Vec<String> = (0..N).map(|i| format!("cost-{i}")).collect();
    let time = |what: &str, f: &mut dyn FnMut(&str)| {
        let started = Instant::now();
        keys.iter().for_each(|key| f(key));
        eprintln!("{what:<48} {:>8.1} µs/call", started.elapsed().as_secs_f64() * 1e6 / N as f64);
    };
    time("reserve + complete (a fresh call), async", &mut |key| {
        runtime.block_on(async {
            let request = Reserve { id: id(key), request: "{}", lease: Duration::from_secs(60) };
            let Ok(Reservation::Acquired { token }) = store.reserve(request).await else { panic!() };
            let done = Completion::Success("{\"ok\":true}");
            store.complete(id(key), token, done, Duration::from_secs(60)).await.unwrap();
        })
    });
    time("reserve finding the result (a replay), async", &mut |key| {
        runtime.block_on(async {
            let request = Reserve { id: id(key), request: "{}", lease: Duration::from_secs(60) };
            assert!(matches!(store.reserve(request).await, Ok(Reservation::Existing(_))));
        })
    });
    time("reserve finding the result (a replay), sync", &mut |key| {
        assert!(matches!(reserve(&store, key), Ok(Reservation::Existing(_))));
    });
    time("read (a status call), sync", &mut |key| {
        assert!(block_on(store.read(id(key))).unwrap().is_some());
    });
    time("transactional, fresh (begin+reserve, commit)", &mut |key| {
        let key = format!("tx-{key}");
        runtime.block_on(async {
            let Ok(Begun::Run(tx)) = store.begin::<i32>(id(&key), &(), Duration::from_secs(60)).await else {
                panic!("a new key runs")
            };
            tx.commit(&1).await.unwrap();
        })
    });
    time("transactional, replay", &mut |key| {
        let key = format!("tx-{key}");
        runtime.block_on(async {
            let begun = store.begin::<i32>(id(&key), &(), Duration::from_secs(60)).await;
            assert!(matches!(begun, Ok(Begun::Replayed(1))));
        })
    });
}

/// A server's error reaches the caller in the server's words, with its SQLSTATE, the
/// store (never the password) and the operation that failed.
#[test]
fn a_server_error_names_the_store_the_operation_and_the_servers_message() {
    let Some(db) = TestDb::get("a_server_error_names_the_store_the_operation_and_the_servers_message") else {
        return;
    };
    let mut config: Config = db.url.parse().unwrap();
    config.dbname("idem_no_such_db").password("secret-pw");
    let host = match &config.get_hosts()[0] {
        Host::Tcp(name) => name.clone(),
        #[cfg(unix)]
        Host::Unix(path) => path.display().to_string(),
    };
    let url =
        format!("postgres://{}:secret-pw@{host}:{}/idem_no_such_db", config.get_user().unwrap(), config.get_ports()[0]);
    let store = PgStore::builder(&url).schema("idem_x").build().unwrap();
    let error = reserve(&store, "k").unwrap_err().to_string();
    let port = config.get_ports()[0];
    for part in [
        &format!("PostgreSQL {}@{host}:{port}/idem_no_such_db (schema idem_x): reserve: ", config.get_user().unwrap()),
        "database \"idem_no_such_db\" does not exist (SQLSTATE 3D000)",
    ] {
        assert!(error.contains(part), "{part:?} missing from: {error}");
    }
    assert!(!error.contains("secret-pw") && !error.contains("db error"), "{error}");
}
