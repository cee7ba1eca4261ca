//! A completion that fails is written again, up to 3 times, unless the store says it waited
//! its whole deadline (an `io::Error` of kind `TimedOut` in its error): then the caller gets
//! the body's result after one wait, not one per attempt (`Store::complete`'s docs).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use idem::store::{Completion, Record, RecordId, Renew, Reservation, Reserve, Store, StoreError, Token};
use idem::{MemoryStore, idempotent};

/// A memory store whose completions fail with `failure`, counting the attempts.
struct FailingCompletions {
    inner: MemoryStore,
    failure: fn() -> StoreError,
    attempts: AtomicUsize,
}

impl Store for FailingCompletions {
    async fn reserve(&self, request: Reserve<'_>) -> Result<Reservation, StoreError> {
        self.inner.reserve(request).await
    }
    async fn take_over(&self, id: RecordId<'_>, expired: Token, lease: Duration) -> Result<Token, StoreError> {
        self.inner.take_over(id, expired, lease).await
    }
    async fn renew(&self, renewal: Renew<'_>) -> Result<(), StoreError> {
        self.inner.renew(renewal).await
    }
    async fn complete(&self, _: RecordId<'_>, _: Token, _: Completion<'_>, _: Duration) -> Result<(), StoreError> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        Err((self.failure)())
    }
    async fn release(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        self.inner.release(id, token).await
    }
    async fn abandon(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        self.inner.abandon(id, token).await
    }
    async fn read(&self, id: RecordId<'_>) -> Result<Option<Record>, StoreError> {
        self.inner.read(id).await
    }
    async fn purge(&self, limit: usize) -> Result<usize, StoreError> {
        self.inner.purge(limit).await
    }
}

#[idempotent(key = "send:<order>", namespace = "edges.completion_attempts", store = *store)]
fn send(store: &FailingCompletions, order: u32) -> Result<u32, idem::Error> {
    Ok(order)
}

fn attempts(failure: fn() -> StoreError) -> usize {
    let store = FailingCompletions { inner: MemoryStore::new(), failure, attempts: AtomicUsize::new(0) };
    assert_eq!(send(&store, 1).unwrap(), 1, "the caller gets the body's result");
    store.attempts.load(Ordering::SeqCst)
}

#[test]
fn a_failure_at_once_is_tried_three_times() {
    assert_eq!(attempts(|| StoreError::Backend("connection reset".into())), 3);
}

#[test]
fn a_store_that_waited_its_whole_deadline_is_tried_once() {
    let timed_out = || StoreError::Backend(Box::new(std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer")));
    assert_eq!(attempts(timed_out), 1);
}

#[test]
fn a_timeout_among_the_causes_counts() {
    #[derive(Debug)]
    struct Wrapped(std::io::Error);
    impl std::fmt::Display for Wrapped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("the server did not answer")
        }
    }
    impl std::error::Error for Wrapped {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }
    let wrapped = || StoreError::Backend(Box::new(Wrapped(std::io::ErrorKind::TimedOut.into())));
    assert_eq!(attempts(wrapped), 1);
}
