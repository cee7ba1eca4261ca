//! Store operations called with both store traits in scope (as a tool module that has sync
//! and async tools imports them): `Store` and `AsyncStore` name their operations alike, so
//! a call names its trait, `Store::read(&store, id)` or `AsyncStore::read(&store, id).await`,
//! as the `idem::store` docs say. Every bundled store answers through either.

use std::time::Duration;

use idem::MemoryStore;
use idem::SqliteStore;
use idem::store::{AsyncStore, Completion, FromSync, RecordId, RecordState, Reservation, Reserve, Store};

const LEASE: Duration = Duration::from_secs(60);

/// Reserves, completes, reads, takes over, releases and purges through `Store`, in `namespace`.
fn through_store(store: &impl Store, namespace: &str) {
    let id = RecordId { namespace, key: "k1" };
    let Ok(Reservation::Acquired { token }) = Store::reserve(store, Reserve { id, request: "{}", lease: LEASE }) else {
        panic!("a new key is acquired");
    };
    Store::complete(store, id, token, Completion::Success("\"done\""), LEASE).unwrap();
    let record = Store::read(store, id).unwrap().unwrap();
    assert_eq!(record.state, RecordState::Completed { result: "\"done\"".into() });
    assert!(matches!(Store::reserve(store, Reserve { id, request: "{}", lease: LEASE }), Ok(Reservation::Existing(_))));
    let other = RecordId { namespace, key: "k2" };
    let Ok(Reservation::Acquired { token }) = Store::reserve(store, Reserve { id: other, request: "{}", lease: LEASE })
    else {
        panic!("a new key is acquired");
    };
    Store::abandon(store, other, token).unwrap();
    let token = Store::take_over(store, other, token, LEASE).unwrap();
    Store::release(store, other, token).unwrap();
    assert_eq!(Store::read(store, other).unwrap(), None);
    assert_eq!(Store::purge(store, 10).unwrap(), 0);
}

/// The same operations through `AsyncStore`, in `namespace`.
async fn through_async_store(store: &impl AsyncStore, namespace: &str) {
    let id = RecordId { namespace, key: "k1" };
    let reserve = Reserve { id, request: "{}", lease: LEASE };
    let Ok(Reservation::Acquired { token }) = AsyncStore::reserve(store, reserve).await else {
        panic!("a new key is acquired");
    };
    AsyncStore::complete(store, id, token, Completion::Success("1"), LEASE).await.unwrap();
    let record = AsyncStore::read(store, id).await.unwrap().unwrap();
    assert_eq!(record.state, RecordState::Completed { result: "1".into() });
    assert!(matches!(AsyncStore::reserve(store, reserve).await, Ok(Reservation::Existing(_))));
    let other = RecordId { namespace, key: "k2" };
    let reserve = Reserve { id: other, request: "{}", lease: LEASE };
    let Ok(Reservation::Acquired { token }) = AsyncStore::reserve(store, reserve).await else {
        panic!("a new key is acquired");
    };
    AsyncStore::abandon(store, other, token).await.unwrap();
    let token = AsyncStore::take_over(store, other, token, LEASE).await.unwrap();
    AsyncStore::release(store, other, token).await.unwrap();
    assert_eq!(AsyncStore::read(store, other).await.unwrap(), None);
    assert_eq!(AsyncStore::purge(store, 10).await.unwrap(), 0);
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

#[test]
fn the_bundled_stores_answer_through_either_trait() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open(dir.path().join("idem.db")).unwrap();
    let (memory, wrapped) = (MemoryStore::new(), FromSync(MemoryStore::new()));
    through_store(&memory, "sync");
    through_store(&sqlite, "sync");
    through_store(&wrapped, "sync");
    runtime().block_on(async {
        through_async_store(&memory, "async").await;
        through_async_store(&sqlite, "async").await;
        through_async_store(&wrapped, "async").await;
    });
    // One record per namespace each way: both traits reach the same records.
    for namespace in ["sync", "async"] {
        let id = RecordId { namespace, key: "k1" };
        assert!(Store::read(&sqlite, id).unwrap().is_some(), "{namespace}");
        assert!(Store::read(&memory, id).unwrap().is_some(), "{namespace}");
    }
}

#[test]
fn the_postgres_store_answers_through_either_trait() {
    let Some(url) = std::env::var("IDEM_TEST_DATABASE_URL").ok().filter(|url| !url.is_empty()) else {
        return eprintln!("SKIPPED: set IDEM_TEST_DATABASE_URL (`bash .ci/pg start DIR` prints one)");
    };
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    let schema = format!("idem_store_methods_{}_{nanos}", std::process::id());
    let store = idem::store::PgStore::builder(&url).schema(&schema).build().unwrap();
    // `Store` blocks the calling thread on the store's own IO thread: call it outside async code.
    through_store(&store, "sync");
    runtime().block_on(async {
        through_async_store(&store, "async").await;
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        client.batch_execute(&format!("DROP SCHEMA {schema} CASCADE")).await.unwrap();
    });
}
