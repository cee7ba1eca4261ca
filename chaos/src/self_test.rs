//! `idem-chaos --self-test`: the checker against made-up histories, one broken promise each,
//! so that every check is shown to fire (and a clean history to pass). The broken variant
//! (`--lying-hook`) shows the same for a real run's second effects.

use std::path::PathBuf;

use crate::checker::{self, LIMIT_HOOK};
use crate::events::{Answer, Event, Line};
use crate::ledger::{Effect, Ledger};

/// The run's own pid in the made-up histories: its calls are the final ones.
const FINAL: u32 = 1;

/// A worker's event. The worker is this process, which also writes the made-up ledger's
/// effects (at the current time, after every event here but the last answers).
fn line(at_ms: i64, event: Event) -> Line {
    Line { pid: std::process::id(), at_ms, event }
}

fn start(at_ms: i64, action: &str, amount: u32) -> Line {
    let tool = action.split(':').next().unwrap_or_default().to_owned();
    line(at_ms, Event::Start { tool, action: action.into(), amount, thread: 0 })
}

fn enter(at_ms: i64, action: &str, amount: u32) -> Line {
    let tool = action.split(':').next().unwrap_or_default().to_owned();
    line(at_ms, Event::Enter { tool, action: action.into(), amount, thread: 0 })
}

fn answered(at_ms: i64, action: &str, amount: u32, answer: Answer) -> Line {
    let tool = action.split(':').next().unwrap_or_default().to_owned();
    line(at_ms, Event::Answered { tool, action: action.into(), amount, thread: 0, started_ms: at_ms, answer })
}

fn ok(effect: &Effect, replayed: bool) -> Answer {
    Answer::Ok { effect: Effect { replayed, ..effect.clone() } }
}

/// `line`, written by the worker's thread `thread` (the helpers above write thread 0's).
fn on_thread(thread: u32, mut line: Line) -> Line {
    match &mut line.event {
        Event::Start { thread: t, .. }
        | Event::Enter { thread: t, .. }
        | Event::Hook { thread: t, .. }
        | Event::Answered { thread: t, .. } => *t = thread,
    }
    line
}

/// A refund hook's answer "not done", asked at `asked_ms` when the provider's newest effect
/// was `seen`.
fn not_done(asked_ms: i64, seen: i64) -> Event {
    let (tool, action, answer) = ("refund".into(), "refund:o1".into(), "not done".into());
    Event::Hook { tool, action, answer, asked_ms, ledger_seen: seen, thread: 0 }
}

/// Two refunds of `refund:o1`: `history` (given the provider's newest effect before them,
/// what a hook that saw neither reports) followed by their answers: the first effect to the
/// taker on thread 1, the second to the other call on thread 0.
fn refunded_twice(ledger: &Ledger, history: impl FnOnce(i64) -> Vec<Line>) -> Vec<Line> {
    let a = ledger.send("refund", "refund:o1", "refund:o1", 11, false);
    let b = ledger.send("refund", "refund:o1", "refund:o1", 11, false);
    let mut lines = history(a.id - 1);
    lines.push(on_thread(1, answered(i64::MAX - 1, "refund:o1", 11, ok(&a, false))));
    lines.push(answered(i64::MAX, "refund:o1", 11, ok(&b, false)));
    lines
}

fn refused(code: &str) -> Answer {
    Answer::Refused { code: code.into() }
}

/// One made-up case: its ledger (built by `provider`) and history, and the words an anomaly
/// must contain (`None`: there must be none).
struct Case {
    name: &'static str,
    expect: Option<&'static str>,
    history: fn(&Ledger) -> Vec<Line>,
}

const CASES: [Case; 15] = [
    Case {
        name: "a clean history",
        expect: None,
        history: |ledger| {
            let effect = ledger.send("charge", "charge:o1", "charge:o1", 107, true);
            vec![
                start(1, "charge:o1", 107),
                enter(2, "charge:o1", 107),
                answered(3, "charge:o1", 107, ok(&effect, false)),
                start(4, "charge:o1", 108),
                answered(5, "charge:o1", 108, Answer::Conflict { stored: 107.into(), requested: 108.into() }),
            ]
        },
    },
    Case {
        name: "a second effect",
        expect: Some("a second effect"),
        history: |ledger| {
            ledger.send("ship", "ship:o1", "ship:o1", 2, false);
            ledger.send("ship", "ship:o1", "ship:o1", 2, false);
            vec![start(1, "ship:o1", 2), enter(2, "ship:o1", 2), enter(3, "ship:o1", 2)]
        },
    },
    Case {
        name: "success without an effect",
        expect: Some("never made"),
        history: |_| {
            vec![
                start(1, "charge:o1", 107),
                answered(2, "charge:o1", 107, ok(&Effect { id: 99, amount: 107, replayed: false }, false)),
            ]
        },
    },
    Case {
        name: "two recorded results",
        expect: Some("the record answered"),
        history: |ledger| {
            let first = ledger.send("ship", "ship:o1", "ship:o1", 2, false);
            let second = ledger.send("ship", "ship:o1", "ship:o1", 2, false);
            vec![
                start(1, "ship:o1", 2),
                answered(2, "ship:o1", 2, ok(&first, true)),
                answered(3, "ship:o1", 2, ok(&second, true)),
            ]
        },
    },
    Case {
        name: "a CONFLICT no call explains",
        expect: Some("no earlier call explains"),
        history: |_| {
            vec![
                start(1, "charge:o1", 107),
                answered(2, "charge:o1", 107, Answer::Conflict { stored: 150.into(), requested: 107.into() }),
            ]
        },
    },
    Case {
        name: "an unexpected answer",
        expect: Some("an unexpected RECORD_UNREADABLE"),
        history: |_| vec![start(1, "charge:o1", 107), answered(2, "charge:o1", 107, refused("RECORD_UNREADABLE"))],
    },
    Case {
        name: "a key stuck in progress",
        expect: Some("after the faults stopped"),
        history: |_| {
            vec![
                start(1, "charge:o1", 107),
                Line { pid: FINAL, ..answered(2, "charge:o1", 107, refused("IN_PROGRESS")) },
            ]
        },
    },
    Case {
        name: "a budget overspent",
        expect: Some("over its budget"),
        history: |ledger| {
            (0..7)
                .flat_map(|k| {
                    let action = format!("ship:o{k}");
                    ledger.send("ship", &action, &action, 2, false);
                    [start(k, &action, 2)]
                })
                .collect()
        },
    },
    Case {
        name: "two approval requests",
        expect: Some("2 approval requests"),
        history: |ledger| {
            ledger.notified("pay:o1");
            ledger.notified("pay:o1");
            vec![start(1, "pay:o1", 737)]
        },
    },
    Case {
        name: "a declined payment made",
        expect: Some("although its approval was declined"),
        history: |ledger| {
            let effect = ledger.send("pay", "pay:o3", "pay:o3", 711, true);
            vec![start(1, "pay:o3", 711), answered(2, "pay:o3", 711, ok(&effect, false))]
        },
    },
    Case {
        name: "a key unknown after its hook could run",
        expect: Some("status unknown after a call"),
        history: |_| {
            let unknown = Answer::Status { status: "unknown".into(), effect: None };
            vec![
                start(1, "charge:o1", 107),
                enter(2, "charge:o1", 107),
                Line { pid: FINAL, ..answered(3, "charge:o1", 107, refused("OUTCOME_UNKNOWN")) },
                Line { pid: FINAL, ..answered(4, "charge:o1", 0, unknown) },
            ]
        },
    },
    Case {
        name: "a key unknown behind a CONFLICT",
        expect: None,
        history: |_| {
            let conflict = Answer::Conflict { stored: 108.into(), requested: 107.into() };
            let unknown = Answer::Status { status: "unknown".into(), effect: None };
            vec![
                start(1, "charge:o1", 108),
                enter(2, "charge:o1", 108),
                start(3, "charge:o1", 107),
                Line { pid: FINAL, ..answered(4, "charge:o1", 107, conflict) },
                Line { pid: FINAL, ..answered(5, "charge:o1", 0, unknown) },
            ]
        },
    },
    Case {
        name: "the documented limit",
        expect: None,
        history: |ledger| {
            // The first call's body began (1) and was paused; a taker's hook found nothing (3)
            // and sent (effect a); the first call woke up and sent too (effect b).
            refunded_twice(ledger, |seen| {
                vec![
                    start(0, "refund:o1", 11),
                    enter(1, "refund:o1", 11),
                    on_thread(1, start(2, "refund:o1", 11)),
                    on_thread(1, line(3, not_done(3, seen))),
                    on_thread(1, enter(4, "refund:o1", 11)),
                ]
            })
        },
    },
    Case {
        name: "the documented limit, paused before its body",
        expect: None,
        history: |ledger| {
            // The first call reserved (0) and was paused before its body; a taker's hook found
            // nothing (2) and sent (effect a); the first call woke up, began its body (4) and
            // sent too (effect b).
            refunded_twice(ledger, |seen| {
                vec![
                    start(0, "refund:o1", 11),
                    on_thread(1, start(1, "refund:o1", 11)),
                    on_thread(1, line(2, not_done(2, seen))),
                    on_thread(1, enter(3, "refund:o1", 11)),
                    enter(4, "refund:o1", 11),
                ]
            })
        },
    },
    Case {
        name: "a take-over before the other call began",
        expect: Some("a second effect"),
        history: |ledger| {
            // The hook (1) answered before the second call even started (3): nothing explains
            // that call's body running beside the taker's.
            refunded_twice(ledger, |seen| {
                vec![
                    on_thread(1, start(0, "refund:o1", 11)),
                    on_thread(1, line(1, not_done(1, seen))),
                    on_thread(1, enter(2, "refund:o1", 11)),
                    start(3, "refund:o1", 11),
                    enter(4, "refund:o1", 11),
                ]
            })
        },
    },
];

pub fn main() -> bool {
    let mut passed = true;
    for case in &CASES {
        let dir =
            PathBuf::from(format!("/tmp/idem-chaos-self-test-{}-{}", std::process::id(), case.name.replace(' ', "-")));
        std::fs::create_dir_all(&dir).expect("a directory");
        let ledger = Ledger::at(&dir);
        ledger.create();
        let lines = (case.history)(&ledger);
        let report = checker::check(&lines, &ledger, &[], FINAL);
        let found = report.anomalies.join("\n");
        let right = match case.expect {
            None => report.anomalies.is_empty(),
            Some(words) => found.contains(words),
        };
        let limit = if case.name.starts_with("the documented limit") {
            report.limits.get(LIMIT_HOOK) == Some(&1)
        } else {
            true
        };
        println!("{} {}", if right && limit { "ok  " } else { "FAIL" }, case.name);
        if !(right && limit) {
            println!("  expected {:?}, found:\n{found}", case.expect);
            passed = false;
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    passed
}
