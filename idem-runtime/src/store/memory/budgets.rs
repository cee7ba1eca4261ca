//! The memory store's budget windows, kept under the same lock as its records: a charge
//! and the record it pays for are one change of the map.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::{Entry, MemoryStore};
use crate::store::budget::{
    Adjusted, Adjustment, BudgetChange, BudgetQuery, BudgetWindow, Charge, WINDOWS_KEPT_MS, change_text,
    check_adjustment, raised_by, takes, window_start,
};
use crate::store::{BudgetStore, RecordId, Reservation, Reserve, StoreError, now_ms};

/// A charged reservation is one change of the map, under its one lock.
impl BudgetStore for MemoryStore {
    async fn reserve_charged(&self, request: Reserve<'_>, charge: Charge<'_>) -> Result<Reservation, StoreError> {
        let mut records = self.lock();
        let now = now_ms();
        let RecordId { namespace, key } = request.id;
        if let Some(existing) = records.get(request.id) {
            return existing.to_record(request.id, now).map(Reservation::Existing);
        }
        let charged = match records.budgets.charge(&charge, now) {
            Ok(charged) => charged,
            Err(window) => return Ok(Reservation::OverBudget(window)),
        };
        let entry = Entry::reserved(&request, now, Some(charged));
        let token = entry.token;
        // As `reserve` does: the namespace is copied only for its first record.
        let keys = match records.keys.get_mut(namespace) {
            Some(keys) => keys,
            None => records.keys.entry(namespace.to_owned()).or_default(),
        };
        keys.insert(key.to_owned(), entry);
        Ok(Reservation::Acquired { token })
    }
}

/// Windows by budget, then scope, then start: a charge finds its window by the names it
/// was given, and its record keeps the names the map holds (shared, not copied).
#[derive(Debug, Default)]
pub(super) struct Budgets(HashMap<Arc<str>, HashMap<Arc<str>, Windows>>);

/// The windows of one budget and scope, with their names.
#[derive(Debug)]
struct Windows {
    budget: Arc<str>,
    scope: Arc<str>,
    by_start: BTreeMap<i64, Window>,
}

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
    budget: Arc<str>,
    scope: Arc<str>,
    start_ms: i64,
    amount: i64,
}

impl Budgets {
    /// Charges `charge` to its window at `now`: what the record keeps, or the window that
    /// would pass its limit.
    #[allow(clippy::result_large_err, reason = "the refusal carries the window; made once per refused call")]
    pub(super) fn charge(&mut self, charge: &Charge<'_>, now: i64) -> Result<Charged, BudgetWindow> {
        let start_ms = window_start(now, charge.window_ms);
        let found = self.0.get_mut(charge.budget).and_then(|scopes| scopes.get_mut(charge.scope));
        if let Some(windows) = found
            && let Some(window) = windows.by_start.get_mut(&start_ms)
        {
            return window.take(charge, (&windows.budget, &windows.scope, start_ms));
        }
        // The window's first charge; a refused one makes no window.
        let mut fresh = Window { window_ms: charge.window_ms, used: 0, limit: charge.limit, raised: 0, adjusted: None };
        let charged = fresh.take(charge, (&Arc::from(charge.budget), &Arc::from(charge.scope), start_ms))?;
        let scopes = self.0.entry(charged.budget.clone()).or_default();
        let windows = scopes.entry(charged.scope.clone()).or_insert_with(|| Windows {
            budget: charged.budget.clone(),
            scope: charged.scope.clone(),
            by_start: BTreeMap::new(),
        });
        windows.by_start.insert(start_ms, fresh);
        Ok(charged)
    }

    fn window_mut(&mut self, budget: &str, scope: &str, start_ms: i64) -> Option<&mut Window> {
        self.0.get_mut(budget)?.get_mut(scope)?.by_start.get_mut(&start_ms)
    }

    /// Every window, with its budget, scope and start.
    fn windows(&self) -> impl Iterator<Item = ((&str, &str, i64), &Window)> {
        self.0.values().flat_map(HashMap::values).flat_map(|windows| {
            windows.by_start.iter().map(|(start_ms, window)| ((&*windows.budget, &*windows.scope, *start_ms), window))
        })
    }

    /// Gives a released record's charge back to the window it was charged to.
    pub(super) fn refund(&mut self, charged: &Charged) {
        if let Some(window) = self.window_mut(&charged.budget, &charged.scope, charged.start_ms) {
            window.used = window.used.saturating_sub(charged.amount).max(0);
        }
    }

    pub(super) fn list(&self, query: &BudgetQuery<'_>, now: i64) -> Vec<BudgetWindow> {
        let mut listed: Vec<BudgetWindow> = self
            .windows()
            .filter(|((budget, scope, _), _)| {
                query.budget.is_none_or(|wanted| wanted == *budget) && query.scope.is_none_or(|wanted| wanted == *scope)
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
        let window = self.window_mut(budget, scope, start_ms).ok_or(StoreError::Fenced)?;
        let change = change_text(adjustment.change, window.used);
        match adjustment.change {
            BudgetChange::Raise(by) => window.raised = raised_by(window.raised, by)?,
            BudgetChange::Reset => window.used = 0,
        }
        let (by, note) = (adjustment.by.to_owned(), adjustment.note.to_owned());
        window.adjusted = Some(Adjusted { by, at_ms: now, change, note });
        Ok(window.read(adjustment.window))
    }

    /// Drops the windows that ended [`WINDOWS_KEPT_MS`] ago or more.
    pub(super) fn purge(&mut self, now: i64) {
        self.0.retain(|_, scopes| {
            scopes.retain(|_, windows| {
                let kept = |start_ms: &i64, window: &mut Window| {
                    start_ms.saturating_add(window.window_ms) + WINDOWS_KEPT_MS > now
                };
                windows.by_start.retain(kept);
                !windows.by_start.is_empty()
            });
            !scopes.is_empty()
        });
    }
}

impl Window {
    /// Charges `charge` if the window takes it, the charge's limit becoming the window's:
    /// what the record keeps. Refused, as the SQL stores refuse, nothing changes: the
    /// window as the charge saw it.
    #[allow(clippy::result_large_err, reason = "the refusal carries the window; made once per refused call")]
    fn take(&mut self, charge: &Charge<'_>, names: (&Arc<str>, &Arc<str>, i64)) -> Result<Charged, BudgetWindow> {
        let (budget, scope, start_ms) = names;
        if !takes(self.used, self.raised, charge) {
            let mut refused = self.read((budget, scope, start_ms));
            refused.limit = charge.limit;
            return Err(refused);
        }
        self.limit = charge.limit;
        self.used += charge.amount;
        Ok(Charged { budget: budget.clone(), scope: scope.clone(), start_ms, amount: charge.amount })
    }

    fn read(&self, (budget, scope, start_ms): (&str, &str, i64)) -> BudgetWindow {
        BudgetWindow::new(
            budget.to_owned(),
            scope.to_owned(),
            (start_ms, self.window_ms),
            self.used,
            self.limit,
            self.raised,
            self.adjusted.clone(),
        )
    }
}
