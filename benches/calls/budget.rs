//! What a budget (`budget = ...`) costs a call: the same tool with and without one, on the
//! same store, interleaved in one run. The baseline is idem itself: the ratio is the
//! budget's own cost.

use std::path::Path;

use idem::store::Synchronous;
use idem::{MemoryStore, SqliteStore};

use super::Settings;
use super::harness::compare;
use super::report::{Report, Row, Target};
use super::tool::{AMOUNT, PERIOD, Tools, cycling, fresh, fresh_customers, replayed, timed};

pub fn budget(settings: &Settings, dir: &Path, report: &mut Report) {
    let memory = Tools::new(MemoryStore::new());
    rows(settings, "memory", &memory, settings.plan(2000), report);
    let store = SqliteStore::builder(dir.join("idem-budget.db")).synchronous(Synchronous::Normal).open().unwrap();
    let sqlite = Tools::new(store);
    rows(settings, "SQLite NORMAL", &sqlite, settings.plan(1000), report);
}

fn rows<S: idem::store::BudgetStore>(
    settings: &Settings,
    store: &'static str,
    tools: &Tools<S>,
    plan: super::harness::Plan,
    report: &mut Report,
) {
    let baseline = "idem, the same tool without a budget";
    let before = tools.effects.total();
    let (mut with, mut without) = (0u64, 0u64);
    let first = compare(
        plan,
        |n| {
            with += n as u64;
            timed(fresh_customers(n), |c, p, a, m| tools.send_invoice_budgeted(c, p, a, m), fresh)
        },
        |n| {
            without += n as u64;
            timed(fresh_customers(n), |c, p, a, m| tools.send_invoice(c, p, a, m), fresh)
        },
    );
    assert_eq!(tools.effects.total() - before, with + without, "every first call runs its body once");
    report.rows.push(Row { store, call: "first call with a budget", baseline, pair: first, target: Target::None });

    // Replays charge nothing: they should cost what they cost without a budget.
    let pool: Vec<String> = fresh_customers(settings.pool()).into_iter().map(|a| a.customer).collect();
    for customer in &pool {
        fresh(&tools.send_invoice_budgeted(customer.clone(), PERIOD.into(), AMOUNT, String::new()));
        fresh(&tools.send_invoice(customer.clone(), PERIOD.into(), AMOUNT, String::new()));
    }
    let settled = tools.effects.total();
    let (mut a, mut b) = (0, 0);
    let replay = compare(
        settings.plan(2000),
        |n| timed(cycling(&pool, &mut a, n, AMOUNT), |c, p, a, m| tools.send_invoice_budgeted(c, p, a, m), replayed),
        |n| timed(cycling(&pool, &mut b, n, AMOUNT), |c, p, a, m| tools.send_invoice(c, p, a, m), replayed),
    );
    assert_eq!(tools.effects.total(), settled, "replays must not run the body");
    report.rows.push(Row { store, call: "replay with a budget", baseline, pair: replay, target: Target::None });
}
