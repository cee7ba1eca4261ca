//! The types the store protocol's operations take and return.

use std::time::Duration;

use crate::key::Key;

use super::budget;

/// Which record: the tool's namespace and the derived key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RecordId<'a> {
    /// The tool's identity (by default `module::path::fn_name`), so two tools with the same
    /// template text never share keys by accident.
    pub namespace: &'a str,
    /// The derived key, e.g. `invoice:acme:2026-10`.
    pub key: &'a str,
}

/// A [`RecordId`] that owns its key: what a tool's generated `<tool>_record_id(...)`
/// returns for the key's fields, so that code reading or settling a tool's records through
/// a [`Store`](super::Store) never spells the namespace out by hand.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OwnedRecordId {
    /// The tool's namespace.
    pub namespace: &'static str,
    /// The derived key.
    pub key: Key,
}

impl OwnedRecordId {
    /// The borrowed form that [`Store`](super::Store) methods take.
    pub fn as_record_id(&self) -> RecordId<'_> {
        RecordId { namespace: self.namespace, key: self.key.as_str() }
    }
}

/// A fencing token: proof of holding a reservation. Tokens only grow: a newer holder of a
/// key always has a larger token than any earlier one, so a late finisher cannot complete
/// or release a record that is no longer its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Token(pub u64);

/// A request to reserve a key before the body runs.
#[derive(Clone, Copy, Debug)]
pub struct Reserve<'a> {
    /// The record to create.
    pub id: RecordId<'a>,
    /// The compared fields as canonical JSON (`{}` when there are none), kept with the
    /// reservation so that every later call is compared against the first.
    pub request: &'a str,
    /// How long the reservation holds without a completion before it counts as abandoned.
    pub lease: Duration,
}

/// A renewal of a reservation's lease by its holder, whose body is still running: what
/// keeps a slow call's key its own for as long as it runs (see
/// [`Store::renew`](super::Store::renew)).
#[derive(Clone, Copy, Debug)]
pub struct Renew<'a> {
    /// The record held.
    pub id: RecordId<'a>,
    /// The holder's token.
    pub token: Token,
    /// The new lease, counted from now by the store's clock.
    pub lease: Duration,
    /// A short progress message to keep with the reservation (`idem::progress`); `None`
    /// leaves the stored one as it is.
    pub progress: Option<&'a str>,
}

/// What a reservation attempt found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reservation {
    /// The caller now holds the key and must complete or release it with `token`.
    Acquired {
        /// Fences this holder's completion and release.
        token: Token,
    },
    /// A record for the key exists already.
    Existing(Record),
    /// No record exists, but the charge would take its budget window past its limit: no
    /// record was made and nothing was charged
    /// ([`BudgetStore::reserve_charged`](budget::BudgetStore::reserve_charged) only).
    OverBudget(budget::BudgetWindow),
}

/// A stored record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The compared fields of the first call, as canonical JSON.
    pub request: String,
    /// The holder's (or the last holder's) fencing token.
    pub token: Token,
    /// When the reservation was made, in milliseconds since the Unix epoch, by the
    /// store's clock.
    pub created_at_ms: i64,
    /// When the record last changed (reserved, renewed, taken over, completed), by the
    /// store's clock.
    pub updated_at_ms: i64,
    /// For a settled record: until when it is kept. [`Store::purge`](super::Store::purge)
    /// removes it afterwards.
    pub retain_until_ms: Option<i64>,
    /// Where the record stands.
    pub state: RecordState,
}

/// Where a record stands.
///
/// Non-exhaustive: a later idem may add states, so code that matches one needs a `_` arm;
/// a store still builds each variant as it is.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecordState {
    /// Reserved and not yet settled.
    InProgress {
        /// When the lease ends, by the store's clock.
        lease_until_ms: i64,
        /// Whether the lease has ended, judged by the store's clock (for PostgreSQL, the
        /// server's), never a worker's.
        lease_expired: bool,
        /// The last progress message the running body reported (`idem::progress`), if any.
        progress: Option<String>,
    },
    /// The body succeeded; its result as JSON.
    Completed {
        /// The serialized result.
        result: String,
    },
    /// The body failed and the tool keeps errors as final (`on_error = keep`); the error
    /// as JSON.
    Failed {
        /// The serialized error.
        error: String,
    },
}

impl RecordState {
    /// The state a bundled store's row holds, from its `state`, `result` and lease
    /// (end, ended) columns, or why the row breaks the invariants every store keeps: a
    /// known state, a lease for an in-progress record, a result for a settled one.
    /// `result` is only looked at for settled states and `lease` only for in-progress ones,
    /// so a store need not read what the state does not use.
    pub(crate) fn from_columns(
        state: &str,
        result: Option<String>,
        lease: (Option<i64>, Option<bool>),
        progress: Option<String>,
    ) -> Result<RecordState, String> {
        match (state, result, lease) {
            ("in_progress", _, (Some(lease_until_ms), Some(lease_expired))) => {
                Ok(RecordState::InProgress { lease_until_ms, lease_expired, progress })
            }
            ("in_progress", _, _) => Err("in progress without a lease end".to_owned()),
            ("completed", Some(result), _) => Ok(RecordState::Completed { result }),
            ("failed", Some(error), _) => Ok(RecordState::Failed { error }),
            ("completed" | "failed", None, _) => Err("settled without a result".to_owned()),
            (other, ..) => Err(format!("unknown state {other:?}")),
        }
    }
}

/// How a reservation is settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completion<'a> {
    /// The body succeeded with this result, as JSON.
    Success(&'a str),
    /// The body failed with this error, as JSON, and the error is kept as the final answer.
    KeptError(&'a str),
}

/// Why a store operation failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum StoreError {
    /// The token no longer holds the record: its lease was taken over, or it was released
    /// or completed already. The record was not changed.
    Fenced,
    /// The stored record cannot be read (unknown state, malformed columns).
    Corrupt(String),
    /// The record is locked by a writer that has not committed yet, such as a
    /// [`PgStore::begin`](super::postgres::PgStore::begin) transaction still open: the key is in
    /// progress, but its record cannot be read until that writer ends. Nothing changed. A
    /// tool call is told `IN_PROGRESS`.
    Locked,
    /// The backend failed: I/O, driver, lock timeout, unreachable server.
    Backend(Box<dyn std::error::Error + Send + Sync>),
    /// An operator's operation was refused for what it asked (the message says why), such
    /// as a budget adjustment without a note. Nothing changed.
    Refused(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Fenced => f.write_str("the reservation is no longer held by this token"),
            StoreError::Corrupt(what) => write!(f, "corrupt record: {what}"),
            StoreError::Locked => f.write_str("the record is locked by a transaction that has not committed yet"),
            StoreError::Backend(error) => write!(f, "store failed: {error}"),
            StoreError::Refused(why) => write!(f, "refused: {why}"),
        }
    }
}

impl StoreError {
    /// Whether the store gave up waiting for an answer: a [`Backend`](StoreError::Backend)
    /// error that is, or was caused by, an [`std::io::Error`] of kind `TimedOut`.
    pub(crate) fn ran_out_of_time(&self) -> bool {
        let StoreError::Backend(error) = self else { return false };
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&**error);
        while let Some(error) = cause {
            if error.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::TimedOut) {
                return true;
            }
            cause = error.source();
        }
        false
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Backend(error) => Some(&**error),
            _ => None,
        }
    }
}
