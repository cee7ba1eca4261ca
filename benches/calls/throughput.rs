//! The throughput bench: 1, 2 and 8 threads over 1,000 keys on one SQLite store, every
//! key's effect counted.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Instant;

use idem::store::Synchronous;
use idem::{ErrorCode, SqliteStore};

use super::hand::{HandSqlite, sync_pragma};
use super::harness;
use super::report::{Report, ThroughputRow};
use super::tool::{AMOUNT, Args, Effects, Invoice, ToolError, Tools};
use super::{DUPLICATES, Settings};

/// A small deterministic shuffle (xorshift), so runs are comparable without a rand crate.
fn shuffled(mut items: Vec<usize>, seed: u64) -> Vec<usize> {
    let mut state = seed | 1;
    for i in (1..items.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        items.swap(i, (state % (i as u64 + 1)) as usize);
    }
    items
}

/// What one throughput run saw.
struct Run {
    seconds: f64,
    answers: (usize, usize, usize),
}

/// Makes every call of the shuffled list (each of `keys` keys [`DUPLICATES`] times) over
/// `threads` threads; each thread makes its calls with what `connect` gives it.
fn drive<C, F>(threads: usize, keys: usize, connect: C) -> Run
where
    C: Fn() -> F + Sync,
    F: Fn(usize) -> Result<Invoice, ToolError>,
{
    let order = shuffled((0..keys * DUPLICATES).map(|i| i % keys).collect(), 0x9e37_79b9_7f4a_7c15);
    let next = AtomicUsize::new(0);
    let barrier = Barrier::new(threads + 1);
    let (fresh, replayed, in_progress) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0));
    let start = std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let call = connect();
                barrier.wait();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&key) = order.get(i) else { break };
                    let counter = match call(key) {
                        Ok(invoice) if invoice.replayed => &replayed,
                        Ok(_) => &fresh,
                        Err(error) if error.is(ErrorCode::InProgress) => &in_progress,
                        Err(error) => panic!("call {i} (key {key}) failed: {error:?}"),
                    };
                    counter.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        barrier.wait();
        // The scope joins every thread before it returns; the clock is read after that.
        Instant::now()
    });
    let seconds = start.elapsed().as_secs_f64();
    let answers = (fresh.into_inner(), replayed.into_inner(), in_progress.into_inner());
    assert_eq!(answers.0 + answers.1 + answers.2, keys * DUPLICATES);
    assert_eq!(answers.0, keys, "one fresh call per key");
    Run { seconds, answers }
}

/// The arguments of a call for key number `key`: the memo carries the number so that the
/// body counts its effect on that key.
fn args_for(key: usize) -> Args {
    Args { memo: key.to_string(), ..Args::new(format!("Acme {key}"), AMOUNT) }
}

fn exactly_once(effects: &Effects) {
    for (key, count) in effects.per_key.iter().enumerate() {
        assert_eq!(count.load(Ordering::SeqCst), 1, "key {key} must have exactly one effect");
    }
}

pub fn throughput(settings: &Settings, sync: Synchronous, dir: &Path, report: &mut Report) {
    const THREADS: [usize; 3] = [1, 2, 8];
    static RUN: AtomicUsize = AtomicUsize::new(0);
    let keys = settings.keys;
    let calls = (keys * DUPLICATES) as f64;
    // Per thread count: calls per second of every repetition, idem's and hand-written.
    let mut rates = [(); THREADS.len()].map(|()| (Vec::new(), Vec::new()));
    let mut answers = [(0, 0, 0); THREADS.len()];
    // Each repetition runs every thread count, so that a thread count's ratio to one thread
    // is taken between runs made moments apart.
    for repetition in 0..settings.repetitions {
        for (slot, &threads) in THREADS.iter().enumerate() {
            let run = RUN.fetch_add(1, Ordering::Relaxed);
            let idem_run = || {
                let path = dir.join(format!("throughput-idem-{run}.db"));
                let store = SqliteStore::builder(path).synchronous(sync).open().unwrap();
                let tools = Tools { store, effects: Arc::new(Effects::numbered(keys)) };
                let result = drive(threads, keys, || {
                    |key| {
                        let a = args_for(key);
                        tools.send_invoice(a.customer, a.period, a.amount, a.memo)
                    }
                });
                exactly_once(&tools.effects);
                result
            };
            let hand_run = || {
                let path = dir.join(format!("throughput-hand-{run}.db"));
                let effects = Arc::new(Effects::numbered(keys));
                drop(HandSqlite::open(&path, sync, Arc::clone(&effects)));
                let result = drive(threads, keys, || {
                    // One connection per thread, as hand-written code would open.
                    let hand = HandSqlite::open(&path, sync, Arc::clone(&effects));
                    move |key| {
                        let a = args_for(key);
                        hand.send_invoice(a.customer, a.period, a.amount, a.memo)
                    }
                });
                exactly_once(&effects);
                result
            };
            let (idem_result, hand_result) = if (repetition + slot) % 2 == 0 {
                let i = idem_run();
                (i, hand_run())
            } else {
                let h = hand_run();
                (idem_run(), h)
            };
            rates[slot].0.push(calls / idem_result.seconds);
            rates[slot].1.push(calls / hand_result.seconds);
            let total = &mut answers[slot];
            (total.0, total.1, total.2) =
                (total.0 + idem_result.answers.0, total.1 + idem_result.answers.1, total.2 + idem_result.answers.2);
        }
    }
    let paired = |these: &[f64], one: &[f64]| {
        let ratios: Vec<f64> = these.iter().zip(one).map(|(n, one)| n / one).collect();
        harness::quantile(&ratios, 0.5)
    };
    for (slot, &threads) in THREADS.iter().enumerate() {
        report.throughput.push(ThroughputRow {
            sync: sync_pragma(sync),
            threads,
            idem_per_s: harness::quantile(&rates[slot].0, 0.5),
            hand_per_s: harness::quantile(&rates[slot].1, 0.5),
            idem_vs_one: paired(&rates[slot].0, &rates[0].0),
            hand_vs_one: paired(&rates[slot].1, &rates[0].1),
            idem_answers: answers[slot],
        });
    }
}
