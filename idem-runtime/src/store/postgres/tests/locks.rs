//! Keys held by a transaction still open: its duplicates are told IN_PROGRESS after
//! `IDEM_LOCK_WAIT`, not after the transaction's own `lock_timeout`, which still bounds
//! the writes made through it.

use super::*;
use crate::store::budget::{BudgetQuery, Charge, UNIT};
use crate::store::{Admin, BudgetStore};

/// A duplicate `begin` is IN_PROGRESS within a fraction of `lock_timeout`; once the first
/// commits, it replays.
#[test]
fn a_duplicate_begin_is_in_progress_at_once_then_replays() {
    let Some(db) = TestDb::get("a_duplicate_begin_is_in_progress_at_once_then_replays") else { return };
    let store = db.builder().lock_timeout(Duration::from_secs(30)).build().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let Ok(Begun::Run(first)) = store.begin::<i32>(id("open"), &(), Duration::from_secs(60)).await else {
            panic!("a new key runs")
        };
        let started = Instant::now();
        let error = store.begin::<i32>(id("open"), &(), Duration::from_secs(60)).await.unwrap_err();
        assert_eq!(error.code(), crate::error::ErrorCode::InProgress, "{error}");
        assert!(started.elapsed() < Duration::from_secs(10), "waited {:?} for a 30 s lock_timeout", started.elapsed());
        first.commit(&7).await.unwrap();
        let again = store.begin::<i32>(id("open"), &(), Duration::from_secs(60)).await;
        assert!(matches!(again, Ok(Begun::Replayed(7))), "{again:?}");
    });
}

/// A tool's reservation of a key that an open transaction holds is `Locked` (the tool
/// answers IN_PROGRESS), on both entries, well before `lock_timeout`; after a rollback
/// the key is free.
#[test]
fn a_reservation_behind_an_open_transaction_is_locked_at_once() {
    let Some(db) = TestDb::get("a_reservation_behind_an_open_transaction_is_locked_at_once") else { return };
    let store = db.builder().lock_timeout(Duration::from_secs(30)).build().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let open = runtime.block_on(store.begin::<i32>(id("held"), &(), Duration::from_secs(60)));
    let Ok(Begun::Run(open)) = open else { panic!("a new key runs") };
    let started = Instant::now();
    let sync = reserve(&store, "held");
    assert!(matches!(sync, Err(StoreError::Locked)), "{sync:?}");
    let request = Reserve { id: id("held"), request: "{}", lease: Duration::from_secs(60) };
    let async_entry = runtime.block_on(store.reserve(request));
    assert!(matches!(async_entry, Err(StoreError::Locked)), "{async_entry:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "waited {:?} for a 30 s lock_timeout", started.elapsed());
    runtime.block_on(open.rollback()).unwrap();
    assert!(matches!(reserve(&store, "held"), Ok(Reservation::Acquired { .. })));
}

/// The writes made through a transaction wait for a lock up to `lock_timeout`, longer than
/// idem's own statements do: a row locked by someone else for several `IDEM_LOCK_WAIT`s is
/// written once it is free.
#[test]
fn writes_through_a_transaction_wait_up_to_lock_timeout() {
    let Some(db) = TestDb::get("writes_through_a_transaction_wait_up_to_lock_timeout") else { return };
    let store = db.builder().lock_timeout(Duration::from_secs(30)).build().unwrap();
    let table = format!("{}.locked_rows", store.schema());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        store.migrate().await.unwrap();
        let (other, connection) = tokio_postgres::connect(&db.url, NoTls).await.unwrap();
        tokio::spawn(connection);
        other
            .batch_execute(&format!("CREATE TABLE {table} (id int PRIMARY KEY); INSERT INTO {table} VALUES (1)"))
            .await
            .unwrap();
        other.batch_execute(&format!("BEGIN; SELECT * FROM {table} FOR UPDATE")).await.unwrap();
        let Ok(Begun::Run(tx)) = store.begin::<i32>(id("writes"), &(), Duration::from_secs(60)).await else {
            panic!("a new key runs")
        };
        // Held for five of idem's lock waits, then let go.
        let holder = tokio::spawn(async move {
            tokio::time::sleep(IDEM_LOCK_WAIT * 5).await;
            other.batch_execute("COMMIT").await.unwrap();
        });
        let started = Instant::now();
        tx.execute(&format!("UPDATE {table} SET id = 2 WHERE id = 1"), &[]).await.unwrap();
        assert!(started.elapsed() >= IDEM_LOCK_WAIT * 4, "the row was free early: {:?}", started.elapsed());
        tx.commit(&1).await.unwrap();
        holder.await.unwrap();
    });
}

/// A charged reservation of a key that an open transaction holds is `Locked` within
/// `IDEM_LOCK_WAIT`, and its charge is rolled back with it.
#[test]
fn a_charged_reservation_behind_an_open_transaction_is_locked_and_charges_nothing() {
    let Some(db) = TestDb::get("a_charged_reservation_behind_an_open_transaction_is_locked_and_charges_nothing") else {
        return;
    };
    let store = db.builder().lock_timeout(Duration::from_secs(30)).build().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let Ok(Begun::Run(open)) = store.begin::<i32>(id("held"), &(), Duration::from_secs(60)).await else {
            panic!("a new key runs")
        };
        let started = Instant::now();
        let request = Reserve { id: id("held"), request: "{}", lease: Duration::from_secs(60) };
        let charged = store.reserve_charged(request, one_of_ten("behind")).await;
        assert!(matches!(charged, Err(StoreError::Locked)), "{charged:?}");
        assert!(started.elapsed() < Duration::from_secs(10), "waited {:?} for a 30 s lock_timeout", started.elapsed());
        assert_eq!(used(&store, "behind"), 0, "a reservation that failed must leave no charge");
        open.rollback().await.unwrap();
    });
}

/// A charged reservation that charged its window and then lost its key to a record
/// committed meanwhile finds that record, and its charge is given back. The race is made,
/// not hoped for: another transaction holds the window's row until this reservation waits
/// for it, and inserts the record before it lets go.
#[test]
fn a_charged_reservation_that_loses_its_key_after_charging_is_refunded() {
    let Some(db) = TestDb::get("a_charged_reservation_that_loses_its_key_after_charging_is_refunded") else { return };
    let store = db.builder().lock_timeout(Duration::from_secs(30)).build().unwrap();
    let schema = store.schema().to_owned();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let seed = Reserve { id: id("seed"), request: "{}", lease: Duration::from_secs(60) };
        let seeded = store.reserve_charged(seed, one_of_ten("contested")).await;
        assert!(matches!(seeded, Ok(Reservation::Acquired { .. })), "{seeded:?}");
        let (other, connection) = tokio_postgres::connect(&db.url, NoTls).await.unwrap();
        tokio::spawn(connection);
        other
            .batch_execute(&format!("BEGIN; SELECT * FROM {schema}.idem_budgets WHERE budget = 'contested' FOR UPDATE"))
            .await
            .unwrap();
        let store = std::sync::Arc::new(store);
        let racer = tokio::spawn({
            let store = std::sync::Arc::clone(&store);
            async move {
                let request = Reserve { id: id("contested"), request: "{}", lease: Duration::from_secs(60) };
                store.reserve_charged(request, one_of_ten("contested")).await
            }
        });
        // The reservation's statement names this test's schema.
        let waiting = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1";
        let statement = format!("%{schema}.idem_reserve_charged%");
        let deadline = Instant::now() + Duration::from_secs(20);
        while other.query_one(waiting, &[&statement]).await.unwrap().get::<_, i64>(0) == 0 {
            assert!(Instant::now() < deadline, "the reservation never waited for the window's row");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        other
            .batch_execute(&format!(
                "INSERT INTO {schema}.idem_records (namespace, key, state, request, created_at, updated_at, \
                 lease_until) VALUES ('pg-test', 'contested', 'in_progress', '{{}}', now(), now(), \
                 now() + interval '1 minute'); COMMIT"
            ))
            .await
            .unwrap();
        let found = racer.await.unwrap();
        assert!(matches!(found, Ok(Reservation::Existing(_))), "the record committed meanwhile wins: {found:?}");
        assert_eq!(used(&store, "contested"), UNIT, "only the seed's charge is left: the loser was refunded");
    });
}

/// One call of a budget of ten, by the day.
fn one_of_ten(budget: &str) -> Charge<'_> {
    Charge { budget, scope: "", window_ms: 24 * 3600 * 1000, limit: 10 * UNIT, amount: UNIT, past_limit: false }
}

/// What `budget`'s current window used, or 0 without one.
/// (`Admin` waits for the store on the calling thread, a runtime's included.)
fn used(store: &PgStore, budget: &str) -> i64 {
    let query = BudgetQuery { budget: Some(budget), scope: None, current: true };
    store.budgets(&query).unwrap().first().map_or(0, |window| window.used)
}
