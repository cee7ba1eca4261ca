//! Write-once records: what idem keeps beside a tool's records (an MCP task's run, an
//! approval request, a decision), written through the store protocol itself, so that
//! every store (the bundled ones, a custom one) keeps them with nothing added to it.
//!
//! A value is the `request` of its record: it stands from the moment the store's unique
//! constraint picked its writer, in the one step of the reservation, so no reader ever
//! finds a value half written. The writer then completes the record with the same value,
//! which only sets how long it is kept; a writer that stopped before that step leaves an
//! in-progress record whose value stands all the same.

use std::time::Duration;

use super::{Completion, RecordId, RecordState, Reservation, Reserve, Store, StoreError};

/// How long a written value's record holds its lease before it is completed: nothing
/// waits on it, it only marks a writer that stopped between its two steps.
const WRITE_LEASE: Duration = Duration::from_secs(10);

/// What [`put`] came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Put {
    /// This call wrote the value.
    Written,
    /// Another writer's value stands.
    Found(String),
}

/// Writes `value` under `id` unless a value is there already; see [`Put`]. Never waits.
pub(crate) async fn put<S: Store + ?Sized>(
    store: &S,
    id: RecordId<'_>,
    value: &str,
    retain: Duration,
) -> Result<Put, StoreError> {
    match store.reserve(Reserve { id, request: value, lease: WRITE_LEASE }).await? {
        Reservation::Acquired { token } => {
            // The value stands already; completing it only starts its retention.
            if let Err(error) = store.complete(id, token, Completion::Success(value), retain).await {
                tracing::warn!(target: "idem", namespace = id.namespace, key = id.key, %error, "a written value stands, but its record could not be completed: it is kept until removed by hand");
            }
            Ok(Put::Written)
        }
        Reservation::Existing(record) => Ok(Put::Found(value_of(record.request, record.state))),
        Reservation::OverBudget(_) => Err(StoreError::Corrupt("a reservation without a charge was over budget".into())),
    }
}

/// The value written under `id`, and when it was written (by the store's clock), if any.
pub(crate) async fn get<S: Store + ?Sized>(store: &S, id: RecordId<'_>) -> Result<Option<(String, i64)>, StoreError> {
    let record = store.read(id).await?;
    Ok(record.map(|record| (value_of(record.request, record.state), record.created_at_ms)))
}

/// A completed record's result is its value (the same as its request, and the only copy in
/// records written before values moved into the request).
fn value_of(request: String, state: RecordState) -> String {
    match state {
        RecordState::Completed { result } => result,
        _ => request,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

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
        let store = MemoryStore::new();
        assert_eq!(now(get(&store, id("k"))).unwrap(), None);
        assert_eq!(now(put(&store, id("k"), "1", KEPT)).unwrap(), Put::Written);
        assert_eq!(now(put(&store, id("k"), "2", KEPT)).unwrap(), Put::Found("1".into()));
        assert_eq!(now(get(&store, id("k"))).unwrap().map(|(value, _)| value).as_deref(), Some("1"));
    }

    #[test]
    fn a_value_stands_from_its_reservation_even_if_its_writer_stopped() {
        let store = MemoryStore::new();
        // A writer that reserved and stopped before completing: its value stands.
        let stopped = Reserve { id: id("k"), request: "1", lease: Duration::ZERO };
        now(store.reserve(stopped)).unwrap();
        assert_eq!(now(get(&store, id("k"))).unwrap().map(|(value, _)| value).as_deref(), Some("1"));
        assert_eq!(now(put(&store, id("k"), "2", KEPT)).unwrap(), Put::Found("1".into()));
    }

    #[test]
    fn a_written_value_is_completed_for_its_retention() {
        let store = MemoryStore::new();
        assert_eq!(now(put(&store, id("k"), "1", KEPT)).unwrap(), Put::Written);
        let record = now(store.read(id("k"))).unwrap().unwrap();
        assert_eq!(record.state, RecordState::Completed { result: "1".into() });
        assert!(record.retain_until_ms.is_some());
    }
}
