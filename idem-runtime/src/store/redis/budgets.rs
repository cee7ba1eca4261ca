//! Budgets on Redis: each window is a hash (its use, limit, raises and last adjustment),
//! named in the set of windows so that listing never scans the server; each record keeps
//! its charge in its own hash. A charged reservation is one script (`reserve_charged` in
//! `scripts.rs`): read the record, refuse or charge the window, write the record, in the
//! one step Redis runs a script in, so concurrent first calls charge exactly what fits.

use redis::Value;

use super::RedisStore;
use super::fields::{self, legacy_window_prefix, window_key, window_prefix, windows_index};
use super::scripts::SCRIPTS;
use crate::store::budget::{
    Adjustment, BudgetChange, BudgetQuery, BudgetWindow, Charge, check_adjustment, uncountable_raise,
};
use crate::store::{BudgetStore, Reservation, Reserve, StoreError};

/// A charged reservation: one script, as a plain one is (see `ops.rs`).
impl BudgetStore for RedisStore {
    async fn reserve_charged(&self, request: Reserve<'_>, charge: Charge<'_>) -> Result<Reservation, StoreError> {
        self.reserve_async(request, Some(charge)).await
    }
}

impl RedisStore {
    /// The windows `query` selects, newest first: [`Admin::budgets`](crate::store::Admin::budgets).
    pub(super) async fn list_budgets(&self, query: &BudgetQuery<'_>) -> Result<Vec<BudgetWindow>, StoreError> {
        let index = windows_index(&self.prefix);
        let mut members = redis::cmd("SMEMBERS");
        members.arg(index);
        let names: Vec<String> = super::io::run(&self.io, &self.link, "budgets", move |mut connection| async move {
            members.query_async(&mut connection).await
        })
        .await?;
        // Only the windows of the budget (and scope) asked for, by their names (an older
        // version's windows by theirs).
        let wanted = query.budget.map(|budget| {
            [window_prefix(&self.prefix, budget, query.scope), legacy_window_prefix(&self.prefix, budget, query.scope)]
        });
        let names = names
            .into_iter()
            .filter(|name| wanted.as_ref().is_none_or(|wanted| wanted.iter().any(|wanted| name.starts_with(wanted))));
        let (now, hashes) = self.read_keys("budgets", names.collect()).await?;
        let mut listed = Vec::new();
        for found in hashes.iter().filter(|found| !found.is_empty()) {
            let window = fields::window(found, ("", ""), 0, 1, 0)?;
            let wanted = query.budget.is_none_or(|budget| budget == window.budget)
                && query.scope.is_none_or(|scope| scope == window.scope)
                && (!query.current || window.end_ms() > now);
            if wanted {
                listed.push(window);
            }
        }
        listed.sort_by(|a, b| {
            b.start_ms.cmp(&a.start_ms).then_with(|| (&a.budget, &a.scope).cmp(&(&b.budget, &b.scope)))
        });
        Ok(listed)
    }

    /// An operator's change to one window: [`Admin::adjust_budget`](crate::store::Admin::adjust_budget).
    pub(super) async fn adjust(&self, adjustment: &Adjustment<'_>) -> Result<BudgetWindow, StoreError> {
        check_adjustment(adjustment)?;
        let (budget, scope, start_ms) = adjustment.window;
        let (kind, by) = match adjustment.change {
            BudgetChange::Raise(by) => ("raise", by),
            BudgetChange::Reset => ("reset", 0),
        };
        let mut invocation = SCRIPTS.adjust.key(window_key(&self.prefix, budget, scope, start_ms));
        invocation.key(format!("{}{start_ms}", legacy_window_prefix(&self.prefix, budget, Some(scope))));
        invocation.arg(kind).arg(by).arg(adjustment.by).arg(adjustment.note);
        match self.script("adjust budget", invocation).await? {
            Value::Array(items) if items.is_empty() => Err(StoreError::Fenced),
            Value::BulkString(text) if text == b"uncountable" => Err(uncountable_raise(by)),
            reply => fields::window(&fields::hash(fields::texts(reply)?), (budget, scope), start_ms, 1, 0),
        }
    }
}
