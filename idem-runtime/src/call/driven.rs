//! How the driver reaches a store: [`Driven`], with futures of each store's own type, so
//! that a sync tool's calls never box a future (see [`Blocking`]).

use std::future::{Future, ready};

pub(crate) use crate::store::ready_now;
use std::time::Duration;

use crate::key::Key;
use crate::store::budget::Charge;
use crate::store::{AsyncStore, Completion, RecordId, Renew, Reservation, Reserve, Store, StoreError, Token};

use super::Tool;
use super::blocking::Blocking;
use super::renewer::Registration;

/// The store operations the driver awaits, with futures of each store's own type.
pub(crate) trait Driven {
    fn reserve<'a>(&'a self, request: Reserve<'a>)
    -> impl Future<Output = Result<Reservation, StoreError>> + Send + 'a;
    fn reserve_charged<'a>(
        &'a self,
        request: Reserve<'a>,
        charge: Charge<'a>,
    ) -> impl Future<Output = Result<Reservation, StoreError>> + Send + 'a;
    fn take_over<'a>(
        &'a self,
        id: RecordId<'a>,
        expired: Token,
        lease: Duration,
    ) -> impl Future<Output = Result<Token, StoreError>> + Send + 'a;
    fn renew<'a>(&'a self, renewal: Renew<'a>) -> impl Future<Output = Result<(), StoreError>> + Send + 'a;
    /// Registers the running call held by `token` with the renewer, until the returned
    /// registration is dropped.
    fn hold(&self, tool: &'static Tool, key: &Key, token: Token, started: std::time::Instant) -> Registration<'_>;
    fn complete<'a>(
        &'a self,
        id: RecordId<'a>,
        token: Token,
        completion: Completion<'a>,
        retain: Duration,
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'a;
    fn release<'a>(
        &'a self,
        id: RecordId<'a>,
        token: Token,
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'a;
    fn abandon<'a>(
        &'a self,
        id: RecordId<'a>,
        token: Token,
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'a;
    /// The store as an [`AsyncStore`], for a tool's front end (see [`Serving`](super::Serving)):
    /// `None` for a sync call, which no front end answers for.
    fn as_async(&self) -> Option<&dyn AsyncStore>;
    /// The store as an [`AsyncStore`] whatever the call: for a sync call, one whose futures
    /// are ready at once. For what the driver reads and writes beside the call's own record
    /// (approvals).
    fn any(&self) -> &dyn AsyncStore;
}

/// An async store, for the driver.
pub(crate) struct Async<'s, S: ?Sized> {
    pub(crate) store: &'s S,
}

/// Implements [`Driven`] for a wrapper of `$store` (the field `store`): `$wrap` turns what
/// the store's method returned (`$returned`) into the future; `$hold` registers a running
/// call.
macro_rules! driven {
    ($wrapper:ident, $store:ident, |$returned:ident| $wrap:expr, |$this:ident, $tool:ident, $key:ident, $token:ident, $started:ident| $hold:expr, |$self_:ident| $as_async:expr, |$self_any:ident| $any:expr) => {
        impl<S: $store + ?Sized> Driven for $wrapper<'_, S> {
            fn as_async(&self) -> Option<&dyn AsyncStore> {
                let $self_ = self;
                $as_async
            }
            fn any(&self) -> &dyn AsyncStore {
                let $self_any = self;
                $any
            }
            fn renew<'a>(&'a self, renewal: Renew<'a>) -> impl Future<Output = Result<(), StoreError>> + Send + 'a {
                let $returned = $store::renew(self.store, renewal);
                $wrap
            }
            fn hold(
                &self,
                $tool: &'static Tool,
                $key: &Key,
                $token: Token,
                $started: std::time::Instant,
            ) -> Registration<'_> {
                let $this = self;
                $hold
            }
            fn reserve<'a>(
                &'a self,
                request: Reserve<'a>,
            ) -> impl Future<Output = Result<Reservation, StoreError>> + Send + 'a {
                let $returned = $store::reserve(self.store, request);
                $wrap
            }
            fn reserve_charged<'a>(
                &'a self,
                request: Reserve<'a>,
                charge: Charge<'a>,
            ) -> impl Future<Output = Result<Reservation, StoreError>> + Send + 'a {
                let $returned = $store::reserve_charged(self.store, request, charge);
                $wrap
            }
            fn take_over<'a>(
                &'a self,
                id: RecordId<'a>,
                expired: Token,
                lease: Duration,
            ) -> impl Future<Output = Result<Token, StoreError>> + Send + 'a {
                let $returned = $store::take_over(self.store, id, expired, lease);
                $wrap
            }
            fn complete<'a>(
                &'a self,
                id: RecordId<'a>,
                token: Token,
                completion: Completion<'a>,
                retain: Duration,
            ) -> impl Future<Output = Result<(), StoreError>> + Send + 'a {
                let $returned = $store::complete(self.store, id, token, completion, retain);
                $wrap
            }
            fn release<'a>(
                &'a self,
                id: RecordId<'a>,
                token: Token,
            ) -> impl Future<Output = Result<(), StoreError>> + Send + 'a {
                let $returned = $store::release(self.store, id, token);
                $wrap
            }
            fn abandon<'a>(
                &'a self,
                id: RecordId<'a>,
                token: Token,
            ) -> impl Future<Output = Result<(), StoreError>> + Send + 'a {
                let $returned = $store::abandon(self.store, id, token);
                $wrap
            }
        }
    };
}

// A sync call lends its store to the renewer thread; an async call renews on its own task.
driven!(
    Blocking,
    Store,
    |result| ready(result),
    |this, tool, key, token, started| this.hold(tool, key, token, started),
    |_this| None,
    |this| &this.view
);
driven!(
    Async,
    AsyncStore,
    |future| future,
    |_this, tool, key, _token, started| Registration::new_async(tool, key.clone(), started),
    |this| Some(&this.store),
    |this| &this.store
);
