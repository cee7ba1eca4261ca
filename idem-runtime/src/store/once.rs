//! Write-once records: what idem keeps beside a tool's records (an MCP task's run, an
//! approval request, a decision), written through the store protocol itself, so that
//! every store (the bundled ones, a custom one) keeps them with nothing added to it.
//!
//! A value is written by reserving its record and completing it at once; the store's
//! unique constraint picks the first writer, and every later writer gets the value that
//! stands. A writer that stopped between the two steps leaves an in-progress record,
//! which is taken over once its short lease has ended.

use std::time::Duration;

use super::{AsyncStore, Completion, RecordId, RecordState, Reservation, Reserve, StoreError, Token};

/// How long a writer may take between reserving a record and completing it before another
/// writer takes it over.
const WRITE_LEASE: Duration = Duration::from_secs(10);

/// What [`put`] came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Put {
    /// This call wrote the value.
    Written,
    /// Another writer's value stands.
    Found(String),
    /// Another writer is between its two steps right now: its value stands in a moment.
    Writing,
}

/// Writes `value` under `id` unless a value is there already; see [`Put`]. Never waits.
pub(crate) async fn put<S: AsyncStore + ?Sized>(
    store: &S,
    id: RecordId<'_>,
    value: &str,
    retain: Duration,
) -> Result<Put, StoreError> {
    let complete = |token: Token| async move {
        store.complete(id, token, Completion::Success(value), retain).await.map(|()| Put::Written)
    };
    // Two rounds: a stopped writer's record is taken over in the first, and a take-over
    // lost to another writer is settled by then.
    for _ in 0..2 {
        match store.reserve(Reserve { id, request: "{}", lease: WRITE_LEASE }).await? {
            Reservation::Acquired { token } => return complete(token).await,
            Reservation::Existing(record) => match record.state {
                RecordState::Completed { result } => return Ok(Put::Found(result)),
                RecordState::Failed { error } => {
                    return Err(StoreError::Corrupt(format!("{} {} holds an error: {error}", id.namespace, id.key)));
                }
                RecordState::InProgress { lease_expired: true, .. } => {
                    match store.take_over(id, record.token, WRITE_LEASE).await {
                        Ok(token) => return complete(token).await,
                        Err(StoreError::Fenced) => {}
                        Err(error) => return Err(error),
                    }
                }
                RecordState::InProgress { lease_expired: false, .. } => return Ok(Put::Writing),
            },
        }
    }
    Ok(Put::Writing)
}

/// The value written under `id`, and when it was written (by the store's clock), if any.
/// A value being written right now is not there yet.
pub(crate) async fn get<S: AsyncStore + ?Sized>(
    store: &S,
    id: RecordId<'_>,
) -> Result<Option<(String, i64)>, StoreError> {
    let record = store.read(id).await?;
    Ok(record.and_then(|record| match record.state {
        RecordState::Completed { result } => Some((result, record.created_at_ms)),
        _ => None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{FromSync, MemoryStore};

    const KEPT: Duration = Duration::from_secs(3600);

    fn id(key: &str) -> RecordId<'_> {
        RecordId { namespace: "idem.test", key }
    }

    /// A memory store's futures are ready at once.
    fn now<F: std::future::Future>(future: F) -> F::Output {
        let mut context = std::task::Context::from_waker(std::task::Waker::noop());
        match std::pin::pin!(future).poll(&mut context) {
            std::task::Poll::Ready(output) => output,
            std::task::Poll::Pending => unreachable!("a memory store answers at once"),
        }
    }

    #[test]
    fn the_first_value_stands() {
        let store = FromSync(MemoryStore::new());
        assert_eq!(now(get(&store, id("k"))).unwrap(), None);
        assert_eq!(now(put(&store, id("k"), "1", KEPT)).unwrap(), Put::Written);
        assert_eq!(now(put(&store, id("k"), "2", KEPT)).unwrap(), Put::Found("1".into()));
        assert_eq!(now(get(&store, id("k"))).unwrap().map(|(value, _)| value).as_deref(), Some("1"));
    }

    #[test]
    fn a_writer_between_its_steps_is_writing_and_one_that_stopped_is_taken_over() {
        let store = FromSync(MemoryStore::new());
        let writing = Reserve { id: id("k"), request: "{}", lease: Duration::from_secs(60) };
        now(AsyncStore::reserve(&store, writing)).unwrap();
        assert_eq!(now(put(&store, id("k"), "2", KEPT)).unwrap(), Put::Writing);
        assert_eq!(now(get(&store, id("k"))).unwrap(), None, "not written yet");

        let stopped = Reserve { id: id("j"), request: "{}", lease: Duration::ZERO };
        now(AsyncStore::reserve(&store, stopped)).unwrap();
        assert_eq!(now(put(&store, id("j"), "3", KEPT)).unwrap(), Put::Written);
        assert_eq!(now(get(&store, id("j"))).unwrap().map(|(value, _)| value).as_deref(), Some("3"));
    }
}
