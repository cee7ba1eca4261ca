//! A store that fails every operation, for the tests of what a failing store means: the
//! body does not run, and the caller is told STORE_UNAVAILABLE.

use std::time::Duration;

use idem::store::{Completion, Record, RecordId, Renew, Reservation, Reserve, Store, StoreError, Token};

/// A store that fails every operation, as an unreachable database does.
pub struct BrokenStore;

fn broken() -> StoreError {
    StoreError::Backend("connection refused".into())
}

impl Store for BrokenStore {
    async fn reserve(&self, _: Reserve<'_>) -> Result<Reservation, StoreError> {
        Err(broken())
    }
    async fn take_over(&self, _: RecordId<'_>, _: Token, _: Duration) -> Result<Token, StoreError> {
        Err(broken())
    }
    async fn renew(&self, _: Renew<'_>) -> Result<(), StoreError> {
        Err(broken())
    }
    async fn complete(&self, _: RecordId<'_>, _: Token, _: Completion<'_>, _: Duration) -> Result<(), StoreError> {
        Err(broken())
    }
    async fn release(&self, _: RecordId<'_>, _: Token) -> Result<(), StoreError> {
        Err(broken())
    }
    async fn abandon(&self, _: RecordId<'_>, _: Token) -> Result<(), StoreError> {
        Err(broken())
    }
    async fn read(&self, _: RecordId<'_>) -> Result<Option<Record>, StoreError> {
        Err(broken())
    }
    async fn purge(&self, _: usize) -> Result<usize, StoreError> {
        Err(broken())
    }
}
