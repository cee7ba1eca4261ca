//! A small measuring harness for `cargo bench` (no external bench framework).
//!
//! Every comparison runs its two sides in rounds, alternating which side goes first, so
//! that the machine's noise (other processes, CPU frequency, disk cache flushes) hits both
//! alike. Each round takes one sample per side: the mean time per operation over a batch
//! whose setup (arguments, distinct keys) is done before its clock starts. A comparison
//! reports each side's median over the rounds, the ratio of the medians, and the
//! interquartile range of the per-round (paired) ratios as a measure of the noise.

use std::fmt::Write as _;
use std::time::Duration;

/// Times per operation (nanoseconds) of two sides, one sample per round each.
#[derive(Clone, Debug)]
pub struct Pair {
    pub idem: Vec<f64>,
    pub base: Vec<f64>,
}

impl Pair {
    /// Median nanoseconds per operation of the idem side.
    pub fn idem_ns(&self) -> f64 {
        quantile(&self.idem, 0.5)
    }

    /// Median nanoseconds per operation of the baseline side.
    pub fn base_ns(&self) -> f64 {
        quantile(&self.base, 0.5)
    }

    /// Ratio of the medians: idem / baseline.
    pub fn ratio(&self) -> f64 {
        self.idem_ns() / self.base_ns()
    }

    /// The 25th and 75th percentiles of the per-round ratios.
    pub fn paired_iqr(&self) -> (f64, f64) {
        let ratios: Vec<f64> = self.idem.iter().zip(&self.base).map(|(a, b)| a / b).collect();
        (quantile(&ratios, 0.25), quantile(&ratios, 0.75))
    }
}

/// One side of a comparison: runs one batch of `n` operations (setting up untimed what
/// it needs first) and returns the time the operations took.
pub trait Side {
    fn batch(&mut self, n: usize) -> Duration;
}

impl<F: FnMut(usize) -> Duration> Side for F {
    fn batch(&mut self, n: usize) -> Duration {
        self(n)
    }
}

/// How many rounds and operations per batch a comparison runs.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Rounds that are run and thrown away first (warm caches, pools, page cache).
    pub warmup: usize,
    /// Rounds that count.
    pub rounds: usize,
    /// Operations per batch.
    pub batch: usize,
}

/// Runs `idem` and `base` in alternating order, one batch each per round.
pub fn compare(plan: Plan, mut idem: impl Side, mut base: impl Side) -> Pair {
    let mut pair = Pair { idem: Vec::with_capacity(plan.rounds), base: Vec::with_capacity(plan.rounds) };
    for round in 0..plan.warmup + plan.rounds {
        let per_op = |d: Duration| d.as_nanos() as f64 / plan.batch as f64;
        let (a, b) = in_turn(round % 2 == 0, || per_op(idem.batch(plan.batch)), || per_op(base.batch(plan.batch)));
        if round >= plan.warmup {
            pair.idem.push(a);
            pair.base.push(b);
        }
    }
    pair
}

/// Runs both sides, `idem` first when `idem_first`, and returns their results in that
/// order: alternating who goes first spreads the machine's drift over both sides.
pub fn in_turn<A, B>(idem_first: bool, idem: impl FnOnce() -> A, base: impl FnOnce() -> B) -> (A, B) {
    if idem_first {
        let a = idem();
        (a, base())
    } else {
        let b = base();
        (idem(), b)
    }
}

/// The `q` quantile (0..=1) of `values`, interpolating between neighbours.
pub fn quantile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let position = q * (sorted.len() - 1) as f64;
    let (low, high) = (position.floor() as usize, position.ceil() as usize);
    let weight = position - low as f64;
    sorted[low] * (1.0 - weight) + sorted[high] * weight
}

/// A duration in nanoseconds, in the unit that reads best.
pub fn show_ns(ns: f64) -> String {
    if !ns.is_finite() {
        return "-".to_owned();
    }
    if ns >= 100_000.0 {
        format!("{:.0} µs", ns / 1000.0)
    } else if ns >= 10_000.0 {
        format!("{:.1} µs", ns / 1000.0)
    } else if ns >= 1000.0 {
        format!("{:.2} µs", ns / 1000.0)
    } else {
        format!("{ns:.0} ns")
    }
}

/// A markdown table: a header and rows of cells.
#[derive(Clone, Debug, Default)]
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: &[&str]) -> Self {
        Table { header: header.iter().map(|h| (*h).to_owned()).collect(), rows: Vec::new() }
    }

    pub fn push(&mut self, row: Vec<String>) {
        debug_assert_eq!(row.len(), self.header.len());
        self.rows.push(row);
    }

    /// The table as GitHub markdown, columns padded to line up in a terminal.
    pub fn markdown(&self) -> String {
        let widths: Vec<usize> = (0..self.header.len())
            .map(|c| {
                self.rows
                    .iter()
                    .map(|r| r[c].chars().count())
                    .chain([self.header[c].chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: &[String]| {
            let mut out = String::from("|");
            for (cell, width) in cells.iter().zip(&widths) {
                let _ = write!(out, " {cell}{} |", " ".repeat(width - cell.chars().count()));
            }
            out.push('\n');
            out
        };
        let mut out = line(&self.header);
        out.push('|');
        for width in &widths {
            let _ = write!(out, "{}|", "-".repeat(width + 2));
        }
        out.push('\n');
        for row in &self.rows {
            out.push_str(&line(row));
        }
        out
    }
}
