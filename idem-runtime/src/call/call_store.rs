//! How one call reaches its store: [`CallStore`], the store itself (its own futures, never
//! boxed: a sync tool's call over a local store allocates nothing for them), how the call
//! makes a charged reservation ([`Reserving`]), and who renews its lease while the body runs
//! ([`Renews`]: the call's own task, or the renewer thread the store is lent to).

use std::future::Future;
use std::time::Instant;

use crate::key::Key;
use crate::store::budget::{Charge, not_kept};
use crate::store::{BudgetStore, DynStore, Reservation, Reserve, Store, StoreError, Token};

use super::Tool;
use super::blocking::Blocking;
use super::renewer::Registration;

/// How a call makes a charged reservation: [`Charged`] for a tool with a budget, over a
/// [`BudgetStore`]; [`Uncharged`] for a tool without one, over any store, which never
/// charges. The expansion passes one, spanned at `store = ...`, so that a budget on a store
/// that keeps none is a compile error there, in the words of `BudgetStore`'s diagnostic.
#[doc(hidden)]
pub trait Reserving<S: ?Sized>: Copy + Send + Sync {
    /// Reserves `request` in `store` and charges `charge` in the same write.
    fn reserve_charged(
        self,
        store: &S,
        request: Reserve<'_>,
        charge: Charge<'_>,
    ) -> impl Future<Output = Result<Reservation, StoreError>> + Send;
}

/// The reservations of a tool without `budget = ...`: none is charged.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct Uncharged;

/// The reservations of a tool with `budget = ...`: its store keeps budgets.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct Charged;

// For every type, so that a `store = ...` that is not a store is reported once, by the
// store's own bound.
impl<S: ?Sized> Reserving<S> for Uncharged {
    fn reserve_charged(
        self,
        _: &S,
        _: Reserve<'_>,
        _: Charge<'_>,
    ) -> impl Future<Output = Result<Reservation, StoreError>> + Send {
        // Only a `Tool` written by hand has a budget and an `Uncharged` reservation.
        std::future::ready(Err(not_kept()))
    }
}

impl<S: BudgetStore + ?Sized> Reserving<S> for Charged {
    fn reserve_charged(
        self,
        store: &S,
        request: Reserve<'_>,
        charge: Charge<'_>,
    ) -> impl Future<Output = Result<Reservation, StoreError>> + Send {
        store.reserve_charged(request, charge)
    }
}

/// Who renews a call's lease while its body runs.
pub(crate) trait Renews {
    /// Registers the running call held by `token` with the renewer, until the returned
    /// registration is dropped.
    fn hold(&self, tool: &'static Tool, key: &Key, token: Token, started: Instant) -> Registration<'_>;
    /// Whether a front end may answer for the call: only for an async call.
    const ASYNC: bool;
}

/// An async call renews its lease on its own task, beside the body.
pub(crate) struct OwnTask;

impl Renews for OwnTask {
    fn hold(&self, tool: &'static Tool, key: &Key, _: Token, started: Instant) -> Registration<'_> {
        Registration::new_async(tool, key.clone(), started)
    }
    const ASYNC: bool = true;
}

/// A sync call lends its store to the renewer thread while the body runs on its own.
impl<S: Store + ?Sized> Renews for &Blocking<'_, S> {
    fn hold(&self, tool: &'static Tool, key: &Key, token: Token, started: Instant) -> Registration<'_> {
        Blocking::hold(self, tool, key, token, started)
    }
    const ASYNC: bool = false;
}

/// A call's store, as the driver reaches it.
pub(crate) struct CallStore<'s, S: ?Sized, R, L> {
    pub(crate) store: &'s S,
    pub(crate) reserving: R,
    pub(crate) renews: L,
}

impl<S: Store + ?Sized, R: Reserving<S>, L: Renews> CallStore<'_, S, R, L> {
    /// Reserves the call's key, charging `charge` when the tool has a budget.
    pub(crate) async fn reserve(
        &self,
        request: Reserve<'_>,
        charge: Option<Charge<'_>>,
    ) -> Result<Reservation, StoreError> {
        match charge {
            None => self.store.reserve(request).await,
            Some(charge) => self.reserving.reserve_charged(self.store, request, charge).await,
        }
    }

    /// Registers the running call held by `token` with the renewer, until the returned
    /// registration is dropped.
    pub(crate) fn hold(&self, tool: &'static Tool, key: &Key, token: Token, started: Instant) -> Registration<'_> {
        self.renews.hold(tool, key, token, started)
    }

    /// The store erased: for what the driver reads and writes beside the call's own record
    /// (approvals), and for a front end (an async call's only, [`Renews::ASYNC`]).
    pub(crate) fn erased(&self) -> &dyn DynStore {
        &self.store
    }
}
