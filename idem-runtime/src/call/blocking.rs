//! A sync tool's store, lent to the renewer thread for the one call of a [`with_blocking`]
//! scope: the renewer renews the call's lease through it while the body runs on the
//! call's own thread.

use std::cell::OnceCell;
use std::time::Instant;

use crate::key::Key;
use crate::store::{RecordId, Renew, Store, StoreError, Token};

use super::Tool;
use super::renewer::{Registered, Registration, RenewNow, register_sync};

/// A sync store lent to the renewer thread for the call of one [`with_blocking`] scope.
pub(crate) struct Blocking<'s, S: ?Sized> {
    pub(super) store: &'s S,
    /// What the renewer thread renews through, once the call holds its key.
    target: OnceCell<Borrowed<'s, S>>,
    /// The call's place on its thread's list, taken off when the scope ends.
    registered: Registered,
}

/// Runs `f` with `store` seen as a [`Driven`](super::driven::Driven) store whose futures
/// are ready at once (a sync tool's call). Whatever `f` does, the call is off the
/// renewer's list when this returns or unwinds, and no renewal through `store` is in
/// flight: that is what lets the renewer thread borrow `store` and this frame's `Blocking`.
pub(crate) fn with_blocking<S: Store + ?Sized, R>(store: &S, f: impl FnOnce(&Blocking<'_, S>) -> R) -> R {
    struct EndRenewal<'b, 's, S: ?Sized>(&'b Blocking<'s, S>);
    impl<S: ?Sized> Drop for EndRenewal<'_, '_, S> {
        fn drop(&mut self) {
            self.0.registered.end();
        }
    }
    let blocking = Blocking { store, target: OnceCell::new(), registered: Registered::new() };
    let _end = EndRenewal(&blocking);
    f(&blocking)
}

/// Renews one sync call's reservation through the store it borrows.
struct Borrowed<'s, S: ?Sized> {
    store: &'s S,
    namespace: &'static str,
    token: Token,
    lease: std::time::Duration,
}

impl<S: Store + ?Sized> RenewNow for Borrowed<'_, S> {
    fn renew(&self, key: &Key, progress: Option<&str>) -> Result<(), StoreError> {
        let id = RecordId { namespace: self.namespace, key: key.as_str() };
        self.store.renew(Renew { id, token: self.token, lease: self.lease, progress })
    }
}

impl<'s, S: Store + ?Sized> Blocking<'s, S> {
    pub(super) fn hold(&self, tool: &'static Tool, key: &Key, token: Token, started: Instant) -> Registration<'_> {
        let borrowed = Borrowed { store: self.store, namespace: tool.namespace, token, lease: tool.lease };
        if self.target.set(borrowed).is_err() {
            unreachable!("a call holds its key once");
        }
        let target: &(dyn RenewNow + 's) = self.target.get().expect("just set");
        // SAFETY: only the lifetime is erased. The renewer dereferences `target` only while
        // the call is on its thread's list, under the list's lock; `with_blocking` takes it
        // off (under that lock) before this frame's `Blocking` or `'s` can end, whether `f`
        // returns or unwinds, and its guard is never handed out.
        let target: *const (dyn RenewNow + 's) = target;
        let target: *const (dyn RenewNow + 'static) = unsafe { std::mem::transmute(target) };
        let id = register_sync(tool, key.clone(), started, target);
        self.registered.set(id);
        Registration::Sync { id, registered: &self.registered }
    }
}
