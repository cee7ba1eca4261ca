//! The operator's operations on the map.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{MemoryStore, NEXT_TOKEN, State};
use crate::store::budget::{Adjustment, BudgetQuery, BudgetWindow};
use crate::store::{Admin, ListQuery, ListedRecord, RecordId, StateCount, StoreError, Token, duration_ms, now_ms};

/// The operator's operations, on the map under its one lock.
impl Admin for MemoryStore {
    fn describe(&self) -> String {
        "memory".to_owned()
    }

    fn list(&self, query: &ListQuery<'_>) -> Result<Vec<ListedRecord>, StoreError> {
        let records = self.lock();
        let now = now_ms();
        let mut listed = Vec::new();
        for (namespace, keys) in &records.keys {
            if query.namespace.is_some_and(|wanted| wanted != namespace) {
                continue;
            }
            for (key, entry) in keys {
                let id = RecordId { namespace, key };
                let record = entry.to_record(id, now)?;
                if crate::store::admin::selects(query, key, &record, now) {
                    listed.push(ListedRecord { namespace: namespace.clone(), key: key.clone(), record });
                }
            }
        }
        listed.sort_by_key(|entry| (entry.record.created_at_ms, entry.record.token));
        listed.truncate(query.limit);
        Ok(listed)
    }

    fn count_matching(&self, query: &ListQuery<'_>) -> Result<u64, StoreError> {
        let all = ListQuery { limit: usize::MAX, ..*query };
        Ok(self.list(&all)?.len() as u64)
    }

    fn count(&self) -> Result<Vec<StateCount>, StoreError> {
        let records = self.lock();
        let now = now_ms();
        let mut counts: std::collections::BTreeMap<(String, String), (u64, i64)> = Default::default();
        for (namespace, keys) in &records.keys {
            for entry in keys.values() {
                let state = match &entry.state {
                    State::InProgress { lease_until_ms } if *lease_until_ms <= now => "abandoned",
                    State::InProgress { .. } => "in_progress",
                    State::Completed(_) => "completed",
                    State::Failed(_) => "failed",
                    State::Unknown(state) => state,
                };
                let count = counts.entry((namespace.clone(), state.to_owned())).or_insert((0, i64::MAX));
                *count = (count.0 + 1, count.1.min(entry.created_at_ms));
            }
        }
        let counts = counts.into_iter();
        Ok(counts
            .map(|((namespace, state), (records, oldest_ms))| StateCount { namespace, state, records, oldest_ms })
            .collect())
    }

    fn resolve_done(&self, id: RecordId<'_>, result: &str, retain: Duration) -> Result<(), StoreError> {
        let mut records = self.lock();
        let now = now_ms();
        match records.get_mut(id) {
            Some(entry) if matches!(entry.state, State::InProgress { .. }) => {
                entry.state = State::Completed(result.to_owned());
                (entry.progress, entry.updated_at_ms) = (None, now);
                entry.retain_until_ms = Some(now.saturating_add(duration_ms(retain)));
                Ok(())
            }
            _ => Err(StoreError::Fenced),
        }
    }

    fn resolve_release(&self, id: RecordId<'_>) -> Result<(), StoreError> {
        let mut records = self.lock();
        match records.get(id) {
            Some(entry) if matches!(entry.state, State::InProgress { .. }) => {
                records.remove_refunding(id);
                Ok(())
            }
            _ => Err(StoreError::Fenced),
        }
    }

    fn reopen(&self, id: RecordId<'_>) -> Result<(), StoreError> {
        let mut records = self.lock();
        let now = now_ms();
        match records.get_mut(id) {
            Some(entry) if matches!(entry.state, State::Completed(_) | State::Failed(_)) => {
                entry.state = State::InProgress { lease_until_ms: now };
                entry.token = Token(NEXT_TOKEN.fetch_add(1, Ordering::Relaxed));
                (entry.progress, entry.retain_until_ms, entry.updated_at_ms) = (None, None, now);
                Ok(())
            }
            _ => Err(StoreError::Fenced),
        }
    }

    fn budgets(&self, query: &BudgetQuery<'_>) -> Result<Vec<BudgetWindow>, StoreError> {
        Ok(self.lock().budgets.list(query, now_ms()))
    }

    fn adjust_budget(&self, adjustment: &Adjustment<'_>) -> Result<BudgetWindow, StoreError> {
        self.lock().budgets.adjust(adjustment, now_ms())
    }
}
