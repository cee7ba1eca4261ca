//! How the driver reaches a store: [`Driven`], with futures of each store's own type, so
//! that a sync tool's calls never box a future (see [`Blocking`]).

use std::future::{Future, ready};
use std::time::Duration;

use crate::store::{AsyncStore, Completion, RecordId, Reservation, Reserve, Store, StoreError, Token};

/// The store operations the driver awaits, with futures of each store's own type.
pub(crate) trait Driven {
    fn reserve<'a>(&'a self, request: Reserve<'a>)
    -> impl Future<Output = Result<Reservation, StoreError>> + Send + 'a;
    fn take_over<'a>(
        &'a self,
        id: RecordId<'a>,
        expired: Token,
        lease: Duration,
    ) -> impl Future<Output = Result<Token, StoreError>> + Send + 'a;
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
}

/// A sync store seen as an async one whose futures are ready at once, for the driver.
pub(crate) struct Blocking<'s, S: ?Sized>(pub(crate) &'s S);

/// An async store, for the driver.
pub(crate) struct Async<'s, S: ?Sized>(pub(crate) &'s S);

/// Implements [`Driven`] for a wrapper of `$store`: `$wrap` turns what the store's method
/// returned (`$returned`) into the future.
macro_rules! driven {
    ($wrapper:ident, $store:ident, |$returned:ident| $wrap:expr) => {
        impl<S: $store + ?Sized> Driven for $wrapper<'_, S> {
            fn reserve<'a>(
                &'a self,
                request: Reserve<'a>,
            ) -> impl Future<Output = Result<Reservation, StoreError>> + Send + 'a {
                let $returned = $store::reserve(self.0, request);
                $wrap
            }
            fn take_over<'a>(
                &'a self,
                id: RecordId<'a>,
                expired: Token,
                lease: Duration,
            ) -> impl Future<Output = Result<Token, StoreError>> + Send + 'a {
                let $returned = $store::take_over(self.0, id, expired, lease);
                $wrap
            }
            fn complete<'a>(
                &'a self,
                id: RecordId<'a>,
                token: Token,
                completion: Completion<'a>,
                retain: Duration,
            ) -> impl Future<Output = Result<(), StoreError>> + Send + 'a {
                let $returned = $store::complete(self.0, id, token, completion, retain);
                $wrap
            }
            fn release<'a>(
                &'a self,
                id: RecordId<'a>,
                token: Token,
            ) -> impl Future<Output = Result<(), StoreError>> + Send + 'a {
                let $returned = $store::release(self.0, id, token);
                $wrap
            }
            fn abandon<'a>(
                &'a self,
                id: RecordId<'a>,
                token: Token,
            ) -> impl Future<Output = Result<(), StoreError>> + Send + 'a {
                let $returned = $store::abandon(self.0, id, token);
                $wrap
            }
        }
    };
}

driven!(Blocking, Store, |result| ready(result));
driven!(Async, AsyncStore, |future| future);

/// Runs a future that never waits (a sync tool's drive over [`Blocking`]) to its end. It
/// takes the future pinned where it was made, so the large state machine is not moved.
pub(crate) fn ready_now<F: Future>(future: std::pin::Pin<&mut F>) -> F::Output {
    match future.poll(&mut std::task::Context::from_waker(std::task::Waker::noop())) {
        std::task::Poll::Ready(output) => output,
        std::task::Poll::Pending => unreachable!("a sync tool's call waited: every step of it is ready at once"),
    }
}
