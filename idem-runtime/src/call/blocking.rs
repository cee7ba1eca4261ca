//! A sync tool's store, lent to the renewer thread for the one call of a [`with_blocking`]
//! scope: the renewer renews the call's lease through it while the body runs on the
//! call's own thread.

use std::cell::OnceCell;
use std::time::Instant;

use crate::key::Key;
use crate::store::{RecordId, Renew, Store, StoreError, Token, block_on};

use super::Tool;
use super::renewer::{Registered, Registration, RenewNow, Step, reached, register_sync};

/// A sync store lent to the renewer thread for the call of one [`with_blocking`] scope.
pub(crate) struct Blocking<'s, S: ?Sized> {
    store: &'s S,
    /// What the renewer thread renews through, once the call holds its key.
    target: OnceCell<Borrowed<'s, S>>,
    /// The call's place on its thread's list, taken off when the scope ends.
    registered: Registered,
}

/// Runs `f` (a sync tool's call) with `store` ready to be lent to the renewer thread once
/// the call holds its key. Whatever `f` does, the call is off the renewer's list when this
/// returns or unwinds, and no renewal through `store` is in flight: that is what lets the
/// renewer thread borrow `store` and this frame's `Blocking`.
pub(crate) fn with_blocking<'s, S: Store + ?Sized, R>(store: &'s S, f: impl FnOnce(&Blocking<'s, S>) -> R) -> R {
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

/// On the renewer thread, which waits for the store's answer ([`block_on`]).
impl<S: Store + ?Sized> RenewNow for Borrowed<'_, S> {
    fn renew(&self, key: &Key, progress: Option<&str>) -> Result<(), StoreError> {
        let id = RecordId { namespace: self.namespace, key: key.as_str() };
        block_on(self.store.renew(Renew { id, token: self.token, lease: self.lease, progress }))
    }
}

impl<'s, S: Store + ?Sized> Blocking<'s, S> {
    /// Lends the store to the renewer for the call holding `key` under `token`, until the
    /// returned registration or this frame's scope ends, whichever is first.
    pub(super) fn hold(&self, tool: &'static Tool, key: &Key, token: Token, started: Instant) -> Registration<'_> {
        let borrowed = Borrowed { store: self.store, namespace: tool.namespace, token, lease: tool.lease };
        if self.target.set(borrowed).is_err() {
            unreachable!("a call holds its key once");
        }
        reached(Step::Lent);
        let target: &(dyn RenewNow + 's) = self.target.get().expect("just set");
        // SAFETY: `target` lives in this `Blocking`, which lives in `with_blocking`'s frame,
        // and `self.registered` is that frame's: its guard ends `registered` (taking the
        // call off the list, under the list's lock) before the `Blocking` or `'s` ends,
        // whether `f` returns or unwinds, and the guard is never handed out.
        let id = unsafe { register_sync(tool, key.clone(), started, target, &self.registered) };
        reached(Step::Returned);
        Registration::Sync { id, registered: &self.registered }
    }
}

#[cfg(test)]
mod tests {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::time::Duration;

    use super::*;
    use crate::call::renewer::{listed_here, panic_at};
    use crate::call::tests::SENSOR;
    use crate::key::build_key;
    use crate::store::{MemoryStore, Record, RecordState, Reservation, Reserve};

    /// Renewed every 20 ms: a call left listed would soon be renewed through its gone frame.
    static QUICK: Tool = Tool {
        namespace: "blocking-tests::quick",
        site: "call/blocking.rs",
        lease: Duration::from_millis(60),
        instruments: crate::__idem_instruments!("quick"),
        claim: crate::call::Claim::new(),
        json_names: crate::json_names::JsonNames::none(),
        ..SENSOR
    };

    fn lease_until_ms(store: &MemoryStore, id: RecordId<'_>) -> i64 {
        match block_on(store.read(id)) {
            Ok(Some(Record { state: RecordState::InProgress { lease_until_ms, .. }, .. })) => lease_until_ms,
            other => panic!("expected a running record, got {other:?}"),
        }
    }

    #[test]
    fn a_panic_at_any_step_of_registration_leaves_nothing_listed() {
        let store = MemoryStore::new();
        let key = build_key(QUICK.name, QUICK.template, &[&"s1"]).unwrap();
        for step in Step::ALL {
            panic_at(step);
            let unwound = catch_unwind(AssertUnwindSafe(|| {
                with_blocking(&store, |blocking| drop(blocking.hold(&QUICK, &key, Token(1), Instant::now())));
            }));
            let payload = unwound.expect_err("registration panics where it was asked to");
            let message = payload.downcast_ref::<String>().map(String::as_str).unwrap_or("(not a String)");
            assert_eq!(message, format!("injected panic at {step:?}"), "the panic injected at {step:?}");
            assert_eq!(listed_here(), 0, "a panic at {step:?} left the call on the list, pointing into a gone frame");
        }

        // The list still serves after those panics (one of them poisoned its lock): the
        // renewer thread walks it to renew a call registered now, through its live frame.
        let id = RecordId { namespace: QUICK.namespace, key: key.as_str() };
        let Ok(Reservation::Acquired { token }) =
            block_on(store.reserve(Reserve { id, request: "{}", lease: QUICK.lease }))
        else {
            panic!("a fresh key is acquired");
        };
        let reserved_until = lease_until_ms(&store, id);
        with_blocking(&store, |blocking| {
            let _held = blocking.hold(&QUICK, &key, token, Instant::now());
            assert_eq!(listed_here(), 1);
            let deadline = Instant::now() + Duration::from_secs(10);
            while lease_until_ms(&store, id) == reserved_until {
                assert!(Instant::now() < deadline, "the renewer never renewed the call (due after 20 ms)");
                std::thread::sleep(Duration::from_millis(2));
            }
        });
        assert_eq!(listed_here(), 0, "the call is off the list once its scope ended");
    }
}
