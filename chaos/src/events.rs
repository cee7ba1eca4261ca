//! The history: every worker appends what it did, one JSON line per event, to a file of its
//! own (one `write` per line, so a SIGKILL loses at most the line it was writing; the page
//! cache keeps the rest). The checker reads them all after the run.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::ledger::Effect;

/// What a caller was told.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Answer {
    /// The tool's result: a first run or a replay.
    Ok { effect: Effect },
    /// A CONFLICT, with the stored and the requested amount.
    Conflict { stored: serde_json::Value, requested: serde_json::Value },
    /// Any other of idem's answers, by its code (`IN_PROGRESS`, `OUTCOME_UNKNOWN`, ...).
    Refused { code: String },
    /// What `<tool>_status` read.
    Status { status: String, effect: Option<Effect> },
}

impl Answer {
    /// The answer's kind as the report counts it: `ok`, `replayed`, or idem's code.
    pub fn kind(&self) -> String {
        match self {
            Answer::Ok { effect } if effect.replayed => "ok (replayed)".into(),
            Answer::Ok { .. } => "ok (ran)".into(),
            Answer::Conflict { .. } => "CONFLICT".into(),
            Answer::Refused { code } => code.clone(),
            Answer::Status { status, .. } => format!("status: {status}"),
        }
    }
}

/// One line of a worker's history.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A call is about to be made.
    Start { tool: String, action: String, amount: u32, thread: u32 },
    /// The tool's body began (before its provider call).
    Enter { tool: String, action: String, amount: u32, thread: u32 },
    /// A `reconcile` hook answered, after asking the provider at `asked_ms`; `ledger_seen`
    /// is the provider's newest effect id then (effects commit in id order, so an effect
    /// with a larger id was not there yet).
    Hook { tool: String, action: String, answer: String, asked_ms: i64, ledger_seen: i64, thread: u32 },
    /// A call returned (or a status read did).
    Answered { tool: String, action: String, amount: u32, thread: u32, started_ms: i64, answer: Answer },
}

impl Event {
    pub fn action(&self) -> &str {
        match self {
            Event::Start { action, .. }
            | Event::Enter { action, .. }
            | Event::Hook { action, .. }
            | Event::Answered { action, .. } => action,
        }
    }

    pub fn thread(&self) -> u32 {
        match self {
            Event::Start { thread, .. }
            | Event::Enter { thread, .. }
            | Event::Hook { thread, .. }
            | Event::Answered { thread, .. } => *thread,
        }
    }
}

/// An event as the checker reads it: who wrote it, and when.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Line {
    pub pid: u32,
    pub at_ms: i64,
    #[serde(flatten)]
    pub event: Event,
}

/// This process's history file: a worker's, or the run's own for its final calls (one per store).
static LOG: Mutex<Option<File>> = Mutex::new(None);

thread_local! {
    /// The calling thread's number in its worker, for the events its bodies write.
    pub static THREAD: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Opens this process's history file in `dir`.
pub fn open(dir: &Path) {
    let path = dir.join(format!("history-{}.jsonl", std::process::id()));
    let file = OpenOptions::new().create(true).append(true).open(path).expect("the history file opens");
    *LOG.lock().expect("the history is not poisoned") = Some(file);
}

/// Appends `event`, stamped with this process and the time.
pub fn write(event: Event) {
    let line = Line { pid: std::process::id(), at_ms: crate::now_ms(), event };
    let mut text = serde_json::to_string(&line).expect("an event serializes");
    text.push('\n');
    let mut log = LOG.lock().expect("the history is not poisoned");
    let log = log.as_mut().expect("events::open ran");
    log.write_all(text.as_bytes()).expect("the history is written");
}

/// Every line of every history file in `dir`, by time.
pub fn read_all(dir: &Path) -> Vec<Line> {
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(dir).expect("the run's directory") {
        let path = entry.expect("an entry").path();
        let name = path.file_name().and_then(|name| name.to_str()).unwrap_or_default();
        if !(name.starts_with("history-") && name.ends_with(".jsonl")) {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a history file");
        // A process killed mid-write leaves a last line cut short: it was never a whole event.
        lines.extend(text.lines().filter_map(|line| serde_json::from_str::<Line>(line).ok()));
    }
    lines.sort_by_key(|line| line.at_ms);
    lines
}
