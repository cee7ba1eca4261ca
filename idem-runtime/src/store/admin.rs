//! What an operator does with a store, whichever it is: list and count records, show one,
//! settle a stuck key by hand once the provider says what happened, undo a wrong
//! settlement, purge. Tools never call these; the `idem` command does.

use std::time::Duration;

use super::budget::{Adjustment, BudgetQuery, BudgetWindow};
use super::{DynStore, Record, RecordId, RecordState, StoreError};

/// Which records [`Admin::list`] returns, by state. Non-exhaustive: it gains a filter with
/// each new [`RecordState`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum StateFilter {
    /// Every record.
    #[default]
    All,
    /// Reserved and not settled, lease live or not.
    InProgress,
    /// Reserved, not settled, and its lease live: the call is running.
    Running,
    /// Reserved, not settled, and its lease has ended: the outcome is unknown.
    Abandoned,
    /// Completed with a result.
    Completed,
    /// Settled with a kept error.
    Failed,
}

impl StateFilter {
    /// The `state` column the filter selects (an abandoned record is `in_progress`, its
    /// lease ended), `None` for every record.
    pub(crate) fn stored_state(self) -> Option<&'static str> {
        match self {
            StateFilter::All => None,
            StateFilter::InProgress | StateFilter::Running | StateFilter::Abandoned => Some("in_progress"),
            StateFilter::Completed => Some("completed"),
            StateFilter::Failed => Some("failed"),
        }
    }

    /// Whether the filter asks for a live lease (`Some(true)`), an ended one
    /// (`Some(false)`), or does not look at leases.
    pub(crate) fn lease_live(self) -> Option<bool> {
        match self {
            StateFilter::Running => Some(true),
            StateFilter::Abandoned => Some(false),
            _ => None,
        }
    }
}

/// Which records [`Admin::list`] returns: every condition given must hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListQuery<'a> {
    /// By state.
    pub state: StateFilter,
    /// Of this namespace only.
    pub namespace: Option<&'a str>,
    /// Whose key starts with this text, e.g. [`scope_prefix`](crate::store::scope_prefix)`("acme")`
    /// for one scope's records.
    pub key_prefix: Option<&'a str>,
    /// Reserved at least this long ago, by the store's clock.
    pub older_than: Option<Duration>,
    /// At most this many, the oldest first.
    pub limit: usize,
}

impl Default for ListQuery<'_> {
    fn default() -> Self {
        ListQuery { state: StateFilter::All, namespace: None, key_prefix: None, older_than: None, limit: 100 }
    }
}

/// A record with the key it belongs to. Read its fields; build one with
/// [`ListedRecord::new`] (it may gain fields).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListedRecord {
    /// The tool's namespace.
    pub namespace: String,
    /// The derived key.
    pub key: String,
    /// The record.
    pub record: Record,
}

impl ListedRecord {
    /// The record under `namespace` and `key`.
    pub fn new(namespace: impl Into<String>, key: impl Into<String>, record: Record) -> Self {
        ListedRecord { namespace: namespace.into(), key: key.into(), record }
    }
}

/// How many records of one namespace are in one state: what [`Admin::count`] returns.
/// Read its fields; build one with [`StateCount::new`] (it may gain fields).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct StateCount {
    /// The tool's namespace.
    pub namespace: String,
    /// `in_progress` (lease live), `abandoned` (lease ended), `completed` or `failed`; a
    /// state a newer idem wrote is given as stored.
    pub state: String,
    /// How many.
    pub records: u64,
    /// When the oldest of them was reserved, in milliseconds since the Unix epoch.
    pub oldest_ms: i64,
}

impl StateCount {
    /// `records` records of `namespace` in `state`, the oldest reserved at `oldest_ms`.
    pub fn new(namespace: impl Into<String>, state: impl Into<String>, records: u64, oldest_ms: i64) -> Self {
        StateCount { namespace: namespace.into(), state: state.into(), records, oldest_ms }
    }
}

/// An operator's operations on a store, beyond a [`Store`](super::Store)'s own (`read` to
/// show one record, `purge`), implemented by every bundled store. Every change is fenced by
/// the record's state, never by a token: an operator settles whatever holds the key, and
/// the holder, if it still runs, is fenced.
///
/// Sync, as its caller, the operator's command, is: operators' operations are rare and off
/// every tool's path, and a store that waits on a network waits in them with
/// [`block_on`](super::block_on) (the PostgreSQL and Redis stores block the calling thread
/// for each). Its supertrait is [`DynStore`], which every [`Store`](super::Store) is, so
/// that `Box<dyn Admin>` holds a store chosen at run time (the `idem` command's), and
/// [`as_dyn_store`](DynStore::as_dyn_store) reaches its `Store` operations.
///
/// The `idem` command (crate `idem-cli`) runs these for operators; its README says what
/// each command does and refuses. In code, one scope's records are
/// `ListQuery { key_prefix: Some(&idem::store::scope_prefix("acme")), ..ListQuery::default() }`,
/// and a store of your own checks its implementation with
/// `idem::testing::conformance::check_admin` (feature `testing`).
pub trait Admin: DynStore {
    /// What the store is, for messages: `SQLite /var/lib/app/idem.db`,
    /// `PostgreSQL app@db:5432/app (schema idem)`, `memory`.
    fn describe(&self) -> String;

    /// The records `query` selects, oldest first (by reservation time, then token).
    fn list(&self, query: &ListQuery<'_>) -> Result<Vec<ListedRecord>, StoreError>;

    /// How many records `query` selects, whatever its `limit`: with [`list`](Self::list),
    /// how many a listing that stopped at its limit left out.
    fn count_matching(&self, query: &ListQuery<'_>) -> Result<u64, StoreError>;

    /// Records per namespace and state, by namespace then state; an in-progress record
    /// whose lease has ended counts as `abandoned`.
    fn count(&self) -> Result<Vec<StateCount>, StoreError>;

    /// Marks an in-progress key done with `result` (JSON, as the tool stores its results),
    /// kept for `retain`: for an operator who checked with the provider that the action
    /// happened. [`StoreError::Fenced`] when the key is not in progress.
    fn resolve_done(&self, id: RecordId<'_>, result: &str, retain: Duration) -> Result<(), StoreError>;

    /// Deletes an in-progress key, so that the next call runs the action: for an operator
    /// who checked with the provider that it did not happen. [`StoreError::Fenced`] when
    /// the key is not in progress.
    fn resolve_release(&self, id: RecordId<'_>) -> Result<(), StoreError>;

    /// Puts a settled (completed or failed) record back in progress with its lease ended,
    /// its result dropped and a new token: it reads as abandoned, so the next call runs the
    /// tool's `reconcile` hook or answers OUTCOME_UNKNOWN. Undoes a wrong `resolve_done`.
    /// [`StoreError::Fenced`] when the record is not settled.
    fn reopen(&self, id: RecordId<'_>) -> Result<(), StoreError>;

    /// The budget windows `query` selects, newest first (by start, then budget and scope).
    /// The default, for a store that keeps no budgets (no [`BudgetStore`](super::BudgetStore)),
    /// has none.
    fn budgets(&self, query: &BudgetQuery<'_>) -> Result<Vec<BudgetWindow>, StoreError> {
        let _ = query;
        Ok(Vec::new())
    }

    /// Raises one window's limit or resets its use, recording who, when and why (the
    /// window's [`adjusted`](BudgetWindow::adjusted)); returns the window as it now stands.
    /// [`StoreError::Fenced`] when no such window was ever charged; [`StoreError::Refused`]
    /// for an adjustment without `by` or `note`, or a raise of zero or less. Nothing changes
    /// when it fails. The default, for a store that keeps no budgets, has no window to
    /// change: it refuses what every store refuses, and answers [`StoreError::Fenced`] to
    /// the rest.
    fn adjust_budget(&self, adjustment: &Adjustment<'_>) -> Result<BudgetWindow, StoreError> {
        super::budget::check_adjustment(adjustment)?;
        Err(StoreError::Fenced)
    }
}

/// Whether `query` selects the record under `key`, read at `now_ms` by the store's clock:
/// for stores that filter in Rust (the memory store).
pub(crate) fn selects(query: &ListQuery<'_>, key: &str, record: &Record, now_ms: i64) -> bool {
    let state = match (&record.state, query.state) {
        (_, StateFilter::All) => true,
        (RecordState::InProgress { .. }, StateFilter::InProgress) => true,
        (RecordState::InProgress { lease_expired, .. }, StateFilter::Running) => !*lease_expired,
        (RecordState::InProgress { lease_expired, .. }, StateFilter::Abandoned) => *lease_expired,
        (RecordState::Completed { .. }, StateFilter::Completed) => true,
        (RecordState::Failed { .. }, StateFilter::Failed) => true,
        _ => false,
    };
    let old = |age: Duration| {
        now_ms.saturating_sub(record.created_at_ms) >= i64::try_from(age.as_millis()).unwrap_or(i64::MAX)
    };
    state && query.key_prefix.is_none_or(|prefix| key.starts_with(prefix)) && query.older_than.is_none_or(old)
}
