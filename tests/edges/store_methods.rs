//! Store operations called as methods, with both store traits in scope (as a tool module
//! that has sync and async tools imports them): no fully qualified syntax needed.

#![allow(unused_imports)]

use std::time::Duration;

use idem::store::{Completion, FromSync, RecordId, RecordState, Reservation, Reserve};
use idem::{AsyncStore, MemoryStore, SqliteStore, Store};

const LEASE: Duration = Duration::from_secs(60);

/// Reserves, completes, reads and purges through method calls, for a sync-answering store.
macro_rules! exercise {
    ($store:expr) => {{
        let store = $store;
        let id = RecordId { namespace: "store-methods", key: "k1" };
        let Ok(Reservation::Acquired { token }) = store.reserve(Reserve { id, request: "{}", lease: LEASE }) else {
            panic!("a new key is acquired");
        };
        store.complete(id, token, Completion::Success("\"done\""), LEASE).unwrap();
        let record = store.read(id).unwrap().unwrap();
        assert_eq!(record.state, RecordState::Completed { result: "\"done\"".into() });
        assert!(matches!(store.reserve(Reserve { id, request: "{}", lease: LEASE }), Ok(Reservation::Existing(_))));
        let other = RecordId { namespace: "store-methods", key: "k2" };
        let Ok(Reservation::Acquired { token }) = store.reserve(Reserve { id: other, request: "{}", lease: LEASE })
        else {
            panic!("a new key is acquired");
        };
        store.abandon(other, token).unwrap();
        let token = store.take_over(other, token, LEASE).unwrap();
        store.release(other, token).unwrap();
        assert_eq!(store.purge(10).unwrap(), 0);
    }};
}

#[test]
fn the_bundled_stores_take_method_calls_with_both_traits_in_scope() {
    exercise!(MemoryStore::new());
    let dir = tempfile::tempdir().unwrap();
    exercise!(SqliteStore::open(dir.path().join("idem.db")).unwrap());
    exercise!(FromSync(MemoryStore::new()));
}

#[test]
fn the_postgres_store_takes_async_method_calls_with_both_traits_in_scope() {
    let Some(url) = std::env::var("IDEM_TEST_DATABASE_URL").ok().filter(|url| !url.is_empty()) else {
        return eprintln!("SKIPPED: set IDEM_TEST_DATABASE_URL (`bash .ci/pg start DIR` prints one)");
    };
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    let schema = format!("idem_store_methods_{}_{nanos}", std::process::id());
    let store = idem::store::PgStore::builder(&url).schema(&schema).build().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    runtime.block_on(async {
        let id = RecordId { namespace: "store-methods", key: "k1" };
        let Ok(Reservation::Acquired { token }) = store.reserve(Reserve { id, request: "{}", lease: LEASE }).await
        else {
            panic!("a new key is acquired");
        };
        store.complete(id, token, Completion::Success("1"), LEASE).await.unwrap();
        let record = store.read(id).await.unwrap().unwrap();
        assert_eq!(record.state, RecordState::Completed { result: "1".into() });
        assert_eq!(store.purge(10).await.unwrap(), 0);
        // The blocking form, for sync code, is the trait's.
        assert!(Store::read(&store, id).unwrap().is_some());
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        client.batch_execute(&format!("DROP SCHEMA {schema} CASCADE")).await.unwrap();
    });
}
