//! In-process counters: how often each tool's calls ended in each outcome. A rising
//! replay or in-progress rate is how users find timeouts set too short.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::{Outcome, Subject};

/// One counter per [`Outcome`], kept in each tool's static description.
#[derive(Debug)]
pub(crate) struct Counters {
    counts: [AtomicU64; Outcome::ALL.len()],
    registered: AtomicBool,
}

impl Counters {
    /// Zero counts; usable in a `static`.
    pub(crate) const fn new() -> Self {
        Counters { counts: [const { AtomicU64::new(0) }; Outcome::ALL.len()], registered: AtomicBool::new(false) }
    }
}

impl Default for Counters {
    fn default() -> Self {
        Self::new()
    }
}

static TOOLS: Mutex<Vec<Subject>> = Mutex::new(Vec::new());

/// Counts one answer of `tool`. The first count registers the tool for [`metrics`].
pub(crate) fn count(tool: Subject, outcome: Outcome) {
    let counters = &tool.instruments.counters;
    counters.counts[outcome as usize].fetch_add(1, Ordering::Relaxed);
    if !counters.registered.load(Ordering::Relaxed) && !counters.registered.swap(true, Ordering::AcqRel) {
        TOOLS.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(tool);
    }
}

/// The counts of one tool since the process started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolMetrics {
    /// The tool's function name.
    pub tool: &'static str,
    /// The tool's record namespace, which tells apart tools of the same name.
    pub namespace: &'static str,
    counts: [u64; Outcome::ALL.len()],
}

impl ToolMetrics {
    /// How many calls ended in `outcome`.
    pub fn count(&self, outcome: Outcome) -> u64 {
        self.counts[outcome as usize]
    }

    /// Every outcome with its count, including zeros, in a stable order.
    pub fn counts(&self) -> impl Iterator<Item = (Outcome, u64)> + '_ {
        Outcome::ALL.iter().map(|&outcome| (outcome, self.count(outcome)))
    }

    /// All calls counted.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
}

/// The counters of every idempotent tool called in this process so far, in the order of
/// their first call. Each answer counts once, under its [`Outcome`]; a call whose caller
/// got TIMEOUT counts once more when its body finishes, under what it came to (so
/// `timed_out` next to `fresh` means the body went on and completed).
pub fn metrics() -> Vec<ToolMetrics> {
    let tools = TOOLS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    tools
        .iter()
        .map(|tool| ToolMetrics {
            tool: tool.name,
            namespace: tool.namespace,
            counts: std::array::from_fn(|i| tool.instruments.counters.counts[i].load(Ordering::Relaxed)),
        })
        .collect()
}
