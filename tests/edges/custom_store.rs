//! A store of your own: implement `Store` once, with `async fn`s, and one value serves sync
//! and async tools.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use idem::store::Store;
use idem::store::{Completion, Record, RecordId, Renew, Reservation, Reserve, StoreError, Token};
use idem::telemetry::Outcome;
use idem::{MemoryStore, idempotent};

/// A store that counts its reservations and renewals, over a `MemoryStore`.
#[derive(Default)]
struct CountingStore {
    records: MemoryStore,
    reserves: AtomicUsize,
    renewals: AtomicUsize,
}

impl Store for CountingStore {
    async fn reserve(&self, request: Reserve<'_>) -> Result<Reservation, StoreError> {
        self.reserves.fetch_add(1, Ordering::SeqCst);
        self.records.reserve(request).await
    }
    async fn take_over(&self, id: RecordId<'_>, expired: Token, lease: Duration) -> Result<Token, StoreError> {
        self.records.take_over(id, expired, lease).await
    }
    async fn renew(&self, renewal: Renew<'_>) -> Result<(), StoreError> {
        self.renewals.fetch_add(1, Ordering::SeqCst);
        self.records.renew(renewal).await
    }
    async fn complete(
        &self,
        id: RecordId<'_>,
        token: Token,
        done: Completion<'_>,
        retain: Duration,
    ) -> Result<(), StoreError> {
        self.records.complete(id, token, done, retain).await
    }
    async fn release(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        self.records.release(id, token).await
    }
    async fn abandon(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        self.records.abandon(id, token).await
    }
    async fn read(&self, id: RecordId<'_>) -> Result<Option<Record>, StoreError> {
        self.records.read(id).await
    }
    async fn purge(&self, limit: usize) -> Result<usize, StoreError> {
        self.records.purge(limit).await
    }
}

static STORE: LazyLock<CountingStore> = LazyLock::new(CountingStore::default);
static SENT: AtomicUsize = AtomicUsize::new(0);

#[idempotent(key = "mail:<to>", namespace = "custom-store.mail", store = *STORE)]
async fn send_mail(to: String) -> Result<String, idem::Error> {
    SENT.fetch_add(1, Ordering::SeqCst);
    Ok(format!("sent to {to}"))
}

#[idempotent(key = "mail:<to>", namespace = "custom-store.mail", store = *STORE)]
fn send_mail_sync(to: String) -> Result<String, idem::Error> {
    SENT.fetch_add(1, Ordering::SeqCst);
    Ok(format!("sent to {to}"))
}

#[test]
fn a_store_implemented_once_serves_async_and_sync_tools() {
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    runtime.block_on(async {
        assert_eq!(send_mail("ann".into()).await.unwrap(), "sent to ann");
        let (again, calls) = idem::telemetry::observe_async(send_mail("ann".into())).await;
        assert_eq!((again.unwrap(), calls[0].outcome), ("sent to ann".to_owned(), Outcome::Replayed));
    });
    let (again, calls) = idem::telemetry::observe(|| send_mail_sync("ann".into()));
    assert_eq!((again.unwrap(), calls[0].outcome), ("sent to ann".to_owned(), Outcome::Replayed));
    assert_eq!(SENT.load(Ordering::SeqCst), 1, "one effect");
    assert_eq!(STORE.reserves.load(Ordering::SeqCst), 3, "every call went through the custom store");
}

#[idempotent(key = "mail:<to>", namespace = "custom-store.slow-mail", lease = "300ms", store = *STORE)]
fn send_mail_slowly(to: String, until_renewals: usize) -> Result<String, idem::Error> {
    // Runs until the store has seen that many renewals of its lease (or gives up).
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while STORE.renewals.load(Ordering::SeqCst) < until_renewals && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(format!("sent to {to}"))
}

/// Renewal costs nothing for a body that finishes within a third of its lease: counted
/// through the store, many fast calls write no renewal, and a slow one does.
#[test]
fn a_fast_body_writes_no_renewal_and_a_slow_one_does() {
    static FAST: LazyLock<CountingStore> = LazyLock::new(CountingStore::default);
    #[idempotent(key = "mail:<to>", namespace = "custom-store.fast-mail", store = *FAST)]
    fn send_fast(to: String) -> Result<String, idem::Error> {
        Ok(to)
    }
    #[idempotent(key = "mail:<to>", namespace = "custom-store.fast-mail-async", store = *FAST)]
    async fn send_fast_async(to: String) -> Result<String, idem::Error> {
        Ok(to)
    }
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    for i in 0..500 {
        send_fast(format!("user{i}")).unwrap();
        runtime.block_on(send_fast_async(format!("user{i}"))).unwrap();
    }
    assert_eq!(FAST.reserves.load(Ordering::SeqCst), 1000);
    assert_eq!(FAST.renewals.load(Ordering::SeqCst), 0, "no fast call renewed its lease");
    let before = STORE.renewals.load(Ordering::SeqCst);
    assert_eq!(send_mail_slowly("bo".into(), before + 2).unwrap(), "sent to bo");
    assert!(STORE.renewals.load(Ordering::SeqCst) >= before + 2, "the slow call renewed its lease through the store");
}
