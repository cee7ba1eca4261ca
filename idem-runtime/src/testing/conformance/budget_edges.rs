//! Budget sums at the edges of the documented range: amounts and limits from 0 to 9e12
//! units (9 × 10^18 millionths, close to `i64::MAX`), and sums past 2^53 millionths, where
//! a double no longer holds every integer. Every store must add, compare and refund them
//! exactly, refuse what does not fit as over budget (never as an outage), and refuse what
//! a window cannot count (past `i64::MAX` millionths) even when a person approved it.

use super::charges::{AGES, acquired, charged, id, over_budget, window};
use super::waited::Waited;
use crate::store::budget::{Adjustment, BudgetChange, Charge, UNIT};
use crate::store::{Admin, BudgetStore, Reservation, StoreError};

/// The most a sum budget allows, and the largest amount a call may charge: 9e12 units.
const MOST: i64 = 9_000_000_000_000 * UNIT;
/// 2^53: the first integer above which doubles skip integers.
const DOUBLES_SKIP: i64 = 1 << 53;

pub(super) fn sums_are_exact_at_the_edges_of_the_range<S: BudgetStore + Admin>(store: &Waited<S>) {
    the_largest_amounts_fill_the_largest_limit_exactly(store);
    sums_past_two_to_the_53_are_compared_exactly(store);
    what_a_window_cannot_count_is_refused(store);
}

fn sum(budget: &str, limit: i64, amount: i64) -> Charge<'_> {
    Charge { budget, scope: "", window_ms: AGES, limit, amount, past_limit: false }
}

fn used(store: &Waited<impl Admin>, budget: &str) -> i64 {
    window(store, budget, "").map_or(0, |window| window.used)
}

fn the_largest_amounts_fill_the_largest_limit_exactly<S: BudgetStore + Admin>(store: &Waited<S>) {
    let edge = |amount| sum("edge-most", MOST, amount);
    acquired(store, "zero", edge(0));
    assert_eq!(used(store, "edge-most"), 0, "a charge of 0 must leave the window at 0");
    acquired(store, "most", edge(MOST));
    assert_eq!(used(store, "edge-most"), MOST, "a charge of 9e12 must fill a limit of 9e12 exactly");
    for (key, amount, what) in [("one-more", 1, "one millionth"), ("most-again", MOST, "9e12")] {
        let refused = over_budget(store, key, edge(amount));
        assert_eq!(
            (refused.used, refused.limit),
            (MOST, MOST),
            "a charge of {what} more than a full window of 9e12 must be refused over budget, with the window"
        );
        assert_eq!(store.read(id(key)).unwrap(), None, "a charge refused over budget must make no record");
    }
    assert_eq!(used(store, "edge-most"), MOST, "refused charges must charge nothing");
}

fn sums_past_two_to_the_53_are_compared_exactly<S: BudgetStore + Admin>(store: &Waited<S>) {
    // The case: 9,000,000,000 then 10,000,000.000001 against 9,010,000,000.
    let limit = 9_010_000_000 * UNIT;
    let billions = |amount| sum("edge-billions", limit, amount);
    acquired(store, "nine-billion", billions(9_000_000_000 * UNIT));
    over_budget(store, "ten-million-and-a-millionth", billions(10_000_000 * UNIT + 1));
    acquired(store, "ten-million", billions(10_000_000 * UNIT));
    assert_eq!(used(store, "edge-billions"), limit, "sums past 2^53 millionths must add exactly");
    over_budget(store, "a-millionth", billions(1));

    // Around 2^53 itself, where 2^53 + 1 is the first integer a double cannot hold.
    let odd = |amount| sum("edge-odd", DOUBLES_SKIP + 1, amount);
    acquired(store, "two-to-the-53", odd(DOUBLES_SKIP));
    acquired(store, "plus-one", odd(1));
    assert_eq!(used(store, "edge-odd"), DOUBLES_SKIP + 1, "2^53 + 1 millionths must be kept exactly");
    over_budget(store, "plus-two", odd(1));
    let token = match charged(store, "past", Charge { past_limit: true, ..odd(2) }) {
        Reservation::Acquired { token } => token,
        other => panic!("a charge approved past the limit must acquire, got {other:?}"),
    };
    assert_eq!(used(store, "edge-odd"), DOUBLES_SKIP + 3, "a charge past the limit must add exactly");
    store.release(id("past"), token).unwrap();
    assert_eq!(used(store, "edge-odd"), DOUBLES_SKIP + 1, "a refund must take off exactly what was charged");
}

fn what_a_window_cannot_count_is_refused<S: BudgetStore + Admin>(store: &Waited<S>) {
    let full = |amount| sum("edge-count", MOST, amount);
    acquired(store, "full", full(MOST));
    let approved = |amount| Charge { past_limit: true, ..full(amount) };
    let refused = over_budget(store, "past-counting", approved(MOST));
    assert_eq!(refused.used, MOST, "a charge a window cannot count must be refused, even approved past its limit");
    assert_eq!(store.read(id("past-counting")).unwrap(), None, "and make no record");
    let room = i64::MAX - MOST;
    acquired(store, "to-the-last", approved(room));
    assert_eq!(used(store, "edge-count"), i64::MAX, "a window counts up to i64::MAX millionths exactly");
    over_budget(store, "one-past", approved(1));

    let start = window(store, "edge-count", "").expect("the window just charged").start_ms;
    let raise =
        |by| Adjustment { window: ("edge-count", "", start), change: BudgetChange::Raise(by), by: "ops", note: "edge" };
    let raised = store.adjust_budget(&raise(MOST)).expect("a raise of 9e12 must be recorded");
    assert_eq!(raised.raised, MOST);
    match store.adjust_budget(&raise(MOST)) {
        Err(StoreError::Refused(_)) => {}
        other => panic!("a raise a window cannot count (past i64::MAX millionths) must be refused, got {other:?}"),
    }
    let after = window(store, "edge-count", "").expect("the window");
    assert_eq!((after.used, after.raised), (i64::MAX, MOST), "a refused raise must change nothing");
}
