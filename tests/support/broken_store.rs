//! A store that fails every operation, for the tests of what a failing store means: the
//! body does not run, and the caller is told STORE_UNAVAILABLE.

use std::time::Duration;

use idem::store::AsyncStore;
use idem::store::{BoxFuture, Completion, Record, RecordId, Renew, Reservation, Reserve, Store, StoreError, Token};

/// A store that fails every operation, as an unreachable database does.
pub struct BrokenStore;

fn broken() -> StoreError {
    StoreError::Backend("connection refused".into())
}

impl Store for BrokenStore {
    fn reserve(&self, _: Reserve<'_>) -> Result<Reservation, StoreError> {
        Err(broken())
    }
    fn take_over(&self, _: RecordId<'_>, _: Token, _: Duration) -> Result<Token, StoreError> {
        Err(broken())
    }
    fn renew(&self, _: Renew<'_>) -> Result<(), StoreError> {
        Err(broken())
    }
    fn complete(&self, _: RecordId<'_>, _: Token, _: Completion<'_>, _: Duration) -> Result<(), StoreError> {
        Err(broken())
    }
    fn release(&self, _: RecordId<'_>, _: Token) -> Result<(), StoreError> {
        Err(broken())
    }
    fn abandon(&self, _: RecordId<'_>, _: Token) -> Result<(), StoreError> {
        Err(broken())
    }
    fn read(&self, _: RecordId<'_>) -> Result<Option<Record>, StoreError> {
        Err(broken())
    }
    fn purge(&self, _: usize) -> Result<usize, StoreError> {
        Err(broken())
    }
}

impl AsyncStore for BrokenStore {
    fn reserve<'a>(&'a self, _: Reserve<'a>) -> BoxFuture<'a, Result<Reservation, StoreError>> {
        Box::pin(async { Err(broken()) })
    }
    fn take_over<'a>(&'a self, _: RecordId<'a>, _: Token, _: Duration) -> BoxFuture<'a, Result<Token, StoreError>> {
        Box::pin(async { Err(broken()) })
    }
    fn renew<'a>(&'a self, _: Renew<'a>) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async { Err(broken()) })
    }
    fn complete<'a>(
        &'a self,
        _: RecordId<'a>,
        _: Token,
        _: Completion<'a>,
        _: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async { Err(broken()) })
    }
    fn release<'a>(&'a self, _: RecordId<'a>, _: Token) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async { Err(broken()) })
    }
    fn abandon<'a>(&'a self, _: RecordId<'a>, _: Token) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async { Err(broken()) })
    }
    fn read<'a>(&'a self, _: RecordId<'a>) -> BoxFuture<'a, Result<Option<Record>, StoreError>> {
        Box::pin(async { Err(broken()) })
    }
    fn purge(&self, _: usize) -> BoxFuture<'_, Result<usize, StoreError>> {
        Box::pin(async { Err(broken()) })
    }
}
