//! The store under test as the checks call it: each operation waited for on the calling
//! thread, as a sync tool's call waits for its store ([`block_on`]).

use std::time::Duration;

use crate::store::budget::Charge;
use crate::store::{
    BudgetStore, Completion, Record, RecordId, Renew, Reservation, Reserve, Store, StoreError, Token, block_on,
};

/// A store whose operations the checks call as plain functions: each one's future runs to
/// its end on the calling thread, outside any async runtime, so a store whose futures need
/// one (a tokio timer or socket of the caller's runtime) must drive its IO on a runtime of
/// its own, as the bundled PostgreSQL and Redis stores do. Its [`Admin`](crate::store::Admin)
/// operations, sync already, are the store's own (through `Deref`).
pub(super) struct Waited<S>(pub(super) S);

impl<S> std::ops::Deref for Waited<S> {
    type Target = S;
    fn deref(&self) -> &S {
        &self.0
    }
}

impl<S: Store> Waited<S> {
    pub(super) fn reserve(&self, request: Reserve<'_>) -> Result<Reservation, StoreError> {
        block_on(self.0.reserve(request))
    }
    pub(super) fn take_over(&self, id: RecordId<'_>, expired: Token, lease: Duration) -> Result<Token, StoreError> {
        block_on(self.0.take_over(id, expired, lease))
    }
    pub(super) fn renew(&self, renewal: Renew<'_>) -> Result<(), StoreError> {
        block_on(self.0.renew(renewal))
    }
    pub(super) fn complete(
        &self,
        id: RecordId<'_>,
        token: Token,
        completion: Completion<'_>,
        retain: Duration,
    ) -> Result<(), StoreError> {
        block_on(self.0.complete(id, token, completion, retain))
    }
    pub(super) fn release(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        block_on(self.0.release(id, token))
    }
    pub(super) fn abandon(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        block_on(self.0.abandon(id, token))
    }
    pub(super) fn read(&self, id: RecordId<'_>) -> Result<Option<Record>, StoreError> {
        block_on(self.0.read(id))
    }
    pub(super) fn purge(&self, limit: usize) -> Result<usize, StoreError> {
        block_on(self.0.purge(limit))
    }
}

impl<S: BudgetStore> Waited<S> {
    pub(super) fn reserve_charged(&self, request: Reserve<'_>, charge: Charge<'_>) -> Result<Reservation, StoreError> {
        block_on(self.0.reserve_charged(request, charge))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::super::check_store;
    use crate::store::{DynStore, MemoryStore, SqliteStore};

    /// A store chosen at run time passes the same checks through its erased form, whose
    /// operations box their futures.
    #[test]
    fn erased_stores_pass_the_checks() {
        check_store(|| Box::new(MemoryStore::new()) as Box<dyn DynStore>);
        let dir = tempfile::tempdir().unwrap();
        let n = AtomicU64::new(0);
        check_store(|| {
            let path = dir.path().join(format!("store-{}.db", n.fetch_add(1, Ordering::Relaxed)));
            std::sync::Arc::new(SqliteStore::open(path).unwrap()) as std::sync::Arc<dyn DynStore>
        });
    }
}
