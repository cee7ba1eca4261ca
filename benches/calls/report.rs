//! The report: one row per comparison, the throughput rows, the tables printed at the end.

use std::time::Duration;

use super::harness::{self, Pair, Table, show_ns};
use super::throughput::FirstCallRun;
use super::{DUPLICATES, Settings};

// ---------------------------------------------------------------------------------------
// The report.

/// What a row must meet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Target {
    None,
    /// Median idem / median baseline at most this.
    RatioAtMost(f64),
    /// Median idem time per call at most this many nanoseconds.
    IdemAtMostNs(f64),
}

impl Target {
    fn text(self) -> String {
        match self {
            Target::None => String::new(),
            Target::RatioAtMost(ratio) => format!("≤ {ratio:.2}x"),
            Target::IdemAtMostNs(ns) => format!("idem ≤ {}", show_ns(ns)),
        }
    }

    fn met(self, pair: &Pair) -> Option<bool> {
        match self {
            Target::None => None,
            Target::RatioAtMost(ratio) => Some(pair.ratio() <= ratio),
            Target::IdemAtMostNs(ns) => Some(pair.idem_ns() <= ns),
        }
    }
}

/// One measured comparison.
#[derive(Clone, Debug)]
pub struct Row {
    pub store: &'static str,
    pub call: &'static str,
    pub baseline: &'static str,
    pub pair: Pair,
    pub target: Target,
}

/// One throughput configuration: median calls per second over the repetitions.
#[derive(Clone, Debug)]
pub struct ThroughputRow {
    pub sync: &'static str,
    pub threads: usize,
    pub idem_per_s: f64,
    pub hand_per_s: f64,
    /// Median over the repetitions of this thread count's rate / one thread's rate, taken
    /// within each repetition.
    pub idem_vs_one: f64,
    pub hand_vs_one: f64,
    /// Answers of idem's runs: (fresh, replayed, in progress), summed over repetitions.
    pub idem_answers: (usize, usize, usize),
}

/// One first-call-only configuration: every repetition's run, idem's and hand-written,
/// and the one-thread runs of the same repetitions.
#[derive(Clone, Debug)]
pub struct FirstCallRow {
    pub sync: &'static str,
    pub threads: usize,
    pub idem: Vec<FirstCallRun>,
    pub hand: Vec<FirstCallRun>,
    pub idem_one: Vec<FirstCallRun>,
    pub hand_one: Vec<FirstCallRun>,
}

/// `low-high` of `values`, each shown by `show`; one value alone if they are all equal.
fn range(values: impl Iterator<Item = f64>, show: impl Fn(f64) -> String) -> String {
    let (low, high) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(v), h.max(v)));
    let (low, high) = (show(low), show(high));
    if low == high { low } else { format!("{low}-{high}") }
}

fn median(values: impl Iterator<Item = f64>) -> f64 {
    harness::quantile(&values.collect::<Vec<_>>(), 0.5)
}

fn show_bytes(bytes: f64) -> String {
    if bytes >= 1e6 { format!("{:.2} MB", bytes / 1e6) } else { format!("{:.0} kB", bytes / 1e3) }
}

impl FirstCallRow {
    /// Median over repetitions of idem's p99 / hand-written p99, taken per repetition.
    pub fn p99_ratio(&self) -> f64 {
        median(self.idem.iter().zip(&self.hand).map(|(i, h)| i.p99_ns / h.p99_ns))
    }
}

/// What one run measured; printed as the markdown tables of BENCHMARKS.md.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// One call kind on one store each: idem against its hand-written baseline.
    pub rows: Vec<Row>,
    /// Calls per second of each throughput configuration.
    pub throughput: Vec<ThroughputRow>,
    /// Runs where every call is its key's first, per configuration.
    pub first_calls: Vec<FirstCallRow>,
    /// The PostgreSQL server's durability settings, when the PostgreSQL rows were measured.
    pub postgres: Option<String>,
    /// The Redis server's persistence settings, when its rows ran.
    pub redis: Option<String>,
    /// Groups that could not run here, and say so at the end (PostgreSQL without a server).
    pub skipped: Vec<&'static str>,
    /// How long the whole run took.
    pub wall: Duration,
}

impl Report {
    /// The calls' medians and ratios, with their targets.
    pub fn calls_table(&self) -> Table {
        let mut table =
            Table::new(&["store", "call", "idem", "hand-written", "ratio", "paired IQR", "target", "met", "baseline"]);
        for row in &self.rows {
            let (low, high) = row.pair.paired_iqr();
            table.push(vec![
                row.store.to_owned(),
                row.call.to_owned(),
                show_ns(row.pair.idem_ns()),
                show_ns(row.pair.base_ns()),
                format!("{:.2}x", row.pair.ratio()),
                format!("{low:.2}-{high:.2}"),
                row.target.text(),
                match row.target.met(&row.pair) {
                    None => String::new(),
                    Some(true) => "yes".to_owned(),
                    // The ratio is shown with two decimals: say why 1.50x misses ≤ 1.50x.
                    Some(false) if matches!(row.target, Target::RatioAtMost(_)) => {
                        format!("**no** ({:.3}x)", row.pair.ratio())
                    }
                    Some(false) => "**no**".to_owned(),
                },
                row.baseline.to_owned(),
            ]);
        }
        table
    }

    /// The throughput runs' rates and scaling.
    pub fn throughput_table(&self) -> Table {
        let mut table = Table::new(&[
            "SQLite",
            "threads",
            "idem calls/s",
            "idem vs 1 thread",
            "hand-written calls/s",
            "hand vs 1 thread",
            "idem / hand",
            "idem answers: fresh / replayed / in progress",
        ]);
        for row in &self.throughput {
            table.push(vec![
                row.sync.to_owned(),
                row.threads.to_string(),
                format!("{:.0}", row.idem_per_s),
                format!("{:.2}x", row.idem_vs_one),
                format!("{:.0}", row.hand_per_s),
                format!("{:.2}x", row.hand_vs_one),
                format!("{:.2}x", row.idem_per_s / row.hand_per_s),
                format!("{} / {} / {}", row.idem_answers.0, row.idem_answers.1, row.idem_answers.2),
            ]);
        }
        table
    }

    /// The first-call runs' rates and latencies.
    pub fn first_calls_table(&self) -> Table {
        let mut table = Table::new(&[
            "SQLite",
            "threads",
            "side",
            "calls/s",
            "vs 1 thread",
            "mean",
            "p50",
            "p99",
            "max",
            "syncs / call",
            "of which checkpoint",
            "WAL at end",
            "WAL peak",
        ]);
        for row in &self.first_calls {
            for (side, runs, one) in [("idem", &row.idem, &row.idem_one), ("hand", &row.hand, &row.hand_one)] {
                table.push(vec![
                    row.sync.to_owned(),
                    row.threads.to_string(),
                    side.to_owned(),
                    range(runs.iter().map(|r| r.per_s), |v| format!("{v:.0}")),
                    range(runs.iter().zip(one.iter()).map(|(r, o)| r.per_s / o.per_s), |v| format!("{v:.2}x")),
                    range(runs.iter().map(|r| r.mean_ns), show_ns),
                    range(runs.iter().map(|r| r.p50_ns), show_ns),
                    range(runs.iter().map(|r| r.p99_ns), show_ns),
                    range(runs.iter().map(|r| r.max_ns), show_ns),
                    range(runs.iter().map(|r| r.syncs_per_call), |v| format!("{v:.2}")),
                    range(runs.iter().map(|r| r.db_syncs_per_call), |v| format!("{v:.2}")),
                    range(runs.iter().map(|r| r.wal_end as f64), show_bytes),
                    range(runs.iter().map(|r| r.wal_peak as f64), show_bytes),
                ]);
            }
        }
        table
    }

    /// Issue 16's targets for first calls at 8 threads, at `FULL`: one line each.
    pub fn first_call_targets(&self) -> Vec<String> {
        let Some(row) = self.first_calls.iter().find(|row| row.sync == "FULL" && row.threads == 8) else {
            return Vec::new();
        };
        let yes = |met: bool| if met { "yes" } else { "**no**" };
        let p99 = row.p99_ratio();
        let syncs = median(row.idem.iter().map(|r| r.syncs_per_call));
        let (wal, hand_wal) =
            (median(row.idem.iter().map(|r| r.wal_peak as f64)), median(row.hand.iter().map(|r| r.wal_peak as f64)));
        let idem_rate = median(row.idem.iter().map(|r| r.per_s));
        let hand_rate = median(row.hand.iter().map(|r| r.per_s));
        let scaling = median(row.idem.iter().zip(&row.idem_one).map(|(r, o)| r.per_s / o.per_s));
        vec![
            format!("FULL, 8 threads: idem p99 / hand-written p99 = {p99:.2}x (target ≤ 2x): {}", yes(p99 <= 2.0)),
            format!("FULL, 8 threads: idem syncs per first call = {syncs:.2} (target ≤ 2.1): {}", yes(syncs <= 2.1)),
            // Both WALs start over once a checkpoint has copied 1,000 frames, so each peaks at
            // 1,000 frames plus the last commit's, and idem's commits write a few more pages.
            format!(
                "FULL, 8 threads: idem WAL peak {} vs hand-written {} (target: no larger, give or take one \
                 commit's frames, 1 %): {}",
                show_bytes(wal),
                show_bytes(hand_wal),
                yes(wal <= hand_wal * 1.01)
            ),
            format!(
                "FULL, 8 threads: idem {idem_rate:.0} calls/s = {scaling:.2}x its 1 thread (target ≥ 2.5x): {}; \
                 {:.2}x hand-written (target ≥ 2x): {}",
                yes(scaling >= 2.5),
                idem_rate / hand_rate,
                yes(idem_rate / hand_rate >= 2.0)
            ),
        ]
    }

    /// Every ratio and rate, for checks that the numbers are real.
    pub fn numbers(&self) -> Vec<f64> {
        let calls = self.rows.iter().flat_map(|r| [r.pair.idem_ns(), r.pair.base_ns(), r.pair.ratio()]);
        let rates = self.throughput.iter().flat_map(|t| [t.idem_per_s, t.hand_per_s, t.idem_vs_one, t.hand_vs_one]);
        let first = self
            .first_calls
            .iter()
            .flat_map(|row| row.idem.iter().chain(&row.hand))
            .flat_map(|r| [r.per_s, r.p50_ns, r.p99_ns, r.max_ns, r.syncs_per_call.max(f64::MIN_POSITIVE)]);
        calls.chain(rates).chain(first).collect()
    }

    /// (targets met, targets judged): a row without a target is not judged.
    pub fn targets(&self) -> (usize, usize) {
        let judged: Vec<bool> = self.rows.iter().filter_map(|r| r.target.met(&r.pair)).collect();
        (judged.iter().filter(|met| **met).count(), judged.len())
    }

    /// Every round's time per call of both sides of every row (`IDEM_BENCH_ROUNDS`): a median
    /// that moves between runs is explained by what its rounds did (a slow stretch that hit
    /// one side's rounds and not the other's, a warm-up that did not end).
    fn print_rounds(&self) {
        println!("## Rounds (µs per call in each round, in order; idem, then hand-written)");
        println!();
        let micros = |ns: &[f64]| ns.iter().map(|ns| format!("{:.1}", ns / 1000.0)).collect::<Vec<_>>().join(" ");
        for row in &self.rows {
            println!("{} / {} / idem: {}", row.store, row.call, micros(&row.pair.idem));
            println!("{} / {} / hand: {}", row.store, row.call, micros(&row.pair.base));
        }
        println!();
    }

    /// Every table, the targets and the wall time, on stdout.
    pub fn print(&self, settings: &Settings) {
        println!();
        println!("## Calls (medians per call; ratio = idem / hand-written)");
        println!();
        print!("{}", self.calls_table().markdown());
        println!();
        if let Some(server) = &self.postgres {
            println!("PostgreSQL server: {server}");
            println!();
        }
        if let Some(server) = &self.redis {
            println!("Redis server: {server}");
            println!();
        }
        if settings.show_rounds {
            self.print_rounds();
        }
        println!(
            "## Throughput (SQLite, {} keys x {} calls each, shuffled; medians of {}; vs 1 thread: paired per repetition)",
            settings.keys, DUPLICATES, settings.repetitions
        );
        println!();
        print!("{}", self.throughput_table().markdown());
        println!();
        if !self.first_calls.is_empty() {
            println!(
                "## First calls only (SQLite, {} keys, each called once; ranges over {} repetitions; \
                 syncs counted by a VFS shim, checkpoint = syncs of the database file)",
                settings.keys, settings.repetitions
            );
            println!();
            print!("{}", self.first_calls_table().markdown());
            println!();
            for line in self.first_call_targets() {
                println!("{line}");
            }
            println!();
        }
        let (met, judged) = self.targets();
        println!("targets met: {met} of {judged}; wall time {:.1} s", self.wall.as_secs_f64());
        for group in &self.skipped {
            println!("skipped: {group} (see above)");
        }
        if settings.quick {
            println!("(quick mode: a few iterations each, the numbers mean nothing)");
        }
    }
}
