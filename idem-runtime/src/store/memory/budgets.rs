//! The memory store's budget windows, kept under the same lock as its records: a charge
//! and the record it pays for are one change of the map.

use std::collections::BTreeMap;

use super::{Entry, MemoryStore};
use crate::store::budget::{
    Adjusted, Adjustment, BudgetChange, BudgetQuery, BudgetWindow, Charge, WINDOWS_KEPT_MS, change_text,
    check_adjustment, raised_by, takes, window_start,
};
use crate::store::{BudgetStore, Reservation, Reserve, StoreError, now_ms};

/// A charged reservation is one change of the map, under its one lock.
impl BudgetStore for MemoryStore {
    async fn reserve_charged(&self, request: Reserve<'_>, charge: Charge<'_>) -> Result<Reservation, StoreError> {
        let mut records = self.lock();
        let now = now_ms();
        if let Some(existing) = records.get(request.id) {
            return existing.to_record(request.id, now).map(Reservation::Existing);
        }
        let charged = match records.budgets.charge(&charge, now) {
            Ok(charged) => charged,
            Err(window) => return Ok(Reservation::OverBudget(window)),
        };
        let entry = Entry::reserved(&request, now, Some(charged));
        let token = entry.token;
        let keys = records.keys.entry(request.id.namespace.to_owned()).or_default();
        keys.insert(request.id.key.to_owned(), entry);
        Ok(Reservation::Acquired { token })
    }
}

/// Windows by (budget, scope, start).
#[derive(Debug, Default)]
pub(super) struct Budgets(BTreeMap<(String, String, i64), Window>);

#[derive(Debug)]
struct Window {
    window_ms: i64,
    used: i64,
    limit: i64,
    raised: i64,
    adjusted: Option<Adjusted>,
}

/// What a record was charged, to refund it when the record is released.
#[derive(Debug, Clone)]
pub(super) struct Charged {
    budget: String,
    scope: String,
    start_ms: i64,
    amount: i64,
}

impl Budgets {
    /// Charges `charge` to its window at `now`: what the record keeps, or the window that
    /// would pass its limit.
    #[allow(clippy::result_large_err, reason = "the refusal carries the window; made once per refused call")]
    pub(super) fn charge(&mut self, charge: &Charge<'_>, now: i64) -> Result<Charged, BudgetWindow> {
        let start_ms = window_start(now, charge.window_ms);
        let key = (charge.budget.to_owned(), charge.scope.to_owned(), start_ms);
        let fresh = Window { window_ms: charge.window_ms, used: 0, limit: charge.limit, raised: 0, adjusted: None };
        let current = self.0.get(&key).unwrap_or(&fresh);
        if !takes(current.used, current.raised, charge) {
            // Refused, as the SQL stores refuse: nothing changes, not even a window made.
            let mut refused = current.read(&key);
            refused.limit = charge.limit;
            return Err(refused);
        }
        let window = self.0.entry(key.clone()).or_insert(fresh);
        window.limit = charge.limit;
        window.used += charge.amount;
        Ok(Charged { budget: key.0, scope: key.1, start_ms, amount: charge.amount })
    }

    /// Gives a released record's charge back to the window it was charged to.
    pub(super) fn refund(&mut self, charged: &Charged) {
        let key = (charged.budget.clone(), charged.scope.clone(), charged.start_ms);
        if let Some(window) = self.0.get_mut(&key) {
            window.used = window.used.saturating_sub(charged.amount).max(0);
        }
    }

    pub(super) fn list(&self, query: &BudgetQuery<'_>, now: i64) -> Vec<BudgetWindow> {
        let mut listed: Vec<BudgetWindow> = self
            .0
            .iter()
            .filter(|((budget, scope, _), _)| {
                query.budget.is_none_or(|wanted| wanted == budget) && query.scope.is_none_or(|wanted| wanted == scope)
            })
            .map(|(key, window)| window.read(key))
            .filter(|window| !query.current || window.end_ms() > now)
            .collect();
        listed.sort_by(|a, b| {
            b.start_ms.cmp(&a.start_ms).then_with(|| (&a.budget, &a.scope).cmp(&(&b.budget, &b.scope)))
        });
        listed
    }

    pub(super) fn adjust(&mut self, adjustment: &Adjustment<'_>, now: i64) -> Result<BudgetWindow, StoreError> {
        check_adjustment(adjustment)?;
        let (budget, scope, start_ms) = adjustment.window;
        let key = (budget.to_owned(), scope.to_owned(), start_ms);
        let window = self.0.get_mut(&key).ok_or(StoreError::Fenced)?;
        let change = change_text(adjustment.change, window.used);
        match adjustment.change {
            BudgetChange::Raise(by) => window.raised = raised_by(window.raised, by)?,
            BudgetChange::Reset => window.used = 0,
        }
        let (by, note) = (adjustment.by.to_owned(), adjustment.note.to_owned());
        window.adjusted = Some(Adjusted { by, at_ms: now, change, note });
        Ok(window.read(&key))
    }

    /// Drops the windows that ended [`WINDOWS_KEPT_MS`] ago or more.
    pub(super) fn purge(&mut self, now: i64) {
        self.0.retain(|(_, _, start_ms), window| start_ms.saturating_add(window.window_ms) + WINDOWS_KEPT_MS > now);
    }
}

impl Window {
    fn read(&self, (budget, scope, start_ms): &(String, String, i64)) -> BudgetWindow {
        BudgetWindow::new(
            budget.clone(),
            scope.clone(),
            (*start_ms, self.window_ms),
            self.used,
            self.limit,
            self.raised,
            self.adjusted.clone(),
        )
    }
}
