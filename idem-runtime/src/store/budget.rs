//! What a store keeps for budgets ([`Budget`](crate::budget::Budget)): per budget, scope and
//! window, how much the window used. A store that keeps budgets implements
//! [`BudgetStore`] beside [`Store`]: a charge is made in the same write as the reservation
//! it pays for ([`BudgetStore::reserve_charged`]), so concurrent first calls cannot all pass
//! a check made before their inserts, a replay never pays (it reserves nothing), and a crash
//! between the two cannot forget one.
//!
//! Amounts are whole millionths (a count budget's call is [`UNIT`]): sums of them are exact,
//! as sums of `f64` are not, and every store adds them the same way.

use std::future::Future;
use std::sync::Arc;

use super::{Reservation, Reserve, Store, StoreError};

/// A [`Store`] that keeps budgets: what a tool with `budget = ...` needs. The memory,
/// SQLite, PostgreSQL and Redis stores are; a store of your own that is not makes
/// `budget = ...` a compile error at its `store = ...`, which says so.
///
/// A store that implements it passes
/// [`check_budgets`](crate::testing::conformance::check_budgets), and its
/// [`Admin`](super::Admin) lists and adjusts its windows
/// ([`Admin::budgets`](super::Admin::budgets), [`Admin::adjust_budget`](super::Admin::adjust_budget)).
#[diagnostic::on_unimplemented(
    message = "`{Self}` keeps no budgets",
    label = "a tool with `budget = ...` needs a store that keeps budgets: an `idem::MemoryStore`, an `idem::SqliteStore`, an `idem::PgStore`, an `idem::RedisStore`, or a type that implements `idem::store::BudgetStore`",
    note = "leave `store = ...` out for the default store (SQLite), which keeps them"
)]
pub trait BudgetStore: Store {
    /// [`reserve`](Store::reserve) for a tool with a budget: when it creates the record, it
    /// charges `charge` to the budget's current window (by the store's clock) in the same
    /// atomic write, and the record remembers its charge. It makes no record and charges
    /// nothing ([`Reservation::OverBudget`], with the window) when the charge would take the
    /// window's use past its limit (plus what operators raised it by), unless
    /// `charge.past_limit`, nor when it would take the window's use past `i64::MAX`
    /// millionths, the most a window counts, even with `charge.past_limit`. Sums are exact
    /// over the whole range (amounts and limits up to 9e12 units are 9 × 10^18 millionths:
    /// add them without overflow, and not in doubles). A record that exists is returned as
    /// `reserve` returns it, and nothing is charged. Of concurrent calls, the charges that
    /// pass are exactly those that fit: the check and the charge are one step.
    ///
    /// Later operations keep the charge ([`complete`](Store::complete),
    /// [`take_over`](Store::take_over), [`abandon`](Store::abandon): an effect may have
    /// happened), except [`release`](Store::release) and
    /// [`Admin::resolve_release`](super::Admin::resolve_release), which refund it to the
    /// window it was charged to. [`purge`](Store::purge) removes windows that ended
    /// [`WINDOWS_KEPT_MS`] ago or more.
    fn reserve_charged(
        &self,
        request: Reserve<'_>,
        charge: Charge<'_>,
    ) -> impl Future<Output = Result<Reservation, StoreError>> + Send;
}

/// Forwards [`BudgetStore`] through `&`, `Box` and `Arc`, as [`Store`] is.
macro_rules! forward_budget_store {
    ($($pointer:ty),+) => {$(
        impl<S: BudgetStore + ?Sized> BudgetStore for $pointer {
            fn reserve_charged(
                &self,
                request: Reserve<'_>,
                charge: Charge<'_>,
            ) -> impl Future<Output = Result<Reservation, StoreError>> + Send {
                (**self).reserve_charged(request, charge)
            }
        }
    )+};
}

forward_budget_store!(&S, Box<S>, Arc<S>);

/// One unit of a budget, in the millionths stores count in: a count budget's call.
pub const UNIT: i64 = 1_000_000;

/// A charge against a budget window, made atomically with the reservation it pays for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Charge<'a> {
    /// The budget's name: every tool that uses it shares its windows.
    pub budget: &'a str,
    /// Whose use it is: a scoped tool's scope prefix (see [`scope_prefix`](crate::store::scope_prefix)),
    /// `""` for an unscoped tool.
    pub scope: &'a str,
    /// The window's length in milliseconds: a window starts at a whole multiple of it since
    /// the Unix epoch, by the store's clock ([`window_start`]).
    pub window_ms: i64,
    /// The most a window may use, in millionths. An operator may raise one window's
    /// ([`BudgetWindow::raised`]).
    pub limit: i64,
    /// What this reservation uses, in millionths.
    pub amount: i64,
    /// Charge even when the window would pass its limit: a person approved this action
    /// over budget.
    pub past_limit: bool,
}

/// Where one window of one budget stands for one scope.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BudgetWindow {
    /// The budget's name.
    pub budget: String,
    /// The scope (`""`: unscoped).
    pub scope: String,
    /// When the window started, in milliseconds since the Unix epoch (store's clock).
    pub start_ms: i64,
    /// Its length in milliseconds: it ends at `start_ms + window_ms`.
    pub window_ms: i64,
    /// What it used, in millionths: charges of fresh runs, less refunds of runs that
    /// failed and released their key.
    pub used: i64,
    /// The limit of the last charge, in millionths (the tool's: limits live in code).
    pub limit: i64,
    /// What operators added to this window's limit, in millionths.
    pub raised: i64,
    /// The last operator's change, if any.
    pub adjusted: Option<Adjusted>,
}

impl BudgetWindow {
    /// A window as a store read it; see the fields.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        budget: String,
        scope: String,
        (start_ms, window_ms): (i64, i64),
        used: i64,
        limit: i64,
        raised: i64,
        adjusted: Option<Adjusted>,
    ) -> BudgetWindow {
        BudgetWindow { budget, scope, start_ms, window_ms, used, limit, raised, adjusted }
    }

    /// When the window ends (and the next one starts).
    pub fn end_ms(&self) -> i64 {
        self.start_ms.saturating_add(self.window_ms)
    }

    /// The window's limit with what operators added.
    pub fn allowed(&self) -> i64 {
        self.limit.saturating_add(self.raised)
    }
}

/// An operator's change to a window, as recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Adjusted {
    /// Who made it.
    pub by: String,
    /// When, by the store's clock.
    pub at_ms: i64,
    /// What it was: `raise <amount>` or `reset (was <used>)`, amounts in units.
    pub change: String,
    /// Why.
    pub note: String,
}

/// Which windows [`Admin::budgets`](super::Admin::budgets) returns: every condition given
/// must hold. Newest windows first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BudgetQuery<'a> {
    /// Of this budget only.
    pub budget: Option<&'a str>,
    /// Of this scope only (its prefix, as in [`Charge::scope`]).
    pub scope: Option<&'a str>,
    /// Only windows that have not ended, by the store's clock.
    pub current: bool,
}

/// What an operator changes in one window ([`Admin::adjust_budget`](super::Admin::adjust_budget)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BudgetChange {
    /// Adds this many millionths to the window's limit (more than zero).
    Raise(i64),
    /// Sets the window's use back to zero.
    Reset,
}

/// An operator's change with who makes it and why; both are recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Adjustment<'a> {
    /// The budget, scope and window start to change.
    pub window: (&'a str, &'a str, i64),
    /// What to change.
    pub change: BudgetChange,
    /// Who (not empty).
    pub by: &'a str,
    /// Why (not empty).
    pub note: &'a str,
}

/// How long a window is kept after it ended, before [`Store::purge`]
/// removes it: long enough for an operator to see last week's use.
pub const WINDOWS_KEPT_MS: i64 = 7 * 24 * 3600 * 1000;

/// Whether a window that used `used` of `limit + raised` can take `charge`: within its
/// limit (unless `charge.past_limit`), and within what a window counts (`i64::MAX`
/// millionths, even approved). Exact for every value: the sums are made in `i128`.
pub(crate) fn takes(used: i64, raised: i64, charge: &Charge<'_>) -> bool {
    let after = i128::from(used) + i128::from(charge.amount);
    let allowed = i128::from(charge.limit) + i128::from(raised);
    after <= i128::from(i64::MAX) && (charge.past_limit || after <= allowed)
}

/// What a window's `raised` becomes after a raise of `by`: refused when a window cannot
/// count it (past `i64::MAX` millionths), as every store refuses it.
pub(crate) fn raised_by(raised: i64, by: i64) -> Result<i64, super::StoreError> {
    raised.checked_add(by).ok_or_else(|| uncountable_raise(by))
}

/// The refusal of a raise of `by` that a window cannot count.
pub(crate) fn uncountable_raise(by: i64) -> super::StoreError {
    super::StoreError::Refused(format!(
        "a raise of {} would take the window's raises past {}, the most a window counts",
        units(by),
        units(i64::MAX)
    ))
}

/// The start of the window of `window_ms` that holds `now_ms`.
pub fn window_start(now_ms: i64, window_ms: i64) -> i64 {
    now_ms - now_ms.rem_euclid(window_ms.max(1))
}

/// The text of an adjustment, as [`Adjusted::change`] keeps it.
pub(crate) fn change_text(change: BudgetChange, used: i64) -> String {
    match change {
        BudgetChange::Raise(by) => format!("raise {}", units(by)),
        BudgetChange::Reset => format!("reset (was {})", units(used)),
    }
}

/// Millionths as units: `3`, `1200.5`.
pub fn units(millionths: i64) -> String {
    let whole = millionths / UNIT;
    let fraction = (millionths % UNIT).abs();
    if fraction == 0 {
        return whole.to_string();
    }
    let sign = if millionths < 0 && whole == 0 { "-" } else { "" };
    let digits = format!("{fraction:06}");
    format!("{sign}{whole}.{}", digits.trim_end_matches('0'))
}

/// What a call answers when it would charge a store that keeps no budgets (a `Tool` built
/// by hand: the expansion refuses `budget = ...` on such a store at compile time).
pub(crate) fn not_kept() -> super::StoreError {
    super::StoreError::Refused(
        "this store keeps no budgets: a tool with `budget = ...` needs a store that does (memory, SQLite, PostgreSQL, Redis)"
            .to_owned(),
    )
}

/// Checks an adjustment before a store applies it: what every store refuses alike.
pub(crate) fn check_adjustment(adjustment: &Adjustment<'_>) -> Result<(), super::StoreError> {
    let refuse = |why: &str| Err(super::StoreError::Refused(why.to_owned()));
    if adjustment.by.trim().is_empty() {
        return refuse("who adjusts a budget must be named");
    }
    if adjustment.note.trim().is_empty() {
        return refuse("an adjustment of a budget needs a note saying why");
    }
    if let BudgetChange::Raise(by) = adjustment.change
        && by <= 0
    {
        return refuse("a raise must add more than zero");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_start_at_whole_multiples_of_their_length() {
        let day = 86_400_000;
        assert_eq!(window_start(day * 3 + 5, day), day * 3);
        assert_eq!(window_start(day * 3, day), day * 3);
        assert_eq!(window_start(-1, day), -day);
    }

    #[test]
    fn units_read_as_numbers() {
        assert_eq!(units(3 * UNIT), "3");
        assert_eq!(units(1_200_500_000), "1200.5");
        assert_eq!(units(-500_000), "-0.5");
        assert_eq!(units(1), "0.000001");
    }
}
