//! What the budget checks ask a store: charged reservations that must acquire or be
//! refused, and the one window of a budget.

use std::time::Duration;

use super::waited::Waited;
use crate::store::budget::{BudgetQuery, BudgetWindow, Charge};
use crate::store::{Admin, BudgetStore, RecordId, Reservation, Reserve, Token};

const NS: &str = "idem-conformance-budgets";
/// A window of 1000 years: it starts at the epoch and holds every charge of these checks,
/// so no check ever sees a window end under it.
pub(super) const AGES: i64 = 1000 * 365 * 24 * 3600 * 1000;
const LONG: Duration = Duration::from_secs(3600);

pub(super) fn id(key: &str) -> RecordId<'_> {
    RecordId { namespace: NS, key }
}

pub(super) fn charged(store: &Waited<impl BudgetStore>, key: &str, charge: Charge<'_>) -> Reservation {
    charged_for(store, key, charge, LONG)
}

pub(super) fn charged_for(
    store: &Waited<impl BudgetStore>,
    key: &str,
    charge: Charge<'_>,
    lease: Duration,
) -> Reservation {
    let request = Reserve { id: id(key), request: "{}", lease };
    store.reserve_charged(request, charge).unwrap_or_else(|e| panic!("reserve_charged of {key} failed: {e}"))
}

pub(super) fn acquired(store: &Waited<impl BudgetStore>, key: &str, charge: Charge<'_>) -> Token {
    match charged(store, key, charge) {
        Reservation::Acquired { token } => token,
        other => panic!("a charge that fits its window must acquire {key}, got {other:?}"),
    }
}

pub(super) fn over_budget(store: &Waited<impl BudgetStore>, key: &str, charge: Charge<'_>) -> BudgetWindow {
    match charged(store, key, charge) {
        Reservation::OverBudget(window) => window,
        other => panic!("a charge that would pass its window's limit must be refused for {key}, got {other:?}"),
    }
}

/// The one window of `budget` and `scope` (none: `None`).
pub(super) fn window(store: &Waited<impl Admin>, budget: &str, scope: &str) -> Option<BudgetWindow> {
    let query = BudgetQuery { budget: Some(budget), scope: Some(scope), current: false };
    let mut windows = store.budgets(&query).unwrap_or_else(|e| panic!("listing the budget {budget} failed: {e}"));
    assert!(windows.len() <= 1, "one window per budget, scope and start: {windows:?}");
    windows.pop()
}
