//! The conformance checks through a store's async impl, the path async tools take.

use std::thread;
use std::time::Duration;

use super::check_store;
use crate::store::{Completion, Record, RecordId, Reservation, Reserve, Store, StoreError, Token};

/// Runs every check of [`check_store`] through the store's
/// [`AsyncStore`](crate::store::AsyncStore) impl, the path async tools take.
///
/// Each operation's future runs to its end on the calling thread, outside any async
/// runtime: a store whose futures need one (a tokio timer or socket of the caller's
/// runtime) must drive its IO on a runtime of its own, as the bundled PostgreSQL store
/// does. `make_store` is called once per check and must return an empty store.
///
/// ```
/// idem_runtime::testing::conformance::check_async_store(idem_runtime::store::MemoryStore::new);
/// ```
pub fn check_async_store<S: crate::store::AsyncStore>(make_store: impl Fn() -> S) {
    check_store(|| ThroughAsync(make_store()));
}

/// A store seen through its async impl, each future run to its end by [`block_on`].
pub(super) struct ThroughAsync<S>(pub(super) S);

impl<S: crate::store::AsyncStore> Store for ThroughAsync<S> {
    fn reserve(&self, request: Reserve<'_>) -> Result<Reservation, StoreError> {
        block_on(self.0.reserve(request))
    }
    fn reserve_charged(
        &self,
        request: Reserve<'_>,
        charge: crate::store::budget::Charge<'_>,
    ) -> Result<Reservation, StoreError> {
        block_on(self.0.reserve_charged(request, charge))
    }
    fn take_over(&self, id: RecordId<'_>, expired: Token, lease: Duration) -> Result<Token, StoreError> {
        block_on(self.0.take_over(id, expired, lease))
    }
    fn renew(&self, renewal: crate::store::Renew<'_>) -> Result<(), StoreError> {
        block_on(self.0.renew(renewal))
    }
    fn complete(
        &self,
        id: RecordId<'_>,
        token: Token,
        completion: Completion<'_>,
        retain: Duration,
    ) -> Result<(), StoreError> {
        block_on(self.0.complete(id, token, completion, retain))
    }
    fn release(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        block_on(self.0.release(id, token))
    }
    fn abandon(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        block_on(self.0.abandon(id, token))
    }
    fn read(&self, id: RecordId<'_>) -> Result<Option<Record>, StoreError> {
        block_on(self.0.read(id))
    }
    fn purge(&self, limit: usize) -> Result<usize, StoreError> {
        block_on(self.0.purge(limit))
    }
}

impl<S: super::PlantRecord> super::PlantRecord for ThroughAsync<S> {
    fn plant_state(&self, id: RecordId<'_>, state: &str) -> Result<(), StoreError> {
        self.0.plant_state(id, state)
    }
}

/// Polls `future` on this thread, parking it until the future's waker is called.
pub(super) fn block_on<F: std::future::Future>(future: F) -> F::Output {
    struct Unpark(thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(std::sync::Arc::new(Unpark(thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        thread::park();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::super::check_unknown_state;
    use super::*;

    /// The async path of the bundled stores passes the same checks as their sync path.
    #[test]
    fn memory_store_passes_through_its_async_impl() {
        check_async_store(crate::store::MemoryStore::new);
    }

    #[test]
    fn sqlite_store_passes_through_its_async_impl() {
        let dir = tempfile::tempdir().unwrap();
        let n = AtomicU64::new(0);
        check_async_store(|| {
            let path = dir.path().join(format!("store-{}.db", n.fetch_add(1, Ordering::Relaxed)));
            crate::store::SqliteStore::open(path).unwrap()
        });
    }

    /// A record in a state this version does not know reads as corrupt through the async
    /// impl too.
    #[test]
    fn unknown_states_are_corrupt_through_the_async_impl() {
        check_unknown_state(&ThroughAsync(crate::store::MemoryStore::new()));
        let dir = tempfile::tempdir().unwrap();
        check_unknown_state(&ThroughAsync(crate::store::SqliteStore::open(dir.path().join("idem.db")).unwrap()));
    }
}
