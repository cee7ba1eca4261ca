//! A store whose type is chosen at run time: [`DynStore`], the store protocol erased once,
//! as tower's `BoxService` erases a `Service`.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use super::{Completion, Record, RecordId, Renew, Reservation, Reserve, Store, StoreError, Token};

/// A boxed, sendable future: what an erased store's operations return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Any [`Store`], as a trait object: `Arc<dyn DynStore>`, `Box<dyn DynStore>` or
/// `&dyn DynStore` hold a store whose type is chosen at run time (PostgreSQL in
/// production, SQLite on a laptop), and are stores themselves: `store = *self.store` in
/// `#[idempotent(...)]`, `store.read(id).await` in code.
///
/// Every `Store` is a `DynStore`; implement [`Store`], never this trait (its methods are the
/// plumbing of the erasure). Each operation through `dyn DynStore` boxes its future, which
/// the concrete store's own futures do not.
///
/// ```
/// # extern crate idem_runtime as idem;
/// use std::sync::Arc;
/// use idem::store::{DynStore, MemoryStore, RecordId, SqliteStore, Store, block_on};
///
/// fn open(path: Option<&str>) -> Arc<dyn DynStore> {
///     match path {
///         Some(path) => Arc::new(SqliteStore::open(path).expect("the store opens")),
///         None => Arc::new(MemoryStore::new()),
///     }
/// }
///
/// let store = open(None);
/// let id = RecordId { namespace: "billing.invoices", key: "invoice:acme:2026-10" };
/// assert_eq!(block_on(store.read(id)).unwrap(), None);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an idem store",
    label = "implement `idem::store::Store` for it: every store is a `DynStore`"
)]
pub trait DynStore: Send + Sync + sealed::Sealed {
    #[doc(hidden)]
    fn erased_reserve<'a>(&'a self, request: Reserve<'a>) -> BoxFuture<'a, Result<Reservation, StoreError>>;
    #[doc(hidden)]
    fn erased_take_over<'a>(
        &'a self,
        id: RecordId<'a>,
        expired: Token,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Token, StoreError>>;
    #[doc(hidden)]
    fn erased_renew<'a>(&'a self, renewal: Renew<'a>) -> BoxFuture<'a, Result<(), StoreError>>;
    #[doc(hidden)]
    fn erased_complete<'a>(
        &'a self,
        id: RecordId<'a>,
        token: Token,
        completion: Completion<'a>,
        retain: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    #[doc(hidden)]
    fn erased_release<'a>(&'a self, id: RecordId<'a>, token: Token) -> BoxFuture<'a, Result<(), StoreError>>;
    #[doc(hidden)]
    fn erased_abandon<'a>(&'a self, id: RecordId<'a>, token: Token) -> BoxFuture<'a, Result<(), StoreError>>;
    #[doc(hidden)]
    fn erased_read<'a>(&'a self, id: RecordId<'a>) -> BoxFuture<'a, Result<Option<Record>, StoreError>>;
    #[doc(hidden)]
    fn erased_purge(&self, limit: usize) -> BoxFuture<'_, Result<usize, StoreError>>;
    /// This store as a `dyn DynStore`, which is a [`Store`]: for code generic over a type
    /// that is only known to be a `DynStore` (such as an [`Admin`](super::Admin), whose
    /// supertrait it is).
    fn as_dyn_store(&self) -> &dyn DynStore;
}

mod sealed {
    /// Only stores are `DynStore`s.
    pub trait Sealed {}
    impl<S: super::Store> Sealed for S {}
}

impl<S: Store> DynStore for S {
    fn erased_reserve<'a>(&'a self, request: Reserve<'a>) -> BoxFuture<'a, Result<Reservation, StoreError>> {
        Box::pin(self.reserve(request))
    }
    fn erased_take_over<'a>(
        &'a self,
        id: RecordId<'a>,
        expired: Token,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Token, StoreError>> {
        Box::pin(self.take_over(id, expired, lease))
    }
    fn erased_renew<'a>(&'a self, renewal: Renew<'a>) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.renew(renewal))
    }
    fn erased_complete<'a>(
        &'a self,
        id: RecordId<'a>,
        token: Token,
        completion: Completion<'a>,
        retain: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.complete(id, token, completion, retain))
    }
    fn erased_release<'a>(&'a self, id: RecordId<'a>, token: Token) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.release(id, token))
    }
    fn erased_abandon<'a>(&'a self, id: RecordId<'a>, token: Token) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.abandon(id, token))
    }
    fn erased_read<'a>(&'a self, id: RecordId<'a>) -> BoxFuture<'a, Result<Option<Record>, StoreError>> {
        Box::pin(self.read(id))
    }
    fn erased_purge(&self, limit: usize) -> BoxFuture<'_, Result<usize, StoreError>> {
        Box::pin(self.purge(limit))
    }
    fn as_dyn_store(&self) -> &dyn DynStore {
        self
    }
}

// `async fn`s: each hands its arguments, of two lifetimes, to one erased method of one.
impl Store for dyn DynStore + '_ {
    async fn reserve(&self, request: Reserve<'_>) -> Result<Reservation, StoreError> {
        self.erased_reserve(request).await
    }
    async fn take_over(&self, id: RecordId<'_>, expired: Token, lease: Duration) -> Result<Token, StoreError> {
        self.erased_take_over(id, expired, lease).await
    }
    async fn renew(&self, renewal: Renew<'_>) -> Result<(), StoreError> {
        self.erased_renew(renewal).await
    }
    async fn complete(
        &self,
        id: RecordId<'_>,
        token: Token,
        completion: Completion<'_>,
        retain: Duration,
    ) -> Result<(), StoreError> {
        self.erased_complete(id, token, completion, retain).await
    }
    async fn release(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        self.erased_release(id, token).await
    }
    async fn abandon(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        self.erased_abandon(id, token).await
    }
    async fn read(&self, id: RecordId<'_>) -> Result<Option<Record>, StoreError> {
        self.erased_read(id).await
    }
    async fn purge(&self, limit: usize) -> Result<usize, StoreError> {
        self.erased_purge(limit).await
    }
}
