//! `idem budgets`, `idem raise` and `idem reset`: where the budgets of tools with
//! `budget = ...` stand, and an operator's change to one window, recorded with a note.

use idem_runtime::store::budget::{Adjustment, BudgetChange, BudgetQuery, BudgetWindow, UNIT, units};
use idem_runtime::store::{Admin, StoreError, rfc3339};
use serde_json::json;

use crate::args::WindowChange;
use crate::render::when;

/// `idem budgets`: the windows the filters select, newest first.
pub(crate) fn list(store: &dyn Admin, filter: &Filter, current: bool, json: bool) -> Result<(), String> {
    let prefix = filter.scope.as_deref().map(scope_of);
    let query = BudgetQuery { budget: filter.budget.as_deref(), scope: prefix.as_deref(), current };
    let windows = store.budgets(&query).map_err(|e| e.to_string())?;
    for window in &windows {
        if json {
            say!("{}", json_line(window));
        } else {
            say!("{}", line(window));
        }
    }
    eprintln!("{} budget window(s) in {}", windows.len(), store.describe());
    Ok(())
}

/// Which windows a command is about: a budget's name and a scope (as the tools' `scope =
/// ...` gives it: a tenant, a user), as given on the command line.
pub(crate) struct Filter {
    pub(crate) budget: Option<String>,
    pub(crate) scope: Option<String>,
}

/// How the store keeps a scope: its keys' prefix (`""`: an unscoped tool's).
fn scope_of(scope: &str) -> String {
    idem_runtime::store::scope_prefix(scope)
}

fn line(window: &BudgetWindow) -> String {
    let scope = if window.scope.is_empty() { "(unscoped)" } else { window.scope.as_str() };
    let raised = match window.raised {
        0 => String::new(),
        raised => format!(" (limit {} raised by {})", units(window.limit), units(raised)),
    };
    let adjusted = window
        .adjusted
        .as_ref()
        .map_or_else(String::new, |a| format!("; {} by {} {}: {}", a.change, a.by, when(a.at_ms), a.note));
    format!(
        "{:<24} {:<34} {} .. {}  used {} of {}{raised}{adjusted}",
        window.budget,
        scope,
        rfc3339(window.start_ms),
        rfc3339(window.end_ms()),
        units(window.used),
        units(window.allowed()),
    )
}

fn json_line(window: &BudgetWindow) -> serde_json::Value {
    let number = |millionths: i64| json!(millionths as f64 / UNIT as f64);
    json!({
        "budget": window.budget,
        "scope": window.scope,
        "window_start": rfc3339(window.start_ms),
        "window_end": rfc3339(window.end_ms()),
        "window_start_ms": window.start_ms,
        "used": number(window.used),
        "limit": number(window.limit),
        "raised": number(window.raised),
        "allowed": number(window.allowed()),
        "adjusted": window.adjusted.as_ref().map(|a| json!({
            "by": a.by, "at": rfc3339(a.at_ms), "change": a.change, "note": a.note,
        })),
    })
}

/// `idem raise` (`Some(amount)`) or `idem reset` (`None`) of one window: the current one of
/// the budget and scope unless `window` names another (its start as `budgets` prints it).
pub(crate) fn adjust(
    store: &dyn Admin,
    change: &WindowChange,
    raise: Option<f64>,
    confirm: &mut dyn FnMut(&str) -> bool,
) -> Result<(), String> {
    let WindowChange { budget, scope, window, by, note, yes } = change;
    let (budget, scope, window, by, note) =
        (budget.as_str(), scope.as_deref(), window.as_deref(), by.as_str(), note.as_str());
    let prefix = scope.map(scope_of).unwrap_or_default();
    let chosen = find(store, budget, (scope, &prefix), window)?;
    let change = match raise {
        Some(amount) => BudgetChange::Raise(millionths(amount)),
        None => BudgetChange::Reset,
    };
    say!("{}", line(&chosen));
    let question = match change {
        BudgetChange::Raise(by_much) => format!(
            "Raise this window of {budget} by {} as {by}? Its calls may use {} until {}.",
            units(by_much),
            units(chosen.allowed().saturating_add(by_much)),
            rfc3339(chosen.end_ms())
        ),
        BudgetChange::Reset => format!(
            "Reset this window of {budget} as {by}? What it used ({}) is forgotten: its calls may use {} again until {}.",
            units(chosen.used),
            units(chosen.allowed()),
            rfc3339(chosen.end_ms())
        ),
    };
    if !*yes && !confirm(&question) {
        return Err("nothing changed".into());
    }
    let adjustment = Adjustment { window: (&chosen.budget, &chosen.scope, chosen.start_ms), change, by, note };
    match store.adjust_budget(&adjustment) {
        Ok(window) => {
            say!("{}", line(&window));
            Ok(())
        }
        Err(StoreError::Refused(why)) => Err(format!("{why}; nothing changed")),
        Err(error) => Err(format!("{error}; nothing changed")),
    }
}

/// The window an adjustment is about: the one whose start `window` names (as `budgets`
/// prints it, or in milliseconds), else the budget's current one for the scope.
fn find(
    store: &dyn Admin,
    budget: &str,
    (scope, prefix): (Option<&str>, &str),
    window: Option<&str>,
) -> Result<BudgetWindow, String> {
    let query = BudgetQuery { budget: Some(budget), scope: Some(prefix), current: window.is_none() };
    let windows = store.budgets(&query).map_err(|e| e.to_string())?;
    let whose = match scope {
        Some(scope) => format!("scope {scope}"),
        None => "unscoped tools (give --scope for a scoped tool's)".to_owned(),
    };
    let found = match window {
        None => windows.into_iter().next(),
        Some(start) => windows.into_iter().find(|w| rfc3339(w.start_ms) == start || w.start_ms.to_string() == start),
    };
    found.ok_or_else(|| match window {
        None => format!(
            "budget {budget} has no window in use now for {whose} (`idem budgets --budget {budget}` lists its windows); \
             nothing changed"
        ),
        Some(start) => format!(
            "budget {budget} has no window starting at {start} for {whose} (`idem budgets --budget {budget}` lists \
             them, with their start); nothing changed"
        ),
    })
}

/// A raise's amount (checked by the command line: above zero), in the millionths stores
/// count in.
fn millionths(amount: f64) -> i64 {
    (amount * UNIT as f64).round() as i64
}
