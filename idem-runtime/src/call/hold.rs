//! Holding a reservation while the body runs: its registration with the renewer, the
//! body polled beside its renewals, and [`progress`] for the body to say how far it got.

use std::cell::OnceCell;
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;

use crate::key::Key;
use crate::scope::Scope;
use crate::store::{RecordId, Renew, Store, StoreError, Token};

use super::Tool;
use super::driven::Driven;
use super::renewer::{CallRef, Registered, Registration, RenewNow, Slot, register_sync};

/// A sync store lent to the renewer thread for the call of one [`with_blocking`] scope.
pub(crate) struct Blocking<'s, S: ?Sized> {
    pub(super) store: &'s S,
    /// What the renewer thread renews through, once the call holds its key.
    target: OnceCell<Borrowed<'s, S>>,
    /// The call's place on its thread's list, taken off when the scope ends.
    registered: Registered,
}

/// Runs `f` with `store` seen as a [`Driven`] store whose futures are ready at once (a
/// sync tool's call). Whatever `f` does, the call is off the renewer's list when this
/// returns or unwinds, and no renewal through `store` is in flight: that is what lets the
/// renewer thread borrow `store` and this frame's `Blocking`.
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

/// Polls an async call's `body` to its end, running each renewal the renewer asks for
/// (through `slot`) on this task beside it. After each renewal, the tool's front end (if
/// it has one) may look for a request to stop that another worker received.
pub(super) async fn renewing<S, B>(
    store: &S,
    slot: &Slot,
    (tool, key): (&'static Tool, &Key),
    token: Token,
    body: B,
) -> B::Output
where
    S: Driven,
    B: Future,
{
    let mut body = pin!(body);
    let id = RecordId { namespace: tool.namespace, key: key.as_str() };
    let renew = |progress: Option<Arc<str>>| async move {
        let result = store.renew(Renew { id, token, lease: tool.lease, progress: progress.as_deref() }).await;
        if result.is_ok()
            && let (Some(serving), Some(store)) = (tool.serving, store.as_async())
        {
            serving.renewed(tool, key, token, store).await;
        }
        (result, progress)
    };
    let mut renewal = pin!(None);
    poll_fn(|cx| {
        if let Poll::Ready(output) = body.as_mut().poll(cx) {
            return Poll::Ready(output);
        }
        if renewal.is_none()
            && let Some(progress) = slot.take_due(cx.waker())
        {
            renewal.set(Some(renew(progress)));
        }
        if let Some(pending) = renewal.as_mut().as_pin_mut()
            && let Poll::Ready((result, sent)) = pending.poll(cx)
        {
            renewal.set(None);
            slot.renewed(result, sent);
        }
        Poll::Pending
    })
    .await
}

thread_local!(static CURRENT: std::cell::RefCell<Current> = const { std::cell::RefCell::new(Current { namespace: "", key: None, slot: None }) });

/// What a running body can see of its call: its record, and its slot for [`progress`].
pub(super) struct Current {
    pub(super) namespace: &'static str,
    pub(super) key: Option<Key>,
    pub(super) slot: Option<CallRef>,
}

impl Scope for Current {
    type Saved = Current;
    fn enter(&mut self) -> Current {
        let mine = Current { namespace: self.namespace, key: self.key.take(), slot: self.slot.take() };
        CURRENT.with(|current| current.replace(mine))
    }
    fn exit(&mut self, saved: Current) {
        *self = CURRENT.with(|current| current.replace(saved));
    }
}

pub(super) fn current_key() -> Option<Key> {
    CURRENT.with(|current| current.borrow().key.clone())
}

/// The namespace and key of the call whose body runs here.
pub(super) fn current_call() -> Option<(&'static str, Key)> {
    CURRENT.with(|current| {
        let current = current.borrow();
        current.key.clone().map(|key| (current.namespace, key))
    })
}

/// Reports how far the running body got, e.g. `idem::progress("rendering the PDF")`: the
/// message is kept with the call's reservation, so `<tool>_status` and every IN_PROGRESS
/// answer to a repeat show it. It is written with a lease renewal about a second later,
/// at most once a second, so a body may report progress as often as it likes; only the
/// latest message is kept, cut to 256 bytes. Returns `false`, and does nothing, outside
/// an idempotent tool's body.
pub fn progress(message: impl AsRef<str>) -> bool {
    CURRENT.with(|current| match &current.borrow().slot {
        Some(slot) => {
            slot.set_progress(message.as_ref());
            true
        }
        None => false,
    })
}
