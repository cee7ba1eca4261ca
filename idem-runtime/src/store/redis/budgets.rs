//! Budgets on Redis: each window is a hash (its use, limit, raises and last adjustment),
//! named in the set of windows so that listing never scans the server; each record keeps
//! its charge in its own hash. A charged reservation is one script (`reserve_charged` in
//! `scripts.rs`): read the record, refuse or charge the window, write the record, in the
//! one step Redis runs a script in, so concurrent first calls charge exactly what fits.

use redis::Value;

use super::RedisStore;
use super::fields;
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
        // A budget's windows of one scope are in one shard; else every shard has some.
        let shards = match (query.budget, query.scope) {
            (Some(budget), Some(scope)) => vec![self.keys.window_shard(budget, scope)],
            _ => (0..self.keys.shards()).collect(),
        };
        let mut hashes = Vec::new();
        let mut now = 0;
        for shard in shards {
            let mut members = redis::cmd("SMEMBERS");
            members.arg(self.keys.windows(shard));
            let names: Vec<String> = self.command("budgets", shard, members).await?;
            // Only the windows of the budget (and scope) asked for, by their names (an older
            // version's windows by theirs).
            let wanted = query.budget.map(|budget| {
                [
                    self.keys.window_prefix(shard, budget, query.scope),
                    self.keys.legacy_window_prefix(budget, query.scope),
                ]
            });
            let names = names.into_iter().filter(|name| {
                wanted.as_ref().is_none_or(|wanted| wanted.iter().any(|wanted| name.starts_with(wanted)))
            });
            let (read_at, found) = self.read_keys("budgets", shard, names.collect()).await?;
            now = read_at;
            hashes.extend(found);
        }
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
        let (shard, window) = self.keys.window(budget, scope, start_ms);
        let mut invocation = SCRIPTS.adjust.key(window.clone());
        invocation.key(match self.keys.cluster {
            true => window,
            false => format!("{}{start_ms}", self.keys.legacy_window_prefix(budget, Some(scope))),
        });
        invocation.arg(kind).arg(by).arg(adjustment.by).arg(adjustment.note);
        match self.script("adjust budget", shard, invocation).await? {
            Value::Array(items) if items.is_empty() => Err(StoreError::Fenced),
            Value::BulkString(text) if text == b"uncountable" => Err(uncountable_raise(by)),
            reply => fields::window(&fields::hash(fields::texts(reply)?), (budget, scope), start_ms, 1, 0),
        }
    }
}
