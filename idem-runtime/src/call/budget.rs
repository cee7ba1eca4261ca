//! A tool's budget (`budget = ...`): the charge a first call makes with its reservation,
//! and BUDGET_EXCEEDED when the window has no room.

use serde_json::Value;

use crate::budget::Budget;
use crate::error::{Error, ErrorCode, OverBudget};
use crate::key::Key;
use crate::store::budget::{BudgetWindow, Charge, UNIT, units};
use crate::store::rfc3339;

use super::Tool;

/// `budget = ...` and `over_budget = ...` of one tool.
#[doc(hidden)]
#[derive(Debug)]
pub struct BudgetPolicy {
    /// The budget its fresh runs are charged to.
    pub budget: &'static Budget,
    /// `approval(over_budget)`: a call the budget has no room for asks a person instead
    /// of answering BUDGET_EXCEEDED; once approved, it runs and is charged past the limit.
    pub over_budget_asks: bool,
}

/// What this call of `tool` would be charged, in millionths: one run, or the summed
/// field's value in `request` (the call's compared fields).
pub(crate) fn amount(tool: &Tool, budget: &Budget, request: &str) -> Result<i64, Error> {
    match budget.field() {
        None => Ok(UNIT),
        Some(field) => summed(tool, budget, field, request),
    }
}

/// The charge of a call under `key` for `amount` (see [`amount`]); `past_limit` for a call
/// a person approved over budget.
pub(crate) fn charge<'a>(budget: &'a Budget, key: &'a Key, amount: i64, past_limit: bool) -> Charge<'a> {
    Charge {
        budget: budget.name(),
        // A scoped tool's budget counts per scope.
        scope: key.scope_prefix().unwrap_or(""),
        window_ms: budget.window_ms(),
        limit: budget.limit_millionths(),
        amount,
        past_limit,
    }
}

/// The value of `field` in the compared fields, in millionths: a number from zero up.
fn summed(tool: &Tool, budget: &Budget, field: &str, request: &str) -> Result<i64, Error> {
    let value = serde_json::from_str::<Value>(request).ok().and_then(|fields| fields.get(field).cloned());
    let number = value.as_ref().and_then(Value::as_f64).filter(|n| n.is_finite() && *n >= 0.0);
    match number {
        Some(n) if n <= 9.0e12 => Ok((n * UNIT as f64).round() as i64),
        _ => {
            let shown = value.map_or_else(|| "missing".to_owned(), |value| value.to_string());
            let field = tool.model_name(field);
            Err(Error::new(
                ErrorCode::InvalidKey,
                format!(
                    "{}: the budget {} adds up {field}, which is {shown} in this call: a budget adds up numbers from 0 to 9e12; nothing was done",
                    tool.name,
                    budget.name()
                ),
            )
            .with_suggestion(format!("call {} again with {field} a number of zero or more", tool.name)))
        }
    }
}

/// BUDGET_EXCEEDED: `window` has no room for this call of `key` with `request`.
pub(crate) fn exceeded(tool: &Tool, (key, request): (&Key, &str), window: &BudgetWindow) -> Error {
    let resets = rfc3339(window.end_ms());
    // A sum budget's call may be refused with room left: say how much it needed.
    let needed = match tool.budget.map(|policy| (policy.budget.field(), amount(tool, policy.budget, request))) {
        Some((Some(field), Ok(amount))) => format!("; this call's {} is {}", tool.model_name(field), units(amount)),
        _ => String::new(),
    };
    Error::new(
        ErrorCode::BudgetExceeded,
        format!(
            "{}: {} was not run: the budget {} has used {} of {} in the window that ends at {resets}{needed}",
            tool.name,
            key.readable(),
            window.budget,
            units(window.used),
            units(window.allowed()),
        ),
    )
    .with_suggestion(match needed.is_empty() {
        true => format!(
            "do not call {} again before {resets}: tell the user the budget {} is spent, and ask how to go on",
            tool.name, window.budget
        ),
        false => format!(
            "do not call {} again with this amount before {resets}: tell the user the budget {} has {} left, and ask how to go on",
            tool.name,
            window.budget,
            units(window.allowed().saturating_sub(window.used).max(0))
        ),
    })
    .with_budget(OverBudget {
        name: window.budget.clone(),
        used: window.used as f64 / UNIT as f64,
        limit: window.allowed() as f64 / UNIT as f64,
        window_start_ms: window.start_ms,
        resets_at_ms: window.end_ms(),
    })
}

/// The text of the approval an over-budget call asks for: the action's, and the budget's
/// state.
pub(crate) fn over_budget_text(action: &str, window: &BudgetWindow) -> String {
    format!(
        "{action}, over the budget {} (used {} of {} until {})",
        window.budget,
        units(window.used),
        units(window.allowed()),
        rfc3339(window.end_ms())
    )
}
