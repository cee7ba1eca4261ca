//! `IDEM_BENCH_PROFILE`: one kind of call on one side only, for a profiler.

use std::hint::black_box;
use std::sync::Arc;

use idem::store::{BudgetStore, Synchronous};
use idem::{MemoryStore, SqliteStore};

use super::hand::{HandMemory, HandSqlite};
use super::tool::{
    AMOUNT, Args, Invoice, OTHER_AMOUNT, ToolError, Tools, cycling, fresh, fresh_customers, reserve_in_progress,
};

/// The calls that [`profile`] makes, in a function of their own so that a profiler can
/// count only them: `valgrind --tool=callgrind --toggle-collect='*profiled_calls*'`.
#[inline(never)]
fn profiled_calls(args: Vec<Args>, call: &dyn Fn(Args) -> Result<Invoice, ToolError>) -> usize {
    args.into_iter().map(|a| black_box(call(a)).is_ok() as usize).sum()
}

/// `IDEM_BENCH_PROFILE=<store>-<call>-<side>[:n]`: makes `n` (default 10,000) calls of one
/// bench on one side only, for a profiler. `store`: `memory`, `full`, `normal`, or `http`
/// (the HTTP layer's requests: `first` and `replay` only); `call`: `first`, `replay`, `busy`
/// (in progress), `conflict`; `side`: `idem`, `hand`, or `budgeted` (the idem tool with a
/// budget; for `http`: `idem`, `hand`, or `json`, the hand-written layer keeping JSON records).
pub fn profile(spec: &str) {
    let (name, n) = spec.split_once(':').map_or((spec, 10_000), |(name, n)| (name, n.parse().unwrap()));
    let parts: Vec<&str> = name.split('-').collect();
    let [store, call, side] = parts[..] else {
        panic!("IDEM_BENCH_PROFILE={spec}: expected <store>-<call>-<side>[:n]")
    };
    if store == "http" {
        return http(name, call, side, n);
    }
    let dir = tempfile::tempdir().unwrap();
    let pool: Vec<String> = fresh_customers(n.min(1000)).into_iter().map(|a| a.customer).collect();
    let busy: Vec<String> = (0..n.min(1000)).map(|i| format!("busy{i}")).collect();
    let args = match call {
        "first" => fresh_customers(n),
        "replay" | "busy" => cycling(if call == "replay" { &pool } else { &busy }, &mut 0, n, AMOUNT),
        "conflict" => cycling(&pool, &mut 0, n, OTHER_AMOUNT),
        other => panic!("unknown call {other}"),
    };
    let sync = if store == "full" { Synchronous::Full } else { Synchronous::Normal };
    let seed = |call: &dyn Fn(Args) -> Result<Invoice, ToolError>, reserve: &dyn Fn(&str)| {
        pool.iter().for_each(|c| fresh(&call(Args::new(c.clone(), AMOUNT))));
        busy.iter().for_each(|c| reserve(c));
    };
    let ok = match (store, side) {
        ("memory" | "full" | "normal", "idem" | "budgeted") => {
            let budgeted = side == "budgeted";
            match store {
                "memory" => idem_side(Tools::new(MemoryStore::new()), budgeted, args, &seed),
                _ => {
                    let store = SqliteStore::builder(dir.path().join("idem.db")).synchronous(sync).open().unwrap();
                    idem_side(Tools::new(store), budgeted, args, &seed)
                }
            }
        }
        ("memory", "hand") => {
            let hand = HandMemory::new();
            let call = |a: Args| hand.send_invoice(a.customer, a.period, a.amount, a.memo);
            seed(&call, &|c| hand.reserve_only(c));
            profiled_calls(args, &call)
        }
        ("full" | "normal", "hand") => {
            let hand = HandSqlite::open(&dir.path().join("hand.db"), sync, Arc::default());
            let new = |a: Args| hand.send_invoice_new(a.customer, a.period, a.amount, a.memo);
            let repeat = |a: Args| hand.send_invoice(a.customer, a.period, a.amount, a.memo);
            seed(&new, &|c| hand.reserve_only(c));
            profiled_calls(args, if call == "first" { &new } else { &repeat })
        }
        other => panic!("unknown store and side {other:?}"),
    };
    println!("{name}: {n} calls, {ok} Ok");
}

/// The HTTP layer's requests, for [`profile`].
#[cfg(feature = "http")]
fn http(name: &str, call: &str, side: &str, n: usize) {
    let ok = super::http::profile(call, side, n);
    println!("{name}: {n} requests, {ok} answered as expected");
}

#[cfg(not(feature = "http"))]
fn http(name: &str, _: &str, _: &str, _: usize) {
    panic!("IDEM_BENCH_PROFILE={name}: the HTTP layer's bench needs `--features http`")
}

/// What [`profile`] seeds a side with: its calls, and how it reserves a key without running.
type Seed<'a> = dyn Fn(&dyn Fn(Args) -> Result<Invoice, ToolError>, &dyn Fn(&str)) + 'a;

/// The idem tool's calls on `tools`' store, with its budget when `budgeted`.
fn idem_side<S: BudgetStore>(tools: Tools<S>, budgeted: bool, args: Vec<Args>, seed: &Seed<'_>) -> usize {
    let call = |a: Args| match budgeted {
        true => tools.send_invoice_budgeted(a.customer, a.period, a.amount, a.memo),
        false => tools.send_invoice(a.customer, a.period, a.amount, a.memo),
    };
    seed(&call, &|c| reserve_in_progress(&tools.store, c));
    profiled_calls(args, &call)
}
