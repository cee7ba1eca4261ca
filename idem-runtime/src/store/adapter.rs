//! Adapters between the store traits: a sync store as an async one ([`FromSync`]), and
//! stores behind `&`, `Box` and `Arc`.

use std::sync::Arc;
use std::time::Duration;

use super::budget::Charge;
use super::{
    AsyncStore, BoxFuture, Completion, Record, RecordId, Renew, Reservation, Reserve, Store, StoreError, Token,
};

/// A sync [`Store`] as an [`AsyncStore`] too, for async tools: each operation runs the
/// sync one on the calling task, and its future is ready at once.
///
/// Wrap a store of your own that implements only [`Store`], and one value serves sync and
/// async tools alike (`FromSync` implements both traits): no `AsyncStore` methods to write.
/// It suits a store that answers quickly (in memory, a local file), since an async tool's
/// task waits for each operation; a store that waits on a network should implement
/// [`AsyncStore`] itself, as `PgStore` does. The bundled `MemoryStore` and `SqliteStore`
/// implement both traits already.
///
/// ```
/// use idem_runtime::store::{AsyncStore, FromSync, MemoryStore, RecordId, Reservation, Reserve, Store};
/// # use idem_runtime::store::{Completion, Record, StoreError, Token};
/// # use std::time::Duration;
///
/// /// A store of your own, with only the sync operations (here over a `MemoryStore`).
/// #[derive(Default)]
/// struct MyStore { records: MemoryStore }
///
/// impl Store for MyStore {
///     fn reserve(&self, request: Reserve<'_>) -> Result<Reservation, StoreError> {
///         Store::reserve(&self.records, request)
///     }
///     // ... the eight other operations
/// #   fn reserve_charged(&self, r: Reserve<'_>, c: idem_runtime::store::budget::Charge<'_>) -> Result<Reservation, StoreError> { Store::reserve_charged(&self.records, r, c) }
/// #   fn renew(&self, r: idem_runtime::store::Renew<'_>) -> Result<(), StoreError> { Store::renew(&self.records, r) }
/// #   fn take_over(&self, id: RecordId<'_>, t: Token, l: Duration) -> Result<Token, StoreError> { Store::take_over(&self.records, id, t, l) }
/// #   fn complete(&self, id: RecordId<'_>, t: Token, c: Completion<'_>, r: Duration) -> Result<(), StoreError> { Store::complete(&self.records, id, t, c, r) }
/// #   fn release(&self, id: RecordId<'_>, t: Token) -> Result<(), StoreError> { Store::release(&self.records, id, t) }
/// #   fn abandon(&self, id: RecordId<'_>, t: Token) -> Result<(), StoreError> { Store::abandon(&self.records, id, t) }
/// #   fn read(&self, id: RecordId<'_>) -> Result<Option<Record>, StoreError> { Store::read(&self.records, id) }
/// #   fn purge(&self, limit: usize) -> Result<usize, StoreError> { Store::purge(&self.records, limit) }
/// }
///
/// // One store for sync and async tools: `#[idempotent(key = "...", store = STORE)]`.
/// static STORE: std::sync::LazyLock<FromSync<MyStore>> =
///     std::sync::LazyLock::new(|| FromSync(MyStore::default()));
///
/// fn serves_async_tools(_: &impl AsyncStore) {}
/// serves_async_tools(&*STORE);
/// // Both traits are in scope here: a call names the one it means.
/// let id = RecordId { namespace: "docs", key: "k" };
/// let request = Reserve { id, request: "{}", lease: Duration::from_secs(60) };
/// assert!(matches!(Store::reserve(&*STORE, request), Ok(Reservation::Acquired { .. })));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FromSync<S>(pub S);

impl<S> FromSync<S> {
    /// The wrapped store.
    pub fn into_inner(self) -> S {
        self.0
    }
}

// Not listed in "the following other types implement `Store`" hints, which name the
// bundled stores.
#[diagnostic::do_not_recommend]
impl<S: Store> Store for FromSync<S> {
    fn reserve(&self, request: Reserve<'_>) -> Result<Reservation, StoreError> {
        self.0.reserve(request)
    }
    fn reserve_charged(&self, request: Reserve<'_>, charge: Charge<'_>) -> Result<Reservation, StoreError> {
        self.0.reserve_charged(request, charge)
    }
    fn take_over(&self, id: RecordId<'_>, expired: Token, lease: Duration) -> Result<Token, StoreError> {
        self.0.take_over(id, expired, lease)
    }
    fn renew(&self, renewal: Renew<'_>) -> Result<(), StoreError> {
        self.0.renew(renewal)
    }
    fn complete(
        &self,
        id: RecordId<'_>,
        token: Token,
        completion: Completion<'_>,
        retain: Duration,
    ) -> Result<(), StoreError> {
        self.0.complete(id, token, completion, retain)
    }
    fn release(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        self.0.release(id, token)
    }
    fn abandon(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        self.0.abandon(id, token)
    }
    fn read(&self, id: RecordId<'_>) -> Result<Option<Record>, StoreError> {
        self.0.read(id)
    }
    fn purge(&self, limit: usize) -> Result<usize, StoreError> {
        self.0.purge(limit)
    }
}

/// Implements [`AsyncStore`] through [`Store`] with futures that are ready at once: for
/// stores quick enough to answer on the calling task (the memory store; SQLite on a local
/// disk). `$sync` names the sync store, given `$this: &Self`. (Sync tools' calls do not
/// go through it: the driver reaches a sync store without boxing, see `call::drive`.)
macro_rules! async_store_from_sync {
    ($ty:ty) => {
        $crate::store::async_store_from_sync!(impl[] $ty, |this| this);
    };
    ($(#[$attr:meta])* impl[$($generics:tt)*] $ty:ty, |$this:ident| $sync:expr) => {
        $(#[$attr])*
        impl<$($generics)*> $crate::store::AsyncStore for $ty {
            fn reserve<'a>(
                &'a self,
                request: $crate::store::Reserve<'a>,
            ) -> $crate::store::BoxFuture<'a, Result<$crate::store::Reservation, $crate::store::StoreError>> {
                let $this = self;
                Box::pin(::std::future::ready($crate::store::Store::reserve($sync, request)))
            }
            fn reserve_charged<'a>(
                &'a self,
                request: $crate::store::Reserve<'a>,
                charge: $crate::store::budget::Charge<'a>,
            ) -> $crate::store::BoxFuture<'a, Result<$crate::store::Reservation, $crate::store::StoreError>> {
                let $this = self;
                Box::pin(::std::future::ready($crate::store::Store::reserve_charged($sync, request, charge)))
            }
            fn take_over<'a>(
                &'a self,
                id: $crate::store::RecordId<'a>,
                expired: $crate::store::Token,
                lease: ::std::time::Duration,
            ) -> $crate::store::BoxFuture<'a, Result<$crate::store::Token, $crate::store::StoreError>> {
                let $this = self;
                Box::pin(::std::future::ready($crate::store::Store::take_over($sync, id, expired, lease)))
            }
            fn renew<'a>(
                &'a self,
                renewal: $crate::store::Renew<'a>,
            ) -> $crate::store::BoxFuture<'a, Result<(), $crate::store::StoreError>> {
                let $this = self;
                Box::pin(::std::future::ready($crate::store::Store::renew($sync, renewal)))
            }
            fn complete<'a>(
                &'a self,
                id: $crate::store::RecordId<'a>,
                token: $crate::store::Token,
                completion: $crate::store::Completion<'a>,
                retain: ::std::time::Duration,
            ) -> $crate::store::BoxFuture<'a, Result<(), $crate::store::StoreError>> {
                let $this = self;
                Box::pin(::std::future::ready($crate::store::Store::complete($sync, id, token, completion, retain)))
            }
            fn release<'a>(
                &'a self,
                id: $crate::store::RecordId<'a>,
                token: $crate::store::Token,
            ) -> $crate::store::BoxFuture<'a, Result<(), $crate::store::StoreError>> {
                let $this = self;
                Box::pin(::std::future::ready($crate::store::Store::release($sync, id, token)))
            }
            fn abandon<'a>(
                &'a self,
                id: $crate::store::RecordId<'a>,
                token: $crate::store::Token,
            ) -> $crate::store::BoxFuture<'a, Result<(), $crate::store::StoreError>> {
                let $this = self;
                Box::pin(::std::future::ready($crate::store::Store::abandon($sync, id, token)))
            }
            fn read<'a>(
                &'a self,
                id: $crate::store::RecordId<'a>,
            ) -> $crate::store::BoxFuture<'a, Result<Option<$crate::store::Record>, $crate::store::StoreError>> {
                let $this = self;
                Box::pin(::std::future::ready($crate::store::Store::read($sync, id)))
            }
            fn purge(&self, limit: usize) -> $crate::store::BoxFuture<'_, Result<usize, $crate::store::StoreError>> {
                let $this = self;
                Box::pin(::std::future::ready($crate::store::Store::purge($sync, limit)))
            }
        }
    };
}
pub(crate) use async_store_from_sync;

macro_rules! forward_through_pointer {
    ($($ptr:ty),*) => {$(
        impl<S: Store + ?Sized> Store for $ptr {
            fn reserve(&self, request: Reserve<'_>) -> Result<Reservation, StoreError> {
                (**self).reserve(request)
            }
            fn reserve_charged(&self, request: Reserve<'_>, charge: Charge<'_>) -> Result<Reservation, StoreError> {
                (**self).reserve_charged(request, charge)
            }
            fn take_over(&self, id: RecordId<'_>, expired: Token, lease: Duration) -> Result<Token, StoreError> {
                (**self).take_over(id, expired, lease)
            }
            fn renew(&self, renewal: Renew<'_>) -> Result<(), StoreError> {
                (**self).renew(renewal)
            }
            fn complete(
                &self,
                id: RecordId<'_>,
                token: Token,
                completion: Completion<'_>,
                retain: Duration,
            ) -> Result<(), StoreError> {
                (**self).complete(id, token, completion, retain)
            }
            fn release(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
                (**self).release(id, token)
            }
            fn abandon(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
                (**self).abandon(id, token)
            }
            fn read(&self, id: RecordId<'_>) -> Result<Option<Record>, StoreError> {
                (**self).read(id)
            }
            fn purge(&self, limit: usize) -> Result<usize, StoreError> {
                (**self).purge(limit)
            }
        }

        impl<S: AsyncStore + ?Sized> AsyncStore for $ptr {
            fn reserve<'a>(&'a self, request: Reserve<'a>) -> BoxFuture<'a, Result<Reservation, StoreError>> {
                (**self).reserve(request)
            }
            fn reserve_charged<'a>(
                &'a self,
                request: Reserve<'a>,
                charge: Charge<'a>,
            ) -> BoxFuture<'a, Result<Reservation, StoreError>> {
                (**self).reserve_charged(request, charge)
            }
            fn take_over<'a>(
                &'a self,
                id: RecordId<'a>,
                expired: Token,
                lease: Duration,
            ) -> BoxFuture<'a, Result<Token, StoreError>> {
                (**self).take_over(id, expired, lease)
            }
            fn renew<'a>(&'a self, renewal: Renew<'a>) -> BoxFuture<'a, Result<(), StoreError>> {
                (**self).renew(renewal)
            }
            fn complete<'a>(
                &'a self,
                id: RecordId<'a>,
                token: Token,
                completion: Completion<'a>,
                retain: Duration,
            ) -> BoxFuture<'a, Result<(), StoreError>> {
                (**self).complete(id, token, completion, retain)
            }
            fn release<'a>(&'a self, id: RecordId<'a>, token: Token) -> BoxFuture<'a, Result<(), StoreError>> {
                (**self).release(id, token)
            }
            fn abandon<'a>(&'a self, id: RecordId<'a>, token: Token) -> BoxFuture<'a, Result<(), StoreError>> {
                (**self).abandon(id, token)
            }
            fn read<'a>(&'a self, id: RecordId<'a>) -> BoxFuture<'a, Result<Option<Record>, StoreError>> {
                (**self).read(id)
            }
            fn purge(&self, limit: usize) -> BoxFuture<'_, Result<usize, StoreError>> {
                (**self).purge(limit)
            }
        }
    )*};
}

forward_through_pointer!(&S, Box<S>, Arc<S>);

async_store_from_sync!(#[diagnostic::do_not_recommend] impl[S: Store] FromSync<S>, |this| &this.0);
