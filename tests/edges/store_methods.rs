//! Store operations called from sync code, `block_on(store.read(id))`, and from async code,
//! `store.read(id).await`, as the `idem::store` docs say: every bundled store answers both
//! ways, and so does a store erased to `dyn DynStore`.

use std::time::Duration;

use idem::MemoryStore;
use idem::SqliteStore;
use idem::store::{Completion, DynStore, RecordId, RecordState, Reservation, Reserve, Store, block_on};

const LEASE: Duration = Duration::from_secs(60);

/// Reserves, completes, reads, takes over, releases and purges from sync code, in `namespace`.
fn through_store(store: &impl Store, namespace: &str) {
    let id = RecordId { namespace, key: "k1" };
    let Ok(Reservation::Acquired { token }) = block_on(store.reserve(Reserve { id, request: "{}", lease: LEASE }))
    else {
        panic!("a new key is acquired");
    };
    block_on(store.complete(id, token, Completion::Success("\"done\""), LEASE)).unwrap();
    let record = block_on(store.read(id)).unwrap().unwrap();
    assert_eq!(record.state, RecordState::Completed { result: "\"done\"".into() });
    assert!(matches!(
        block_on(store.reserve(Reserve { id, request: "{}", lease: LEASE })),
        Ok(Reservation::Existing(_))
    ));
    let other = RecordId { namespace, key: "k2" };
    let Ok(Reservation::Acquired { token }) =
        block_on(store.reserve(Reserve { id: other, request: "{}", lease: LEASE }))
    else {
        panic!("a new key is acquired");
    };
    block_on(store.abandon(other, token)).unwrap();
    let token = block_on(store.take_over(other, token, LEASE)).unwrap();
    block_on(store.release(other, token)).unwrap();
    assert_eq!(block_on(store.read(other)).unwrap(), None);
    assert_eq!(block_on(store.purge(10)).unwrap(), 0);
}

/// The same operations from async code, in `namespace`.
async fn through_async_store(store: &impl Store, namespace: &str) {
    let id = RecordId { namespace, key: "k1" };
    let reserve = Reserve { id, request: "{}", lease: LEASE };
    let Ok(Reservation::Acquired { token }) = store.reserve(reserve).await else {
        panic!("a new key is acquired");
    };
    store.complete(id, token, Completion::Success("1"), LEASE).await.unwrap();
    let record = store.read(id).await.unwrap().unwrap();
    assert_eq!(record.state, RecordState::Completed { result: "1".into() });
    assert!(matches!(store.reserve(reserve).await, Ok(Reservation::Existing(_))));
    let other = RecordId { namespace, key: "k2" };
    let reserve = Reserve { id: other, request: "{}", lease: LEASE };
    let Ok(Reservation::Acquired { token }) = store.reserve(reserve).await else {
        panic!("a new key is acquired");
    };
    store.abandon(other, token).await.unwrap();
    let token = store.take_over(other, token, LEASE).await.unwrap();
    store.release(other, token).await.unwrap();
    assert_eq!(store.read(other).await.unwrap(), None);
    assert_eq!(store.purge(10).await.unwrap(), 0);
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

#[test]
fn the_bundled_stores_answer_sync_and_async_code() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open(dir.path().join("idem.db")).unwrap();
    let (memory, erased) = (MemoryStore::new(), Box::new(MemoryStore::new()) as Box<dyn DynStore>);
    through_store(&memory, "sync");
    through_store(&sqlite, "sync");
    through_store(&erased, "sync");
    runtime().block_on(async {
        through_async_store(&memory, "async").await;
        through_async_store(&sqlite, "async").await;
        through_async_store(&erased, "async").await;
    });
    // One record per namespace each way: both ways reach the same records.
    for namespace in ["sync", "async"] {
        let id = RecordId { namespace, key: "k1" };
        assert!(block_on(sqlite.read(id)).unwrap().is_some(), "{namespace}");
        assert!(block_on(memory.read(id)).unwrap().is_some(), "{namespace}");
    }
}

#[test]
fn the_postgres_store_answers_sync_and_async_code() {
    let Some(url) = std::env::var("IDEM_TEST_DATABASE_URL").ok().filter(|url| !url.is_empty()) else {
        return eprintln!("SKIPPED: set IDEM_TEST_DATABASE_URL (`bash .ci/pg start DIR` prints one)");
    };
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    let schema = format!("idem_store_methods_{}_{nanos}", std::process::id());
    let store = idem::store::PgStore::builder(&url).schema(&schema).build().unwrap();
    // `block_on` parks the calling thread while the store's own IO thread works: call it
    // outside async code.
    through_store(&store, "sync");
    runtime().block_on(async {
        through_async_store(&store, "async").await;
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        client.batch_execute(&format!("DROP SCHEMA {schema} CASCADE")).await.unwrap();
    });
}
