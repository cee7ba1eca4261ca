//! Holding a reservation while the body runs: the body polled beside its renewals, what
//! the body sees of its call: [`progress`] to say how far it got, and
//! [`cancel_requested`] to learn whether it was asked to stop.

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::Poll;

use crate::key::Key;
use crate::scope::Scope;
use crate::store::{RecordId, Renew, Store, Token};

use super::Tool;
use super::call_store::{CallStore, Renews, Reserving};
use super::renewer::{CallRef, Slot};

/// Polls an async call's `body` to its end, running each renewal the renewer asks for
/// (through `slot`) on this task beside it. After each renewal, the tool's front end (if
/// it has one) may look for a request to stop that another worker received.
pub(super) async fn renewing<S, R, L, B>(
    at: &CallStore<'_, S, R, L>,
    slot: &Slot,
    (tool, key): (&'static Tool, &Key),
    token: Token,
    mut body: Pin<&mut B>,
) -> B::Output
where
    S: Store + ?Sized,
    R: Reserving<S>,
    L: Renews,
    B: Future,
{
    let id = RecordId { namespace: tool.namespace, key: key.as_str() };
    let renew = |progress: Option<Arc<str>>| async move {
        let result = at.store.renew(Renew { id, token, lease: tool.lease, progress: progress.as_deref() }).await;
        if result.is_ok()
            && let (Some(serving), true) = (tool.serving, L::ASYNC)
            && serving.renewed(tool, key, token, at.erased()).await
        {
            super::cancel::request(tool.namespace, key.as_str());
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

/// Whether a tool's body runs here (a call made now is made inside it).
pub(super) fn in_body() -> bool {
    CURRENT.with(|current| current.borrow().key.is_some())
}

pub(super) fn current_key() -> Option<Key> {
    CURRENT.with(|current| current.borrow().key.clone())
}

/// The namespace and key of the call whose body runs here.
fn current_call() -> Option<(&'static str, Key)> {
    CURRENT.with(|current| {
        let current = current.borrow();
        current.key.clone().map(|key| (current.namespace, key))
    })
}

/// Whether the running body was asked to stop, e.g. by an MCP client's `tasks/cancel` for
/// its task: a long body checks it between steps and stops as it sees fit. Stopping is the
/// body's decision; nothing is interrupted and the key is never released for it. A body
/// that returns an error releases its key (unless `on_error = keep`), and the task then
/// reads `cancelled`; a body that finishes anyway completes it. A `tasks/cancel` that
/// another worker sharing the store received is seen from the body's next lease renewal
/// on (every third of its lease). `false` outside an idempotent tool's body.
pub fn cancel_requested() -> bool {
    current_call().is_some_and(|(namespace, key)| super::cancel::is_requested(namespace, key.as_str()))
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
