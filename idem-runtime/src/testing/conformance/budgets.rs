//! Budgets on a store ([`BudgetStore::reserve_charged`], [`Admin::budgets`],
//! [`Admin::adjust_budget`]): the check and the charge are one step however many first
//! calls race, a replay never pays, a released key is refunded, operators' changes are
//! recorded and refused alike.

use std::sync::Barrier;
use std::time::Duration;

use super::charges::{AGES, acquired, charged, charged_for, id, over_budget, window};
use super::waited::Waited;
use crate::store::budget::{Adjustment, BudgetChange, BudgetQuery, BudgetWindow, Charge, UNIT};
use crate::store::{Admin, BudgetStore, Completion, RecordState, Reservation, StoreError};

/// A window of 10 years, which starts later than [`AGES`]' (for the listing's order).
const DECADE: i64 = 10 * 365 * 24 * 3600 * 1000;
const RACERS: usize = 32;
const RACE_LIMIT: usize = 5;
const TRIALS: usize = 5;
const LONG: Duration = Duration::from_secs(3600);

/// Runs every budget check against stores made by `make_store` (each without records, as
/// for [`check_store`](super::check_store)).
pub fn check_budgets<S: BudgetStore + Admin>(make_store: impl Fn() -> S) {
    let make_store = || Waited(make_store());
    racing_first_calls_charge_exactly_the_limit(&make_store());
    racing_first_calls_of_one_key_charge_once(&make_store());
    an_existing_key_charges_nothing_and_over_budget_makes_no_record(&make_store());
    release_refunds_and_settling_keeps_the_charge(&make_store());
    a_take_over_keeps_the_charge_and_its_release_refunds_it(&make_store());
    past_limit_charges_past_the_limit(&make_store());
    amounts_add_exactly_and_the_last_limit_holds(&make_store());
    budgets_and_scopes_are_separate_windows_listed_newest_first(&make_store());
    adjustments_are_recorded_refused_alike_and_fenced(&make_store());
    super::budget_edges::sums_are_exact_at_the_edges_of_the_range(&make_store());
}

/// A count budget's charge of one call against `limit` calls.
fn count<'a>(budget: &'a str, scope: &'a str, limit: i64) -> Charge<'a> {
    Charge { budget, scope, window_ms: AGES, limit: limit * UNIT, amount: UNIT, past_limit: false }
}

fn used(store: &Waited<impl Admin>, budget: &str, scope: &str) -> i64 {
    window(store, budget, scope).map_or(0, |window| window.used)
}

fn racing_first_calls_charge_exactly_the_limit<S: BudgetStore + Admin>(store: &Waited<S>) {
    for trial in 0..TRIALS {
        let budget = format!("race-{trial}");
        let barrier = Barrier::new(RACERS);
        let answers: Vec<Reservation> = std::thread::scope(|scope| {
            let racers: Vec<_> = (0..RACERS)
                .map(|n| {
                    let (barrier, budget) = (&barrier, &budget);
                    scope.spawn(move || {
                        let key = format!("race-{trial}-{n}");
                        barrier.wait();
                        charged(store, &key, count(budget, "", RACE_LIMIT as i64))
                    })
                })
                .collect();
            racers.into_iter().map(|racer| racer.join().expect("a racer panicked")).collect()
        });
        let won = answers.iter().filter(|answer| matches!(answer, Reservation::Acquired { .. })).count();
        let refused = answers.iter().filter(|answer| matches!(answer, Reservation::OverBudget(_))).count();
        assert_eq!(
            (won, refused),
            (RACE_LIMIT, RACERS - RACE_LIMIT),
            "trial {trial}: of {RACERS} racing first calls of distinct keys against a budget of {RACE_LIMIT}, exactly \
             {RACE_LIMIT} must acquire and the others be refused over budget: the check and the charge are one step"
        );
        assert_eq!(
            used(store, &budget, ""),
            RACE_LIMIT as i64 * UNIT,
            "trial {trial}: the window must read what the acquired calls were charged"
        );
    }
}

/// Racing first calls of one key: one acquires and is charged; every other finds its
/// record, whether it read before the winner's record was there or after, and whatever it
/// charged on its way is given back.
fn racing_first_calls_of_one_key_charge_once<S: BudgetStore + Admin>(store: &Waited<S>) {
    for trial in 0..TRIALS {
        let (budget, key) = (format!("one-key-{trial}"), format!("one-key-{trial}"));
        let barrier = Barrier::new(RACERS);
        let answers: Vec<Reservation> = std::thread::scope(|scope| {
            let racers: Vec<_> = (0..RACERS)
                .map(|_| {
                    let (barrier, budget, key) = (&barrier, &budget, &key);
                    scope.spawn(move || {
                        barrier.wait();
                        charged(store, key, count(budget, "", RACERS as i64))
                    })
                })
                .collect();
            racers.into_iter().map(|racer| racer.join().expect("a racer panicked")).collect()
        });
        let won = answers.iter().filter(|answer| matches!(answer, Reservation::Acquired { .. })).count();
        let found = answers.iter().filter(|answer| matches!(answer, Reservation::Existing(_))).count();
        assert_eq!(
            (won, found),
            (1, RACERS - 1),
            "trial {trial}: of {RACERS} racing first calls of one key, exactly one must acquire it and the others \
             find its record: {answers:?}"
        );
        assert_eq!(
            used(store, &budget, ""),
            UNIT,
            "trial {trial}: racing first calls of one key must charge its budget once: a caller that lost the key \
             after charging must be refunded"
        );
    }
}

fn an_existing_key_charges_nothing_and_over_budget_makes_no_record<S: BudgetStore + Admin>(store: &Waited<S>) {
    let token = acquired(store, "first", count("existing", "", 1));
    for _ in 0..2 {
        assert!(
            matches!(charged(store, "first", count("existing", "", 1)), Reservation::Existing(_)),
            "a key in progress must be returned as it is, even when its budget is spent"
        );
    }
    assert_eq!(used(store, "existing", ""), UNIT, "a repeat of a key in progress must charge nothing");
    store.complete(id("first"), token, Completion::Success("1"), LONG).unwrap();
    match charged(store, "first", count("existing", "", 1)) {
        Reservation::Existing(record) => assert_eq!(record.state, RecordState::Completed { result: "1".into() }),
        other => panic!("a completed key must be returned as it is, got {other:?}"),
    }
    assert_eq!(used(store, "existing", ""), UNIT, "a replay of a completed key must charge nothing");

    let _ = charged_for(store, "lapsed", count("lapsed", "", 1), Duration::ZERO);
    match charged(store, "lapsed", count("lapsed", "", 1)) {
        Reservation::Existing(record) => assert!(
            matches!(record.state, RecordState::InProgress { lease_expired: true, .. }),
            "a record whose lease ended must be returned with its lease ended, as reserve returns it: {record:?}"
        ),
        other => panic!("a record whose lease ended must be returned as it is, never charged again: {other:?}"),
    }
    assert_eq!(used(store, "lapsed", ""), UNIT, "a key whose lease ended must charge nothing more");

    let refused = over_budget(store, "second", count("existing", "", 1));
    assert_eq!((refused.used, refused.limit, refused.raised), (UNIT, UNIT, 0), "the refusal must give the window");
    assert_eq!(store.read(id("second")).unwrap(), None, "a reservation refused over budget must make no record");
    assert_eq!(used(store, "existing", ""), UNIT, "a refused reservation must charge nothing");
}

fn release_refunds_and_settling_keeps_the_charge<S: BudgetStore + Admin>(store: &Waited<S>) {
    let budget = count("refunds", "", 1);
    let token = acquired(store, "released", budget);
    over_budget(store, "waiting", budget);
    store.release(id("released"), token).unwrap();
    assert_eq!(used(store, "refunds", ""), 0, "a released key's charge must be refunded");
    acquired(store, "waiting", budget);
    store.resolve_release(id("waiting")).unwrap();
    assert_eq!(used(store, "refunds", ""), 0, "an operator's release (resolve_release) must refund the charge");

    let completed = acquired(store, "completed", budget);
    store.complete(id("completed"), completed, Completion::KeptError("{}"), LONG).unwrap();
    assert_eq!(used(store, "refunds", ""), UNIT, "a settled key must keep its charge: the action may have happened");
    over_budget(store, "after-completed", budget);
    store.resolve_release(id("completed")).expect_err("a settled key is not in progress");
    assert_eq!(used(store, "refunds", ""), UNIT, "a refused resolve_release must refund nothing");

    let abandoned = acquired(store, "abandoned", count("abandons", "", 1));
    store.abandon(id("abandoned"), abandoned).unwrap();
    assert_eq!(used(store, "abandons", ""), UNIT, "an abandoned key must keep its charge: its outcome is unknown");
    over_budget(store, "after-abandoned", count("abandons", "", 1));
}

fn a_take_over_keeps_the_charge_and_its_release_refunds_it<S: BudgetStore + Admin>(store: &Waited<S>) {
    let budget = count("take-over", "", 1);
    let expired = match charged_for(store, "lapsed", budget, Duration::ZERO) {
        Reservation::Acquired { token } => token,
        other => panic!("expected to acquire, got {other:?}"),
    };
    let token = store.take_over(id("lapsed"), expired, LONG).unwrap();
    assert_eq!(used(store, "take-over", ""), UNIT, "a take-over must keep the charge, and charge nothing more");
    over_budget(store, "other", budget);
    store.release(id("lapsed"), token).unwrap();
    assert_eq!(used(store, "take-over", ""), 0, "a key released after a take-over must refund its first charge");
    acquired(store, "other", budget);
}

fn past_limit_charges_past_the_limit<S: BudgetStore + Admin>(store: &Waited<S>) {
    let budget = count("approved", "", 1);
    acquired(store, "within", budget);
    over_budget(store, "over", budget);
    acquired(store, "over", Charge { past_limit: true, ..budget });
    assert_eq!(used(store, "approved", ""), 2 * UNIT, "a charge approved past the limit must be charged");
    over_budget(store, "next", budget);
}

fn amounts_add_exactly_and_the_last_limit_holds<S: BudgetStore + Admin>(store: &Waited<S>) {
    let sum = |amount: i64| Charge {
        budget: "euros",
        scope: "",
        window_ms: AGES,
        limit: 2_500_000,
        amount,
        past_limit: false,
    };
    acquired(store, "a", sum(1_000_001));
    acquired(store, "b", sum(1_000_001));
    over_budget(store, "c", sum(500_000));
    acquired(store, "c", sum(499_998));
    assert_eq!(used(store, "euros", ""), 2_500_000, "amounts in millionths must add exactly, up to the limit itself");
    over_budget(store, "d", sum(1));
    let raised = Charge { limit: 3_000_000, ..sum(500_000) };
    acquired(store, "d", raised);
    let window = window(store, "euros", "").unwrap();
    assert_eq!((window.used, window.limit), (3_000_000, 3_000_000), "the window must take the last charge's limit");
}

fn budgets_and_scopes_are_separate_windows_listed_newest_first<S: BudgetStore + Admin>(store: &Waited<S>) {
    acquired(store, "b1-unscoped", count("listed-1", "", 1));
    acquired(store, "b1-acme", count("listed-1", "acme/", 1));
    acquired(store, "b2-unscoped", count("listed-2", "", 1));
    acquired(store, "b1-decade", Charge { window_ms: DECADE, ..count("listed-1", "", 1) });
    over_budget(store, "b1-unscoped-2", count("listed-1", "", 1));
    over_budget(store, "b1-acme-2", count("listed-1", "acme/", 1));
    acquired(store, "b1-globex", count("listed-1", "globex/", 1));
    let ours = |windows: Vec<BudgetWindow>| -> Vec<(String, String, i64)> {
        windows
            .into_iter()
            .filter(|window| window.budget.starts_with("listed-"))
            .map(|window| (window.budget, window.scope, window.window_ms))
            .collect()
    };
    let all = ours(store.budgets(&BudgetQuery::default()).unwrap());
    let row = |budget: &str, scope: &str, window_ms| (budget.to_owned(), scope.to_owned(), window_ms);
    assert_eq!(
        all,
        [
            row("listed-1", "", DECADE),
            row("listed-1", "", AGES),
            row("listed-1", "acme/", AGES),
            row("listed-1", "globex/", AGES),
            row("listed-2", "", AGES),
        ],
        "each budget, scope and window start is a window of its own, listed newest first, then by budget and scope"
    );
    let one =
        ours(store.budgets(&BudgetQuery { budget: Some("listed-1"), scope: Some("acme/"), current: false }).unwrap());
    assert_eq!(one, [row("listed-1", "acme/", AGES)], "the listing must filter by budget and scope");
    let unscoped = ours(store.budgets(&BudgetQuery { scope: Some(""), ..BudgetQuery::default() }).unwrap());
    assert_eq!(unscoped.len(), 3, "the listing must filter by scope alone: {unscoped:?}");

    // A window of one millisecond has ended by the time it is listed (after a pause that
    // only lets the store's clock move on).
    acquired(store, "instant", Charge { window_ms: 1, ..count("listed-instant", "", 1) });
    std::thread::sleep(Duration::from_millis(5));
    let instant = BudgetQuery { budget: Some("listed-instant"), ..BudgetQuery::default() };
    assert_eq!(store.budgets(&instant).unwrap().len(), 1, "an ended window must still be listed");
    let current = store.budgets(&BudgetQuery { current: true, ..instant }).unwrap();
    assert!(current.is_empty(), "`current` must leave out the windows that ended by the store's clock: {current:?}");
    let current = ours(store.budgets(&BudgetQuery { current: true, ..BudgetQuery::default() }).unwrap());
    assert_eq!(current.len(), 5, "`current` must keep the windows that have not ended: {current:?}");
    store.purge(100).unwrap();
    assert_eq!(store.budgets(&instant).unwrap().len(), 1, "purge must keep windows that ended less than a week ago");
}

fn adjustments_are_recorded_refused_alike_and_fenced<S: BudgetStore + Admin>(store: &Waited<S>) {
    let budget = count("adjusted", "scope/", 1);
    acquired(store, "one", budget);
    let start = over_budget(store, "two", budget).start_ms;
    let clock = store.read(id("one")).unwrap().expect("the record just made").created_at_ms;
    let adjust = |change, by, note| Adjustment { window: ("adjusted", "scope/", start), change, by, note };
    let raised = store.adjust_budget(&adjust(BudgetChange::Raise(UNIT), "alice", "launch day")).unwrap();
    assert_eq!((raised.used, raised.limit, raised.raised), (UNIT, UNIT, UNIT), "a raise must add to the limit");
    let record = raised.adjusted.clone().expect("an adjustment must be recorded with the window");
    assert_eq!((record.by.as_str(), record.change.as_str(), record.note.as_str()), ("alice", "raise 1", "launch day"));
    assert!(record.at_ms >= clock, "an adjustment's time must come from the store's clock: {record:?}, after {clock}");
    assert_eq!(
        window(store, "adjusted", "scope/").as_ref(),
        Some(&raised),
        "adjust must return the window as it stands"
    );
    acquired(store, "two", budget);
    over_budget(store, "three", budget);

    let reset = store.adjust_budget(&adjust(BudgetChange::Reset, "bob", "refunded by hand")).unwrap();
    assert_eq!((reset.used, reset.raised), (0, UNIT), "a reset must set the window's use to 0 and keep raises");
    let record = reset.adjusted.clone().expect("a reset must be recorded");
    assert_eq!((record.by.as_str(), record.change.as_str()), ("bob", "reset (was 2)"));
    acquired(store, "three", budget);

    let before = window(store, "adjusted", "scope/");
    for (change, by, note, why) in [
        (BudgetChange::Raise(UNIT), "", "a note", "without who makes it"),
        (BudgetChange::Raise(UNIT), " ", "a note", "with a blank name"),
        (BudgetChange::Reset, "carol", "", "without a note"),
        (BudgetChange::Raise(0), "carol", "a note", "raising by zero"),
        (BudgetChange::Raise(-UNIT), "carol", "a note", "raising by less than zero"),
    ] {
        match store.adjust_budget(&adjust(change, by, note)) {
            Err(StoreError::Refused(_)) => {}
            other => panic!("an adjustment {why} must be refused, got {other:?}"),
        }
        assert_eq!(window(store, "adjusted", "scope/"), before, "a refused adjustment ({why}) must change nothing");
    }
    for (window, why) in [
        (("never-charged", "scope/", start), "a budget never charged"),
        (("adjusted", "other/", start), "a scope never charged"),
        (("adjusted", "scope/", start + 1), "a window start never charged"),
    ] {
        match store.adjust_budget(&Adjustment { window, change: BudgetChange::Reset, by: "dave", note: "a note" }) {
            Err(StoreError::Fenced) => {}
            other => panic!("adjusting {why} must be fenced, got {other:?}"),
        }
    }
    let untouched = BudgetQuery { budget: Some("never-charged"), ..BudgetQuery::default() };
    assert!(store.budgets(&untouched).unwrap().is_empty(), "a fenced adjustment must create no window");
}
