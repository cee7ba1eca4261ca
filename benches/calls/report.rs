//! The report: one row per comparison, the throughput rows, the tables printed at the end.

use std::time::Duration;

use super::harness::{Pair, Table, show_ns};
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

#[derive(Clone, Debug, Default)]
pub struct Report {
    pub rows: Vec<Row>,
    pub throughput: Vec<ThroughputRow>,
    /// The PostgreSQL server's durability settings, when the PostgreSQL rows were measured.
    pub postgres: Option<String>,
    /// Groups that could not run here, and say so at the end (PostgreSQL without a server).
    pub skipped: Vec<&'static str>,
    pub wall: Duration,
}

impl Report {
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

    /// Every ratio and rate, for checks that the numbers are real.
    pub fn numbers(&self) -> Vec<f64> {
        let calls = self.rows.iter().flat_map(|r| [r.pair.idem_ns(), r.pair.base_ns(), r.pair.ratio()]);
        let rates = self.throughput.iter().flat_map(|t| [t.idem_per_s, t.hand_per_s, t.idem_vs_one, t.hand_vs_one]);
        calls.chain(rates).collect()
    }

    pub fn targets(&self) -> (usize, usize) {
        let judged: Vec<bool> = self.rows.iter().filter_map(|r| r.target.met(&r.pair)).collect();
        (judged.iter().filter(|met| **met).count(), judged.len())
    }

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
        println!(
            "## Throughput (SQLite, {} keys x {} calls each, shuffled; medians of {}; vs 1 thread: paired per repetition)",
            settings.keys, DUPLICATES, settings.repetitions
        );
        println!();
        print!("{}", self.throughput_table().markdown());
        println!();
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
