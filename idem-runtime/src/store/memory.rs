//! The in-memory store: one process, nothing survives a restart.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::budget::{Adjustment, BudgetQuery, BudgetWindow, Charge};
use super::{
    Admin, Completion, ListQuery, ListedRecord, Record, RecordId, RecordState, Renew, Reservation, Reserve, StateCount,
    Store, StoreError, Token, duration_ms, now_ms,
};

mod budgets;

use budgets::{Budgets, Charged};

/// The next fencing token, shared by every `MemoryStore` in the process, so tokens only
/// grow even when a key is released and reserved again, or moved between stores in tests.
static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);

/// A store that keeps records in a map inside the process.
///
/// Meant for tests and for tools that run in one short-lived process: records vanish with
/// the process, so a retry after a restart runs the body again. Use
/// [`SqliteStore`](super::SqliteStore) when retries may outlive the process.
///
/// Every operation holds one mutex for its whole duration, which is what makes
/// [`reserve`](Store::reserve) atomic.
#[derive(Debug, Default)]
pub struct MemoryStore {
    records: Mutex<Records>,
}

/// Records by namespace, then by key, so that a lookup borrows the caller's strings
/// instead of building an owned key: only a new record copies them.
#[derive(Debug, Default)]
struct Records {
    keys: HashMap<String, HashMap<String, Entry>>,
    budgets: Budgets,
}

impl Records {
    fn get(&self, id: RecordId<'_>) -> Option<&Entry> {
        self.keys.get(id.namespace)?.get(id.key)
    }

    fn get_mut(&mut self, id: RecordId<'_>) -> Option<&mut Entry> {
        self.keys.get_mut(id.namespace)?.get_mut(id.key)
    }

    /// Removes an in-progress record whose action did not happen, refunding its charge.
    fn remove_refunding(&mut self, id: RecordId<'_>) {
        if let Some(Entry { charged: Some(charged), .. }) = self.remove(id) {
            self.budgets.refund(&charged);
        }
    }

    fn remove(&mut self, id: RecordId<'_>) -> Option<Entry> {
        let keys = self.keys.get_mut(id.namespace)?;
        let removed = keys.remove(id.key);
        if keys.is_empty() {
            self.keys.remove(id.namespace);
        }
        removed
    }
}

#[derive(Debug)]
struct Entry {
    token: Token,
    request: String,
    created_at_ms: i64,
    updated_at_ms: i64,
    retain_until_ms: Option<i64>,
    progress: Option<String>,
    state: State,
    /// What its reservation charged a budget, refunded if it is released.
    charged: Option<Charged>,
}

#[derive(Debug)]
enum State {
    InProgress {
        lease_until_ms: i64,
    },
    Completed(String),
    Failed(String),
    /// A state this version does not know, only ever planted by a test (see
    /// [`MemoryStore::plant_record`]): it reads as corrupt, as it does in the other stores.
    /// Without `testing` nothing plants one, but the reads keep their answer for it, so the
    /// code that reads records is the same in every build.
    #[cfg_attr(not(any(test, feature = "testing")), allow(dead_code))]
    Unknown(String),
}

impl MemoryStore {
    /// An empty store; the same as [`MemoryStore::default`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Every operation leaves the map consistent before it can panic, so a poisoned lock
    /// still guards valid records.
    fn lock(&self) -> MutexGuard<'_, Records> {
        self.records.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Entry {
    /// A new reservation of `request` at `now`, with a new token, and what it was charged.
    fn reserved(request: &Reserve<'_>, now: i64, charged: Option<Charged>) -> Entry {
        Entry {
            token: Token(NEXT_TOKEN.fetch_add(1, Ordering::Relaxed)),
            request: request.request.to_owned(),
            created_at_ms: now,
            updated_at_ms: now,
            retain_until_ms: None,
            progress: None,
            state: State::InProgress { lease_until_ms: now + duration_ms(request.lease) },
            charged,
        }
    }

    fn to_record(&self, id: RecordId<'_>, now: i64) -> Result<Record, StoreError> {
        let state = match &self.state {
            State::InProgress { lease_until_ms } => {
                let (lease_until_ms, lease_expired) = (*lease_until_ms, *lease_until_ms <= now);
                RecordState::InProgress { lease_until_ms, lease_expired, progress: self.progress.clone() }
            }
            State::Completed(result) => RecordState::Completed { result: result.clone() },
            State::Failed(error) => RecordState::Failed { error: error.clone() },
            State::Unknown(state) => {
                return Err(StoreError::Corrupt(format!("{}/{}: unknown state {state:?}", id.namespace, id.key)));
            }
        };
        Ok(Record {
            request: self.request.clone(),
            token: self.token,
            created_at_ms: self.created_at_ms,
            updated_at_ms: self.updated_at_ms,
            retain_until_ms: self.retain_until_ms,
            state,
        })
    }

    /// Whether `token` holds this record: it is the holder's and not yet settled.
    fn held_by(&self, token: Token) -> bool {
        self.token == token && matches!(self.state, State::InProgress { .. })
    }
}

impl Store for MemoryStore {
    fn reserve(&self, request: Reserve<'_>) -> Result<Reservation, StoreError> {
        let mut records = self.lock();
        let now = now_ms();
        let RecordId { namespace, key } = request.id;
        let keys = match records.keys.get_mut(namespace) {
            Some(keys) => match keys.get(key) {
                Some(existing) => return existing.to_record(request.id, now).map(Reservation::Existing),
                None => keys,
            },
            None => records.keys.entry(namespace.to_owned()).or_default(),
        };
        let entry = Entry::reserved(&request, now, None);
        let token = entry.token;
        keys.insert(key.to_owned(), entry);
        Ok(Reservation::Acquired { token })
    }

    fn reserve_charged(&self, request: Reserve<'_>, charge: Charge<'_>) -> Result<Reservation, StoreError> {
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

    fn take_over(&self, id: RecordId<'_>, expired: Token, lease: Duration) -> Result<Token, StoreError> {
        let mut records = self.lock();
        let now = now_ms();
        let entry = records
            .get_mut(id)
            .filter(|entry| entry.held_by(expired))
            .filter(|entry| matches!(entry.state, State::InProgress { lease_until_ms } if lease_until_ms <= now))
            .ok_or(StoreError::Fenced)?;
        entry.token = Token(NEXT_TOKEN.fetch_add(1, Ordering::Relaxed));
        entry.state = State::InProgress { lease_until_ms: now + duration_ms(lease) };
        entry.updated_at_ms = now;
        entry.progress = None;
        Ok(entry.token)
    }

    fn renew(&self, renewal: Renew<'_>) -> Result<(), StoreError> {
        let mut records = self.lock();
        let entry =
            records.get_mut(renewal.id).filter(|entry| entry.held_by(renewal.token)).ok_or(StoreError::Fenced)?;
        let now = now_ms();
        entry.state = State::InProgress { lease_until_ms: now + duration_ms(renewal.lease) };
        entry.updated_at_ms = now;
        if let Some(progress) = renewal.progress {
            entry.progress = Some(progress.to_owned());
        }
        Ok(())
    }

    fn complete(
        &self,
        id: RecordId<'_>,
        token: Token,
        completion: Completion<'_>,
        retain: Duration,
    ) -> Result<(), StoreError> {
        let mut records = self.lock();
        let entry = records.get_mut(id).filter(|entry| entry.held_by(token)).ok_or(StoreError::Fenced)?;
        entry.state = match completion {
            Completion::Success(result) => State::Completed(result.to_owned()),
            Completion::KeptError(error) => State::Failed(error.to_owned()),
        };
        entry.progress = None;
        let now = now_ms();
        entry.updated_at_ms = now;
        entry.retain_until_ms = Some(now + duration_ms(retain));
        Ok(())
    }

    fn abandon(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        let mut records = self.lock();
        let entry = records.get_mut(id).filter(|entry| entry.held_by(token)).ok_or(StoreError::Fenced)?;
        let now = now_ms();
        entry.state = State::InProgress { lease_until_ms: now };
        entry.updated_at_ms = now;
        Ok(())
    }

    fn release(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        let mut records = self.lock();
        if !records.get(id).is_some_and(|entry| entry.held_by(token)) {
            return Err(StoreError::Fenced);
        }
        records.remove_refunding(id);
        Ok(())
    }

    fn read(&self, id: RecordId<'_>) -> Result<Option<Record>, StoreError> {
        let records = self.lock();
        let now = now_ms();
        records.get(id).map(|entry| entry.to_record(id, now)).transpose()
    }

    fn purge(&self, limit: usize) -> Result<usize, StoreError> {
        let mut records = self.lock();
        let now = now_ms();
        let doomed: Vec<(String, String)> = records
            .keys
            .iter()
            .flat_map(|(namespace, keys)| keys.iter().map(move |(key, entry)| (namespace, key, entry)))
            .filter(|(_, _, entry)| entry.retain_until_ms.is_some_and(|until| until <= now))
            .map(|(namespace, key, _)| (namespace.clone(), key.clone()))
            .take(limit)
            .collect();
        for (namespace, key) in &doomed {
            records.remove(RecordId { namespace, key });
        }
        records.budgets.purge(now);
        Ok(doomed.len())
    }
}

crate::store::async_store_from_sync!(MemoryStore);

impl MemoryStore {
    /// Writes a record in `state` as this store keeps it, bypassing every rule of its
    /// operations: what `testing::conformance::PlantRecord` plants for tests.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn plant_record(&self, id: RecordId<'_>, state: &str) -> Result<(), StoreError> {
        let mut records = self.lock();
        let keys = records.keys.entry(id.namespace.to_owned()).or_default();
        let now = now_ms();
        let entry = Entry {
            token: Token(NEXT_TOKEN.fetch_add(1, Ordering::Relaxed)),
            request: "{}".to_owned(),
            created_at_ms: now,
            updated_at_ms: now,
            retain_until_ms: None,
            progress: None,
            state: State::Unknown(state.to_owned()),
            charged: None,
        };
        keys.insert(id.key.to_owned(), entry);
        Ok(())
    }
}

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
                if super::admin::selects(query, key, &record, now) {
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

#[cfg(test)]
mod tests;
