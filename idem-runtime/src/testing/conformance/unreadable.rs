//! Records a store did not write: a state a newer idem added during a rolling deploy, or
//! a row damaged by hand. A store must report them as [`StoreError::Corrupt`], which a
//! tool answers RECORD_UNREADABLE (not retryable: a person must look); never as an outage
//! (STORE_UNAVAILABLE would have an agent retry forever) and never as a free key (that
//! would run the action again).

use super::waited::Waited;
use super::{LONG, acquire, id, read, reserve_request};
use crate::store::{Completion, MemoryStore, RecordId, SqliteStore, Store, StoreError, Token};

/// A store that can be given a record it did not write, so that [`check_unknown_state`]
/// (and tests of your tools) can check how it answers one.
///
/// The bundled stores implement it: [`MemoryStore`](crate::store::MemoryStore),
/// [`SqliteStore`](crate::store::SqliteStore) and, with the `postgres` feature,
/// `PgStore`. It bypasses every rule of the store's own operations; use it in tests only.
///
/// ```
/// use idem_runtime::store::{MemoryStore, RecordId, Store, StoreError, block_on};
/// use idem_runtime::testing::conformance::PlantRecord;
///
/// let store = MemoryStore::new();
/// let id = RecordId { namespace: "billing.invoices", key: "invoice:acme:2026-10" };
/// store.plant_state(id, "paused").unwrap();
/// assert!(matches!(block_on(store.read(id)), Err(StoreError::Corrupt(_))));
/// ```
pub trait PlantRecord {
    /// Writes a record for `id`, which must have none, whose state is `state` as the
    /// store stores it: a state this version of idem does not know, such as `"paused"`, as
    /// a newer version or a hand edit could leave one. The record's compared fields are
    /// `{}` and it has no lease and no retention.
    fn plant_state(&self, id: RecordId<'_>, state: &str) -> Result<(), StoreError>;
}

impl<S: PlantRecord + ?Sized> PlantRecord for &S {
    fn plant_state(&self, id: RecordId<'_>, state: &str) -> Result<(), StoreError> {
        (**self).plant_state(id, state)
    }
}

// The bundled stores' impls live here, with the suite, not with the stores: each store
// only offers its raw write (`plant_record`), and production code never names this trait.
impl PlantRecord for MemoryStore {
    fn plant_state(&self, id: RecordId<'_>, state: &str) -> Result<(), StoreError> {
        self.plant_record(id, state)
    }
}

impl PlantRecord for SqliteStore {
    fn plant_state(&self, id: RecordId<'_>, state: &str) -> Result<(), StoreError> {
        self.plant_record(id, state)
    }
}

#[cfg(feature = "postgres")]
impl PlantRecord for crate::store::PgStore {
    fn plant_state(&self, id: RecordId<'_>, state: &str) -> Result<(), StoreError> {
        self.plant_record(id, state)
    }
}

/// Checks that a record in a state the store does not know is [`StoreError::Corrupt`]
/// (naming its key) for every operation that reads it, that nothing changes or removes
/// it, and that the records beside it still work. `store` must have no records in the
/// suite's namespace.
///
/// ```
/// idem_runtime::testing::conformance::check_unknown_state(&idem_runtime::store::MemoryStore::new());
/// ```
pub fn check_unknown_state<S: Store + PlantRecord>(store: &S) {
    let store = &Waited(store);
    let unknown = id("unknown-state");
    let beside = id("beside-unknown-state");
    let token = acquire(store, beside, "{}");
    store
        .plant_state(unknown, "paused")
        .unwrap_or_else(|e| panic!("planting a record in an unknown state failed: {e}"));
    let corrupt = |what: &str, result: Result<String, StoreError>| match result {
        Err(StoreError::Corrupt(why)) => {
            assert!(why.contains(unknown.key), "{what}: the Corrupt error must name the key {}: {why}", unknown.key)
        }
        Err(other) => panic!("{what} of a record in an unknown state must be Corrupt, not the error {other}"),
        Ok(found) => panic!("{what} of a record in an unknown state must be Corrupt, got {found}"),
    };
    corrupt("read", store.read(unknown).map(|record| format!("{record:?}")));
    corrupt("reserve", store.reserve(reserve_request(unknown, "{}", LONG)).map(|found| format!("{found:?}")));
    for stranger in [Token(1), token, Token(u64::MAX)] {
        let left_alone = |what: &str, result: Result<(), StoreError>| {
            assert!(result.is_err(), "{what} with {stranger:?} must not change a record in an unknown state");
        };
        left_alone("complete", store.complete(unknown, stranger, Completion::Success("1"), LONG));
        left_alone("release", store.release(unknown, stranger));
        left_alone("abandon", store.abandon(unknown, stranger));
        assert!(
            store.take_over(unknown, stranger, LONG).is_err(),
            "take_over with {stranger:?} must not take a record in an unknown state"
        );
    }
    store.purge(usize::MAX).unwrap_or_else(|e| panic!("purge beside a record in an unknown state failed: {e}"));
    corrupt("read after the other operations", store.read(unknown).map(|record| format!("{record:?}")));
    store
        .complete(beside, token, Completion::Success("\"beside\""), LONG)
        .unwrap_or_else(|e| panic!("a record beside one in an unknown state must still complete: {e}"));
    assert!(read(store, beside).is_some(), "a record beside one in an unknown state must still read");
}

#[cfg(feature = "redis")]
impl PlantRecord for crate::store::RedisStore {
    fn plant_state(&self, id: RecordId<'_>, state: &str) -> Result<(), StoreError> {
        self.plant_record(id, state)
    }
}
