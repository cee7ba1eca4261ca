//! Irreversible-action budgets: at most so many fresh runs (or so much of a compared
//! amount) per window, per scope, counted by the store in the same write as the
//! reservation.
//!
//! ```
//! use idem_runtime::budget::Budget;
//!
//! /// At most 20 refunds per tenant per day, and at most 5,000 (of the compared field
//! /// `amount`) refunded.
//! static REFUNDS: Budget = Budget::count("refunds", 20).per_day();
//! static REFUNDED: Budget = Budget::sum_of("refunded", "amount", 5_000.0).per_day();
//! assert_eq!((REFUNDS.limit(), REFUNDED.field()), (20.0, Some("amount")));
//! ```
//!
//! A tool names one with `budget = REFUNDS`. What each call answers is the table under
//! *Budgets* in the crate's docs; the rules behind it:
//!
//! - **What spends.** Only a call that reserves a fresh key: the store checks the window
//!   and charges it in the same atomic write (one SQLite transaction; one PostgreSQL
//!   transaction that locks the window's row; the memory store's lock), so of any number
//!   of racing first calls, exactly those that fit run. A replay, `IN_PROGRESS`,
//!   `CONFLICT`, `APPROVAL_REQUIRED`, `DECLINED`, `INVALID_KEY` and `BUDGET_EXCEEDED`
//!   itself reserve nothing and spend nothing, and a repeat of a done action replays even
//!   when the budget is spent.
//! - **Refunds.** A body whose `Err` releases its key (`on_error = release`, the default)
//!   gives its charge back to the window it was charged to, as does an operator's
//!   `idem resolve --release`. A call that was abandoned (panic, crash, dropped future),
//!   timed out, or settled by hand keeps its charge: its effect may have happened.
//! - **Windows.** Fixed, not rolling: each starts at a whole multiple of the window's
//!   length since the Unix epoch, by the store's clock (a day's at 00:00 UTC, an hour's on
//!   the hour). A fixed window is one row per budget, scope and window, which the store
//!   checks and charges in one write, and its end is a reset time the model and the user
//!   can be told; a rolling window would need every charge's time to check one call. The
//!   price: a burst just before and just after a boundary can use up to twice the limit
//!   within one window's length.
//! - **Scopes.** A scoped tool (`scope = ...`) is charged per scope, the tenant's own
//!   windows; an unscoped tool's windows are shared by every caller.
//! - **Names.** A budget's name is its identity in the store. Tools that name the same
//!   `static` (or two budgets of one name) share its windows, across namespaces; a
//!   renamed budget starts from zero. The limit lives in code: a window takes the limit
//!   of the call that charges it, so a deploy that lowers the limit applies at once.
//! - **Sums.** A sum budget adds up one of the tool's compared fields, as the model sends
//!   it (so a repeat with another amount is a CONFLICT, never a second charge); a tool
//!   whose `compare` lacks it does not compile. Amounts are kept in whole millionths, so
//!   sums are exact to six decimals, on every store and over the whole range: amounts and
//!   limits from 0 to 9e12 (a window of 9e12 takes one call of 9e12, then refuses even a
//!   millionth more as `BUDGET_EXCEEDED`); a value that is not a number from 0 to 9e12 is
//!   `INVALID_KEY` before anything is reserved. A call is refused when its amount would
//!   take the window past the limit, even with room left for a smaller one. A window
//!   counts up to 9,223,372,036,854.775807 (`i64::MAX` millionths): only calls approved
//!   past the limit and operators' raises can get there, and one that would pass it is
//!   refused (`BUDGET_EXCEEDED`, or the raise's error), never counted wrong.
//! - **Asking a person instead.** With `approval(over_budget)`, a call without room asks
//!   for approval (the text says which budget is spent); once approved, it runs and is
//!   charged past the limit. The request binds the action as any approval request does:
//!   while it waits, every call of the action answers `APPROVAL_REQUIRED` (other compared
//!   values: `CONFLICT`), and a declined one answers `DECLINED` until an operator reopens
//!   it, even in a later window with room. One that expires answers `APPROVAL_EXPIRED`
//!   once; the call after it tries the budget again (and asks anew if there is still no
//!   room).
//! - **Operators.** `idem budgets [--budget NAME] [--scope SCOPE] [--current] [--json]`
//!   lists windows; `idem raise BUDGET AMOUNT` adds to one window's limit and `idem reset
//!   BUDGET` sets its use back to zero, each `--by NAME --note TEXT`, recorded with the
//!   window. In code: [`Admin::budgets`](crate::store::Admin::budgets) and
//!   [`Admin::adjust_budget`](crate::store::Admin::adjust_budget). Windows are kept 7 days
//!   after they end ([`Store::purge`](crate::store::Store::purge) removes older ones).
//! - **Stores.** The memory, SQLite, PostgreSQL and Redis stores keep budgets. A store of your
//!   own keeps none unless it implements [`BudgetStore`](crate::store::BudgetStore) (and
//!   passes [`check_budgets`](crate::testing::conformance::check_budgets)): `budget = ...`
//!   with `store = ...` naming one that does not is a compile error at the `store = ...`,
//!   saying that the store keeps no budgets and which stores do.
//! - **Cost.** A tool without a budget runs exactly as before. A budget adds one row's
//!   read and write to a first call's reservation (see BENCHMARKS.md).
//!
//! How a store keeps the windows is [`store::budget`](crate::store::budget).

use std::time::Duration;

use crate::store::budget::UNIT;

/// A budget of fresh runs, shared by every tool that names it in `budget = ...`.
///
/// Made in a `static` with [`Budget::count`] or [`Budget::sum_of`] and a window
/// ([`Limited::per_minute`], [`per_hour`](Limited::per_hour), [`per_day`](Limited::per_day),
/// [`per`](Limited::per)). Its name is its identity in the store: two tools whose budgets
/// have one name share one count (give them the same `static`), and a budget renamed
/// starts from zero.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Budget {
    name: &'static str,
    kind: Kind,
    window_ms: i64,
}

/// A budget's limit before its window is chosen: see [`Budget`].
#[derive(Clone, Copy, Debug, PartialEq)]
#[must_use = "a budget needs a window: .per_minute(), .per_hour(), .per_day() or .per(duration)"]
pub struct Limited {
    name: &'static str,
    kind: Kind,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// At most this many fresh runs.
    Count(u64),
    /// At most this much of a compared field, in millionths.
    Sum { field: &'static str, max: i64 },
}

impl Budget {
    /// At most `runs` fresh runs per window.
    pub const fn count(name: &'static str, runs: u64) -> Limited {
        assert!(!name.is_empty(), "a budget needs a name: it is its identity in the store");
        assert!(runs <= (i64::MAX / UNIT) as u64, "a count budget holds at most 9,223,372,036,854 runs");
        Limited { name, kind: Kind::Count(runs) }
    }

    /// At most `max` of the compared field `field` (its value in each call, e.g. `amount`)
    /// per window, summed over fresh runs. `field` must be one of the tool's `compare`
    /// fields, as the model sends it (`amount` also for `req.amount`); a tool whose
    /// `compare` lacks it does not compile.
    pub const fn sum_of(name: &'static str, field: &'static str, max: f64) -> Limited {
        assert!(!name.is_empty(), "a budget needs a name: it is its identity in the store");
        assert!(max >= 0.0 && max <= 9.0e12, "a sum budget's max is a number from 0 to 9e12");
        Limited { name, kind: Kind::Sum { field, max: (max * UNIT as f64) as i64 } }
    }

    /// The budget's name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The compared field a sum budget adds up; `None` for a count budget.
    pub const fn field(&self) -> Option<&'static str> {
        match self.kind {
            Kind::Count(_) => None,
            Kind::Sum { field, .. } => Some(field),
        }
    }

    /// The most a window allows: runs for a count budget, the field's total for a sum.
    pub fn limit(&self) -> f64 {
        self.limit_millionths() as f64 / UNIT as f64
    }

    /// How long a window lasts. Windows are fixed, not rolling: each starts at a whole
    /// multiple of this since the Unix epoch, by the store's clock (a day's at 00:00 UTC).
    pub const fn window(&self) -> Duration {
        Duration::from_millis(self.window_ms as u64)
    }

    pub(crate) const fn limit_millionths(&self) -> i64 {
        match self.kind {
            Kind::Count(runs) => runs as i64 * UNIT,
            Kind::Sum { max, .. } => max,
        }
    }

    pub(crate) const fn window_ms(&self) -> i64 {
        self.window_ms
    }
}

impl Limited {
    /// Windows of one minute.
    pub const fn per_minute(self) -> Budget {
        self.per(Duration::from_secs(60))
    }

    /// Windows of one hour.
    pub const fn per_hour(self) -> Budget {
        self.per(Duration::from_secs(3600))
    }

    /// Windows of one day, from 00:00 UTC.
    pub const fn per_day(self) -> Budget {
        self.per(Duration::from_secs(24 * 3600))
    }

    /// Windows of `window` (at least a millisecond), each starting at a whole multiple of
    /// it since the Unix epoch.
    pub const fn per(self, window: Duration) -> Budget {
        let window_ms = window.as_millis();
        assert!(window_ms >= 1, "a budget's window is at least a millisecond");
        assert!(window_ms <= i64::MAX as u128 / 2, "a budget's window is at most 146 million years");
        Budget { name: self.name, kind: self.kind, window_ms: window_ms as i64 }
    }
}

/// Whether `compare` (a tool's compared fields, as the model sends them) holds the field a
/// sum budget adds up: checked where the tool is compiled.
pub(crate) const fn sums_a_compared_field(budget: &Budget, compare: &[&str]) -> bool {
    let Some(field) = budget.field() else { return true };
    let mut i = 0;
    while i < compare.len() {
        if const_eq(compare[i], field) {
            return true;
        }
        i += 1;
    }
    false
}

const fn const_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}
