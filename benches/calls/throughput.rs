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
use super::report::{FirstCallRow, Report, ThroughputRow};
use super::tool::{AMOUNT, Args, Effects, Invoice, ToolError, Tools};
use super::vfs;
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
            let (idem_result, hand_result) = harness::in_turn((repetition + slot) % 2 == 0, idem_run, hand_run);
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

// ---------------------------------------------------------------------------------------
// First calls only: every call reserves a new key, the path that writes.

/// The thread counts of the first-call runs.
pub const FIRST_CALL_THREADS: [usize; 4] = [1, 2, 4, 8];

/// What one first-call run saw.
#[derive(Clone, Copy, Debug)]
pub struct FirstCallRun {
    pub per_s: f64,
    /// Latency of one call, in nanoseconds.
    pub mean_ns: f64,
    pub p50_ns: f64,
    pub p99_ns: f64,
    pub max_ns: f64,
    /// Disk syncs per call, counted by [`vfs`](super::vfs): all of them, and those of the
    /// database file (checkpoints) alone.
    pub syncs_per_call: f64,
    pub db_syncs_per_call: f64,
    /// The `-wal` file's size once the last call returned, with the store still open.
    pub wal_end: u64,
    /// The furthest any write reached into the WAL during the run.
    pub wal_peak: u64,
}

/// Calls each of `keys` keys once, over `threads` threads that take the next key from a
/// shared counter; `connect` gives each thread its way to call. `wal` is the `-wal` file,
/// measured after the last call while the caller still holds a connection open.
fn drive_first<C, F>(threads: usize, keys: usize, wal: &Path, connect: C) -> FirstCallRun
where
    C: Fn() -> F + Sync,
    F: Fn(usize) -> Result<Invoice, ToolError>,
{
    let next = AtomicUsize::new(0);
    let barrier = Barrier::new(threads + 1);
    vfs::reset_wal_peak();
    let before = vfs::snapshot();
    let (start, latencies) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let call = connect();
                    let mut latencies = Vec::with_capacity(keys);
                    barrier.wait();
                    loop {
                        let key = next.fetch_add(1, Ordering::Relaxed);
                        if key >= keys {
                            break;
                        }
                        let started = Instant::now();
                        let answer = call(key);
                        latencies.push(started.elapsed().as_nanos() as f64);
                        match answer {
                            Ok(invoice) if !invoice.replayed => {}
                            other => panic!("first call on key {key}: {other:?}"),
                        }
                    }
                    latencies
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let latencies: Vec<f64> = workers.into_iter().flat_map(|worker| worker.join().unwrap()).collect();
        (start, latencies)
    });
    let seconds = start.elapsed().as_secs_f64();
    let counts = vfs::snapshot().since(before);
    assert_eq!(latencies.len(), keys, "one call per key");
    let calls = keys as f64;
    FirstCallRun {
        per_s: calls / seconds,
        mean_ns: latencies.iter().sum::<f64>() / calls,
        p50_ns: harness::quantile(&latencies, 0.5),
        p99_ns: harness::quantile(&latencies, 0.99),
        max_ns: latencies.iter().copied().fold(0.0, f64::max),
        syncs_per_call: counts.syncs() as f64 / calls,
        db_syncs_per_call: counts.db_syncs as f64 / calls,
        wal_end: std::fs::metadata(wal).map_or(0, |meta| meta.len()),
        wal_peak: vfs::wal_peak(),
    }
}

fn wal_of(db: &Path) -> std::path::PathBuf {
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    wal.into()
}

/// First calls only, at 1, 2, 4 and 8 threads, idem (one shared `SqliteStore`) and
/// hand-written (one connection per thread) alternating, a fresh file per run; every key's
/// effect must happen exactly once.
pub fn first_calls(settings: &Settings, sync: Synchronous, dir: &Path, report: &mut Report) {
    static RUN: AtomicUsize = AtomicUsize::new(0);
    vfs::install();
    let keys = settings.keys;
    let mut runs = [(); FIRST_CALL_THREADS.len()].map(|()| (Vec::new(), Vec::new()));
    for repetition in 0..settings.repetitions {
        for (slot, &threads) in FIRST_CALL_THREADS.iter().enumerate() {
            let run = RUN.fetch_add(1, Ordering::Relaxed);
            let idem_run = || {
                let path = dir.join(format!("first-idem-{run}.db"));
                let store = SqliteStore::builder(&path).synchronous(sync).open().unwrap();
                let tools = Tools { store, effects: Arc::new(Effects::numbered(keys)) };
                let result = drive_first(threads, keys, &wal_of(&path), || {
                    |key| {
                        let a = args_for(key);
                        tools.send_invoice(a.customer, a.period, a.amount, a.memo)
                    }
                });
                exactly_once(&tools.effects);
                result
            };
            let hand_run = || {
                let path = dir.join(format!("first-hand-{run}.db"));
                let effects = Arc::new(Effects::numbered(keys));
                // Open through the run, as idem's store holds a connection: the last
                // connection to close checkpoints and deletes the WAL.
                let holder = HandSqlite::open(&path, sync, Arc::clone(&effects));
                let result = drive_first(threads, keys, &wal_of(&path), || {
                    let hand = HandSqlite::open(&path, sync, Arc::clone(&effects));
                    move |key| {
                        let a = args_for(key);
                        hand.send_invoice_new(a.customer, a.period, a.amount, a.memo)
                    }
                });
                drop(holder);
                exactly_once(&effects);
                result
            };
            let (idem_result, hand_result) = harness::in_turn((repetition + slot) % 2 == 0, idem_run, hand_run);
            runs[slot].0.push(idem_result);
            runs[slot].1.push(hand_result);
        }
    }
    for (slot, &threads) in FIRST_CALL_THREADS.iter().enumerate() {
        let (idem, hand) = std::mem::take(&mut runs[slot]);
        let one = &report.first_calls.iter().find(|row| row.sync == sync_pragma(sync) && row.threads == 1);
        let idem_one = one.map_or_else(|| idem.clone(), |row| row.idem.clone());
        let hand_one = one.map_or_else(|| hand.clone(), |row| row.hand.clone());
        report.first_calls.push(FirstCallRow { sync: sync_pragma(sync), threads, idem, hand, idem_one, hand_one });
    }
}
