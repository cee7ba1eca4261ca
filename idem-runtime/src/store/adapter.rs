//! Adapters between the store traits: a sync store as an async one ([`FromSync`]), the
//! store operations as inherent methods of the bundled stores, and stores behind `&`,
//! `Box` and `Arc`.

use std::sync::Arc;
use std::time::Duration;

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
///         self.records.reserve(request)
///     }
///     // ... the seven other operations
/// #   fn renew(&self, r: idem_runtime::store::Renew<'_>) -> Result<(), StoreError> { self.records.renew(r) }
/// #   fn take_over(&self, id: RecordId<'_>, t: Token, l: Duration) -> Result<Token, StoreError> { self.records.take_over(id, t, l) }
/// #   fn complete(&self, id: RecordId<'_>, t: Token, c: Completion<'_>, r: Duration) -> Result<(), StoreError> { self.records.complete(id, t, c, r) }
/// #   fn release(&self, id: RecordId<'_>, t: Token) -> Result<(), StoreError> { self.records.release(id, t) }
/// #   fn abandon(&self, id: RecordId<'_>, t: Token) -> Result<(), StoreError> { self.records.abandon(id, t) }
/// #   fn read(&self, id: RecordId<'_>) -> Result<Option<Record>, StoreError> { self.records.read(id) }
/// #   fn purge(&self, limit: usize) -> Result<usize, StoreError> { self.records.purge(limit) }
/// }
///
/// // One store for sync and async tools: `#[idempotent(key = "...", store = STORE)]`.
/// static STORE: std::sync::LazyLock<FromSync<MyStore>> =
///     std::sync::LazyLock::new(|| FromSync(MyStore::default()));
///
/// fn serves_async_tools(_: &impl AsyncStore) {}
/// serves_async_tools(&*STORE);
/// // Its operations are inherent methods too (the sync ones).
/// let id = RecordId { namespace: "docs", key: "k" };
/// let request = Reserve { id, request: "{}", lease: Duration::from_secs(60) };
/// assert!(matches!(STORE.reserve(request), Ok(Reservation::Acquired { .. })));
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

/// The store operations as inherent methods of `$ty`, so that `store.reserve(..)` calls
/// them with [`Store`] and [`AsyncStore`] both in scope (their methods share names, which
/// is error E0034 on a type that implements both): sync ones that call its [`Store`] impl,
/// or (`async`) async ones that await its [`AsyncStore`] impl.
macro_rules! inherent_store_ops {
    (impl[$($generics:tt)*] $ty:ty) => {
        /// The store operations, callable as `store.reserve(..)` whichever of
        /// [`Store`](crate::store::Store) and [`AsyncStore`](crate::store::AsyncStore) are in
        /// scope: this store answers at once, so they are the sync ones.
        impl<$($generics)*> $ty {
            /// Reserves a key; see [`Store::reserve`](crate::store::Store::reserve).
            pub fn reserve(
                &self,
                request: $crate::store::Reserve<'_>,
            ) -> Result<$crate::store::Reservation, $crate::store::StoreError> {
                $crate::store::Store::reserve(self, request)
            }
            /// Takes over an abandoned reservation; see [`Store::take_over`](crate::store::Store::take_over).
            pub fn take_over(
                &self,
                id: $crate::store::RecordId<'_>,
                expired: $crate::store::Token,
                lease: ::std::time::Duration,
            ) -> Result<$crate::store::Token, $crate::store::StoreError> {
                $crate::store::Store::take_over(self, id, expired, lease)
            }
            /// Renews a running call's lease; see [`Store::renew`](crate::store::Store::renew).
            pub fn renew(&self, renewal: $crate::store::Renew<'_>) -> Result<(), $crate::store::StoreError> {
                $crate::store::Store::renew(self, renewal)
            }
            /// Settles a reservation; see [`Store::complete`](crate::store::Store::complete).
            pub fn complete(
                &self,
                id: $crate::store::RecordId<'_>,
                token: $crate::store::Token,
                completion: $crate::store::Completion<'_>,
                retain: ::std::time::Duration,
            ) -> Result<(), $crate::store::StoreError> {
                $crate::store::Store::complete(self, id, token, completion, retain)
            }
            /// Deletes a reservation; see [`Store::release`](crate::store::Store::release).
            pub fn release(
                &self,
                id: $crate::store::RecordId<'_>,
                token: $crate::store::Token,
            ) -> Result<(), $crate::store::StoreError> {
                $crate::store::Store::release(self, id, token)
            }
            /// Ends a reservation's lease now; see [`Store::abandon`](crate::store::Store::abandon).
            pub fn abandon(
                &self,
                id: $crate::store::RecordId<'_>,
                token: $crate::store::Token,
            ) -> Result<(), $crate::store::StoreError> {
                $crate::store::Store::abandon(self, id, token)
            }
            /// Reads a record; see [`Store::read`](crate::store::Store::read).
            pub fn read(
                &self,
                id: $crate::store::RecordId<'_>,
            ) -> Result<Option<$crate::store::Record>, $crate::store::StoreError> {
                $crate::store::Store::read(self, id)
            }
            /// Deletes settled records past retention; see [`Store::purge`](crate::store::Store::purge).
            pub fn purge(&self, limit: usize) -> Result<usize, $crate::store::StoreError> {
                $crate::store::Store::purge(self, limit)
            }
        }
    };
    (async $ty:ty) => {
        /// The store operations, callable as `store.reserve(..).await` whichever of
        /// [`Store`](crate::store::Store) and [`AsyncStore`](crate::store::AsyncStore) are in
        /// scope: this store waits on a server, so they are the async ones. Sync code calls
        /// `Store::reserve(&store, ..)`, which blocks the calling thread.
        impl $ty {
            /// Reserves a key; see [`Store::reserve`](crate::store::Store::reserve).
            pub async fn reserve(
                &self,
                request: $crate::store::Reserve<'_>,
            ) -> Result<$crate::store::Reservation, $crate::store::StoreError> {
                $crate::store::AsyncStore::reserve(self, request).await
            }
            /// Takes over an abandoned reservation; see [`Store::take_over`](crate::store::Store::take_over).
            pub async fn take_over(
                &self,
                id: $crate::store::RecordId<'_>,
                expired: $crate::store::Token,
                lease: ::std::time::Duration,
            ) -> Result<$crate::store::Token, $crate::store::StoreError> {
                $crate::store::AsyncStore::take_over(self, id, expired, lease).await
            }
            /// Renews a running call's lease; see [`Store::renew`](crate::store::Store::renew).
            pub async fn renew(&self, renewal: $crate::store::Renew<'_>) -> Result<(), $crate::store::StoreError> {
                $crate::store::AsyncStore::renew(self, renewal).await
            }
            /// Settles a reservation; see [`Store::complete`](crate::store::Store::complete).
            pub async fn complete(
                &self,
                id: $crate::store::RecordId<'_>,
                token: $crate::store::Token,
                completion: $crate::store::Completion<'_>,
                retain: ::std::time::Duration,
            ) -> Result<(), $crate::store::StoreError> {
                $crate::store::AsyncStore::complete(self, id, token, completion, retain).await
            }
            /// Deletes a reservation; see [`Store::release`](crate::store::Store::release).
            pub async fn release(
                &self,
                id: $crate::store::RecordId<'_>,
                token: $crate::store::Token,
            ) -> Result<(), $crate::store::StoreError> {
                $crate::store::AsyncStore::release(self, id, token).await
            }
            /// Ends a reservation's lease now; see [`Store::abandon`](crate::store::Store::abandon).
            pub async fn abandon(
                &self,
                id: $crate::store::RecordId<'_>,
                token: $crate::store::Token,
            ) -> Result<(), $crate::store::StoreError> {
                $crate::store::AsyncStore::abandon(self, id, token).await
            }
            /// Reads a record; see [`Store::read`](crate::store::Store::read).
            pub async fn read(
                &self,
                id: $crate::store::RecordId<'_>,
            ) -> Result<Option<$crate::store::Record>, $crate::store::StoreError> {
                $crate::store::AsyncStore::read(self, id).await
            }
            /// Deletes settled records past retention; see [`Store::purge`](crate::store::Store::purge).
            pub async fn purge(&self, limit: usize) -> Result<usize, $crate::store::StoreError> {
                $crate::store::AsyncStore::purge(self, limit).await
            }
        }
    };
}
pub(crate) use inherent_store_ops;

async_store_from_sync!(#[diagnostic::do_not_recommend] impl[S: Store] FromSync<S>, |this| &this.0);
inherent_store_ops!(impl[S: Store] FromSync<S>);
