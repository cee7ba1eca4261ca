//! The in-memory store: one process, nothing survives a restart.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::{Record, RecordId, RecordState, Reserve, StoreError, Token, duration_ms};

mod admin;
mod budgets;
mod ops;

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
/// [`reserve`](super::Store::reserve) atomic.
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

impl MemoryStore {
    /// Writes a record in `state` as this store keeps it, bypassing every rule of its
    /// operations: what `testing::conformance::PlantRecord` plants for tests.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn plant_record(&self, id: RecordId<'_>, state: &str) -> Result<(), StoreError> {
        let mut records = self.lock();
        let keys = records.keys.entry(id.namespace.to_owned()).or_default();
        let now = super::now_ms();
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

#[cfg(test)]
mod tests;
