//! The checker: reads every worker's history, the run's final calls and the provider's
//! ledger, and finds what idem promises did not hold. Each finding that idem documents as
//! beyond it (RELIABILITY.md) is counted under its name; anything else is an anomaly,
//! printed with the action's whole history.

use std::collections::{BTreeMap, BTreeSet};

use crate::events::{Answer, Event, Line};
use serde_json::Value;

use crate::ledger::{Effect, Ledger, Row};
use crate::nemesis::{Fault, KILL_WORKER};
use crate::tools::{APPROVAL_ABOVE, ORDERS_PER_TENANT, SHIP_LIMIT, Tool, tenant_of};

/// The documented limit the run can reach: `refund`'s hook asked the provider, which had no
/// effect yet, while the first call was alive past its lease; both sent, and the provider
/// does not honour keys.
pub const LIMIT_HOOK: &str = "refund: the reconcile hook found no effect while the first call, alive past its lease, had not sent it yet; the provider does not honour keys: a second effect";
/// A key of the tool without a hook whose holder died mid-call: `OUTCOME_UNKNOWN` until a
/// person decides (`idem resolve`), as documented; never a blind re-run.
pub const LEFT_UNKNOWN: &str =
    "ship (no reconcile hook): a key left OUTCOME_UNKNOWN for a person, its holder gone mid-call";
/// A key of a tool with a hook that no caller could take over: the abandoned call sent
/// other compared values than every later caller, who got CONFLICT (the action with the
/// first values may have happened), so no hook ran and the key waits for a person.
pub const UNKNOWN_BEHIND_CONFLICT: &str = "charge, pay, refund: a key left OUTCOME_UNKNOWN behind a CONFLICT: its abandoned call sent another amount than every later caller, so no hook ran";
/// The same on the tools whose provider honours the key: the second send was absorbed.
pub const ABSORBED: &str = "charge, pay: a second send of one action, answered by the provider's key (one effect)";

/// Answers a caller may get while faults go on.
const DURING: [&str; 7] = [
    "IN_PROGRESS",
    "CONFLICT",
    "OUTCOME_UNKNOWN",
    "STORE_UNAVAILABLE",
    "APPROVAL_REQUIRED",
    "DECLINED",
    "BUDGET_EXCEEDED",
];

/// Answers a caller may get once the faults stopped and a lease passed: nothing in
/// progress, and the store answers.
const SETTLED: [&str; 5] = ["CONFLICT", "OUTCOME_UNKNOWN", "APPROVAL_REQUIRED", "DECLINED", "BUDGET_EXCEEDED"];

#[derive(Default)]
pub struct Report {
    pub operations: usize,
    pub answers: BTreeMap<String, usize>,
    /// What the `reconcile` hooks answered, by tool: how often a key was taken over.
    pub hooks: BTreeMap<String, usize>,
    pub faults: BTreeMap<String, usize>,
    pub limits: BTreeMap<&'static str, usize>,
    pub anomalies: Vec<String>,
}

struct Action<'a> {
    name: &'a str,
    tool: Tool,
    k: u64,
    lines: Vec<&'a Line>,
    effects: Vec<&'a Row>,
}

pub fn check(lines: &[Line], ledger: &Ledger, faults: &[Fault], final_pid: u32) -> Report {
    let effects = ledger.effects();
    let mut report = Report::default();
    let mut actions: BTreeMap<&str, Action> = BTreeMap::new();
    for line in lines {
        let name = line.event.action();
        let (tool, order) = name.split_once(':').expect("actions are tool:order");
        let entry = actions.entry(name).or_insert_with(|| Action {
            name,
            tool: Tool::named(tool).expect("a tool"),
            k: order[1..].parse().expect("orders are o<number>"),
            lines: Vec::new(),
            effects: Vec::new(),
        });
        entry.lines.push(line);
        match &line.event {
            Event::Answered { answer, .. } => {
                report.operations += 1;
                *report.answers.entry(answer.kind()).or_default() += 1;
            }
            Event::Hook { tool, answer, .. } => {
                let answer = if answer.starts_with("done") { "done" } else { answer.as_str() };
                *report.hooks.entry(format!("{tool}: {answer}")).or_default() += 1;
            }
            _ => {}
        }
    }
    for row in &effects {
        match actions.get_mut(row.action.as_str()) {
            Some(action) => action.effects.push(row),
            None => report.anomalies.push(format!("{}: an effect ({}) no call asked for", row.action, row.id)),
        }
    }
    for action in actions.values() {
        let found = check_action(action, final_pid, &mut report.limits);
        if !found.is_empty() {
            report.anomalies.push(format!(
                "{}:\n  - {}\n{}",
                action.name,
                found.join("\n  - "),
                history(action, faults)
            ));
        }
    }
    report.anomalies.extend(budgets(&effects));
    for (action, _) in ledger.resent() {
        let honoured = action.split_once(':').and_then(|(tool, _)| Tool::named(tool)).is_some_and(Tool::honours_key);
        *report.limits.entry(ABSORBED).or_default() += usize::from(honoured);
    }
    for (action, count) in ledger.notifications() {
        if count > 1 {
            report.anomalies.push(format!("{action}: {count} approval requests reached the approvers, not one"));
        }
    }
    for fault in faults {
        let kind = match fault.kind.as_str() {
            KILL_WORKER => format!("{KILL_WORKER}: {}", where_killed(lines, &effects, fault)),
            kind => kind.to_owned(),
        };
        *report.faults.entry(kind).or_default() += 1;
    }
    report
}

/// What broke idem's promises for one action.
fn check_action(action: &Action, final_pid: u32, limits: &mut BTreeMap<&'static str, usize>) -> Vec<String> {
    let mut found = Vec::new();
    // At most one effect, except where a documented limit explains the second.
    if let Some((first, later)) = action.effects.split_first() {
        for second in later {
            if explained_by_hook(action, first, second) {
                *limits.entry(LIMIT_HOOK).or_default() += 1;
            } else {
                found.push(format!(
                    "a second effect ({} after {}) that no documented limit explains",
                    second.id, first.id
                ));
            }
        }
    }
    let mut recorded: Option<i64> = None;
    let mut final_conflict = false;
    for line in &action.lines {
        let Event::Answered { answer, amount, .. } = &line.event else { continue };
        let final_call = line.pid == final_pid;
        final_conflict |= final_call && matches!(answer, Answer::Conflict { .. });
        match answer {
            Answer::Ok { effect } | Answer::Status { effect: Some(effect), .. } => {
                // A replay or a status read answers from the record: always the same one.
                let from_record = effect.replayed || matches!(answer, Answer::Status { .. });
                found.extend(check_success(action, effect, from_record.then_some(&mut recorded)));
            }
            Answer::Conflict { stored, requested } => {
                found.extend(check_conflict(action, line.at_ms, *amount, stored, requested));
            }
            Answer::Refused { code } if final_call && !SETTLED.contains(&code.as_str()) => {
                found.push(format!("{code} after the faults stopped and a lease passed"));
            }
            Answer::Refused { code } if !DURING.contains(&code.as_str()) => found.push(format!("an unexpected {code}")),
            Answer::Status { status, .. } if final_call && status == "in_progress" => {
                found.push("status in_progress after the faults stopped and a lease passed (stuck)".into());
            }
            Answer::Status { status, .. } if final_call && status == "unknown" => {
                if action.tool == Tool::Ship {
                    *limits.entry(LEFT_UNKNOWN).or_default() += 1;
                } else if final_conflict {
                    *limits.entry(UNKNOWN_BEHIND_CONFLICT).or_default() += 1;
                } else {
                    found.push("status unknown after a call that ran its reconcile hook".into());
                }
            }
            _ => {}
        }
    }
    let declined = action.tool == Tool::Pay && action.k.is_multiple_of(3);
    if let Some(row) = action.effects.iter().find(|row| declined && row.amount > APPROVAL_ABOVE) {
        found.push(format!("effect {} ran although its approval was declined", row.id));
    }
    found
}

/// A caller told success: the provider made that effect, for that amount; and where the
/// answer came from the record, the record holds one result (`recorded`, the first seen).
fn check_success(action: &Action, effect: &Effect, recorded: Option<&mut Option<i64>>) -> Option<String> {
    let Some(row) = action.effects.iter().find(|row| row.id == effect.id) else {
        let made: Vec<i64> = action.effects.iter().map(|row| row.id).collect();
        return Some(format!("told success with effect {}, which the provider never made ({made:?})", effect.id));
    };
    if row.amount != effect.amount {
        return Some(format!("effect {} told as amount {}, made for {}", row.id, effect.amount, row.amount));
    }
    let recorded = recorded?;
    let first = *recorded.get_or_insert(effect.id);
    (first != effect.id).then(|| format!("the record answered effect {first} and effect {}", effect.id))
}

/// A CONFLICT names this call's amount as requested, and as stored one that an earlier call
/// sent (and that the effect, if any, was made for).
fn check_conflict(action: &Action, at_ms: i64, amount: u32, stored: &Value, requested: &Value) -> Vec<String> {
    let (stored, requested) = (stored.as_u64(), requested.as_u64());
    let sent_before = action.lines.iter().any(|line| {
        matches!(line.event, Event::Start { amount: sent, .. } if line.at_ms <= at_ms && Some(u64::from(sent)) == stored)
    });
    let mut found = Vec::new();
    if requested != Some(u64::from(amount)) || stored == requested || !sent_before {
        found.push(format!(
            "a CONFLICT (stored {stored:?}, requested {requested:?}) for a call of {amount} that no earlier call explains"
        ));
    }
    if let [only] = action.effects[..]
        && stored != Some(u64::from(only.amount))
    {
        found.push(format!("a CONFLICT citing {stored:?}, but the effect was made for {}", only.amount));
    }
    found
}

/// Whether two effects of one refund are the documented limit: one of them was made by a
/// caller that took the key over when its hook found nothing at the provider, while the
/// other call, past its lease but alive (stopped, cut off from the store), held the key and
/// had not sent its effect yet. It may have been stopped anywhere after its reservation:
/// before its body began, or in it. Either may reach the provider first.
fn explained_by_hook(action: &Action, first: &Row, second: &Row) -> bool {
    action.tool == Tool::Refund && (taken_over(action, second, first) || taken_over(action, first, second))
}

/// Whether `taker` made its effect after a hook answered "not done" without seeing `other`,
/// whose call held the key before that hook asked.
fn taken_over(action: &Action, taker: &Row, other: &Row) -> bool {
    let last_before =
        |pid: u32, at_ms: i64| action.lines.iter().rev().filter(move |line| line.pid == pid && line.at_ms <= at_ms);
    let hook = last_before(taker.pid, taker.at_ms).find_map(|line| match &line.event {
        Event::Hook { answer, asked_ms, ledger_seen, .. } => Some((*asked_ms, answer.as_str(), *ledger_seen)),
        _ => None,
    });
    let Some((asked_ms, "not done", seen)) = hook else { return false };
    seen < other.id && held_from(action, other).is_some_and(|held| held <= asked_ms)
}

/// When the call that made `effect` began to hold its key, at the latest: the body that sent
/// it is the last to begin in its process before the effect; its thread's calls run one at a
/// time, so the call is that thread's last start before the body, or, when the call took
/// the key over itself, its own hook's answer after that start. (The start is written before
/// the reservation is asked for, so it bounds the reservation from below.)
fn held_from(action: &Action, effect: &Row) -> Option<i64> {
    let mut earlier = action.lines.iter().rev().filter(|line| line.pid == effect.pid && line.at_ms <= effect.at_ms);
    let body = earlier.find(|line| matches!(line.event, Event::Enter { .. }))?;
    let thread = body.event.thread();
    earlier
        .filter(|line| line.event.thread() == thread)
        .find(|line| matches!(line.event, Event::Start { .. } | Event::Hook { .. }))
        .map(|line| line.at_ms)
}

/// Ship's budget: per tenant, at most SHIP_LIMIT actions with an effect.
fn budgets(effects: &[Row]) -> Vec<String> {
    let mut shipped: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
    for row in effects.iter().filter(|row| row.tool == Tool::Ship.name()) {
        let order = row.action.split_once(':').map_or("", |(_, order)| order);
        shipped.entry(tenant_of(order)).or_default().insert(&row.action);
    }
    shipped
        .into_iter()
        .filter(|(_, actions)| actions.len() as u64 > SHIP_LIMIT)
        .map(|(tenant, actions)| {
            format!("tenant {tenant} shipped {} orders of {ORDERS_PER_TENANT}, over its budget of {SHIP_LIMIT}: {actions:?}", actions.len())
        })
        .collect()
}

/// Where a killed worker was: the deepest point any of its threads had reached.
fn where_killed(lines: &[Line], effects: &[Row], fault: &Fault) -> &'static str {
    let pid = fault.pid.expect("a worker fault names its worker");
    let mut last: BTreeMap<u32, &Line> = BTreeMap::new();
    for line in lines.iter().filter(|line| line.pid == pid && line.at_ms <= fault.at_ms) {
        last.insert(line.event.thread(), line);
    }
    let depth = |line: &Line| match &line.event {
        Event::Enter { action, .. } => {
            let sent = effects.iter().any(|row| row.pid == pid && &row.action == action && row.at_ms >= line.at_ms);
            if sent { 4 } else { 3 }
        }
        Event::Hook { .. } => 2,
        Event::Start { .. } => 1,
        Event::Answered { .. } => 0,
    };
    match last.values().map(|line| depth(line)).max().unwrap_or(0) {
        4 => "after its effect, before completing",
        3 => "in a body, before its effect",
        2 => "after a reconcile hook",
        1 => "in a store call",
        _ => "between calls",
    }
}

/// The action's history: its events, the provider's effects and the faults while it ran.
fn history(action: &Action, faults: &[Fault]) -> String {
    let (from, to) = match (action.lines.first(), action.lines.last()) {
        (Some(first), Some(last)) => (first.at_ms, last.at_ms),
        _ => (0, 0),
    };
    let mut text = String::new();
    for line in &action.lines {
        text += &format!(
            "    {} pid {} {}\n",
            line.at_ms,
            line.pid,
            serde_json::to_string(&line.event).unwrap_or_default()
        );
    }
    for row in &action.effects {
        text += &format!("    {} pid {} provider: effect {} for {}\n", row.at_ms, row.pid, row.id, row.amount);
    }
    for fault in faults.iter().filter(|fault| (from..=to).contains(&fault.at_ms)) {
        text += &format!("    {} nemesis: {} {:?} for {} ms\n", fault.at_ms, fault.kind, fault.pid, fault.for_ms);
    }
    text
}
