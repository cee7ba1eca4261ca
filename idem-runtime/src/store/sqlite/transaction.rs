//! Transactional mode: for effects that live in the store's own database, the key, the
//! body's writes and the result commit together, or roll back together.
//!
//! A tool whose effect is a write to the same database as its idempotency records needs
//! no lease, no reconciliation and no "outcome unknown": it opens one transaction,
//! reserves the key in it, runs the body's writes in it, completes the key in it, and
//! commits. A crash or an error at any point leaves nothing behind, so a retry is always
//! safe, and a duplicate finds either nothing (and runs) or the committed result (and
//! replays). This module has the SQLite form, [`SqliteStore::transaction`], and what the
//! PostgreSQL form (`PgStore::begin`, behind the `postgres` feature) shares with it.
//!
//! The sync form takes the body as a closure, which may borrow anything. The async form
//! hands back the open transaction as a guard instead (`begin`, your writes, `commit`, as
//! with sqlx): a closure returning a boxed future that borrows the transaction could not
//! also borrow the caller's locals.

use std::time::Duration;

use rusqlite::{Transaction, TransactionBehavior};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::ops::{COMPLETE, INSERT, read_record};
use super::{SqliteStore, backend, duration_ms};
use crate::canonical::write_canonical;
use crate::difference::differences;
use crate::error::{Error, ErrorCode};
use crate::output::replay_value;
use crate::store::{Record, RecordId, RecordState, StoreError};

/// How a transactional call was answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transacted<T> {
    /// The body ran now; its writes, the key and this result were committed together.
    Ran(T),
    /// The key was completed earlier with the same compared fields: the stored result.
    /// The body did not run. It is read by [`replay_value`](crate::frameworks::replay_value): with the
    /// replay marker where the type asks for it (a `replayed` field, a `serde_json::Value`).
    Replayed(T),
}

impl<T> Transacted<T> {
    /// The result, whether it ran now or was replayed.
    pub fn into_inner(self) -> T {
        match self {
            Transacted::Ran(value) | Transacted::Replayed(value) => value,
        }
    }

    /// Whether this is a replay of an earlier call's result.
    pub fn is_replay(&self) -> bool {
        matches!(self, Transacted::Replayed(_))
    }
}

/// Why a transactional call returned no result. In every case nothing was committed.
#[derive(Debug)]
pub enum TransactionError<E> {
    /// The body returned this error. Its writes and the key were rolled back, so the
    /// action did not happen and a retry may run it.
    Body(E),
    /// idem answered instead of running the body: `CONFLICT` (other compared fields),
    /// `IN_PROGRESS` (a duplicate still holds the key), `OUTCOME_UNKNOWN`,
    /// `RECORD_UNREADABLE`, `INVALID_KEY`, or `STORE_UNAVAILABLE` (retryable).
    Idem(Error),
}

impl<E> From<Error> for TransactionError<E> {
    fn from(error: Error) -> Self {
        TransactionError::Idem(error)
    }
}

impl<E: std::fmt::Display> std::fmt::Display for TransactionError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TransactionError::Body(error) => write!(f, "the body failed and was rolled back: {error}"),
            TransactionError::Idem(error) => write!(f, "{error}"),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for TransactionError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TransactionError::Body(error) => Some(error),
            TransactionError::Idem(error) => Some(error),
        }
    }
}

/// How often a transactional call tries again when the record it lost to vanished.
pub(crate) const ROUNDS: usize = 3;

/// The compared fields as canonical JSON: a JSON object, or `()` for none.
pub(crate) fn canonical_request(id: RecordId<'_>, compare: &(impl Serialize + ?Sized)) -> Result<String, Error> {
    let invalid = |why: String| {
        Error::new(ErrorCode::InvalidKey, format!("{}: {}: {why}; nothing was run", id.namespace, id.key))
    };
    let value = serde_json::to_value(compare).map_err(|e| invalid(format!("compared fields: {e}")))?;
    if value.is_null() {
        return Ok("{}".to_owned()); // `&()`: nothing to compare
    }
    if !value.is_object() {
        return Err(invalid(format!("compared fields must be a JSON object (a struct or a map), got {value}")));
    }
    let mut out = String::new();
    write_canonical(&value, &mut out);
    Ok(out)
}

/// The answer to a call that found `record`: a replay, or why not. CONFLICT is judged
/// first, as for every idem call.
pub(crate) fn answer_existing<T: DeserializeOwned, E>(
    id: RecordId<'_>,
    request: &str,
    record: Record,
) -> Result<Transacted<T>, TransactionError<E>> {
    let what = format!("{}: {}", id.namespace, id.key);
    let differing = differences(&record.request, request);
    if !differing.is_empty() {
        let list: Vec<String> =
            differing.iter().map(|d| format!("{} was {}, now {}", d.field, d.stored_text, d.requested_text)).collect();
        let error = Error::new(
            ErrorCode::Conflict,
            format!("{what} was already requested with other values: {}", list.join("; ")),
        )
        .with_suggestion("ask the user before changing or adding anything")
        .with_differences(differing);
        return Err(error.into());
    }
    let error = match record.state {
        RecordState::Completed { result } => {
            return replay_value(&result).map(Transacted::Replayed).map_err(|e| {
                Error::new(ErrorCode::RecordUnreadable, format!("{what}: the stored result does not read back ({e})"))
                    .with_suggestion("a person must inspect the record")
                    .into()
            });
        }
        RecordState::Failed { error } => Error::new(
            ErrorCode::RecordUnreadable,
            format!("{what}: a non-transactional call kept the error {error} for this key"),
        )
        .with_suggestion("use one namespace per mode"),
        RecordState::InProgress { lease_expired: false, .. } => in_progress(id),
        RecordState::InProgress { lease_expired: true, .. } => Error::new(
            ErrorCode::OutcomeUnknown,
            format!("{what}: a non-transactional call stopped before it finished; it may or may not have happened"),
        )
        .with_suggestion("check with a person before running it again"),
    };
    Err(error.into())
}

pub(crate) fn in_progress(id: RecordId<'_>) -> Error {
    Error::new(ErrorCode::InProgress, format!("{}: {} is still in progress", id.namespace, id.key))
        .with_suggestion("do not run it again; look for its result in a few seconds")
}

/// The store failed: RECORD_UNREADABLE for a record it cannot interpret (no retry can
/// fix that), STORE_UNAVAILABLE (retryable) for a failure of the backend.
pub(crate) fn unavailable(id: RecordId<'_>, error: &StoreError) -> Error {
    if let StoreError::Corrupt(why) = error {
        let (namespace, key) = (id.namespace, id.key);
        return Error::new(
            ErrorCode::RecordUnreadable,
            format!(
                "{namespace}: {key}: the record cannot be read ({why}): a newer idem may have written it, or it \
                 was damaged; nothing was run"
            ),
        )
        .with_suggestion(format!(
            "do not retry: a person must inspect the record (namespace {namespace}, key {key}) and settle or remove it"
        ));
    }
    Error::new(
        ErrorCode::StoreUnavailable,
        format!("{}: {}: the store failed ({}); nothing was committed", id.namespace, id.key, error.backend_text()),
    )
    .with_suggestion("retry in a moment")
}

pub(crate) fn unserializable(id: RecordId<'_>, error: &serde_json::Error) -> Error {
    Error::new(
        ErrorCode::RecordUnreadable,
        format!("{}: {}: the result cannot be serialized ({error}); everything was rolled back", id.namespace, id.key),
    )
    .with_suggestion("fix the result type")
}

impl SqliteStore {
    /// Runs `body` at most once per `id`, in one SQLite transaction with the key: the
    /// reservation, the body's writes and the completion commit together, or roll back
    /// together when the body returns `Err` or panics (then no reservation is left).
    ///
    /// For effects in this store's own file: create your tables in it (or `ATTACH` it).
    /// The transaction is `BEGIN IMMEDIATE`, so it holds the file's write lock while the
    /// body runs: keep bodies short, since every writer of the file waits for them (up to
    /// the busy timeout). A duplicate waits for the first call to commit, then replays its
    /// result; `compare` (a struct or map of the fields that must match, `&()` for none)
    /// makes a repeat with other values a `CONFLICT`. The result is kept for `retain`.
    ///
    /// ```
    /// use idem_runtime::store::{RecordId, Transacted};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let store = idem_runtime::SqliteStore::open(dir.path().join("shop.db")).unwrap();
    /// # store.transaction(RecordId { namespace: "setup", key: "tables" }, &(), idem_runtime::store::DEFAULT_RETAIN, |tx| {
    /// #     tx.execute("CREATE TABLE orders (id TEXT PRIMARY KEY, amount INTEGER)", []).map(|_| ())
    /// # }).unwrap();
    /// let place_order = |id: &str, amount: i64| {
    ///     let compare = serde_json::json!({ "amount": amount });
    ///     store.transaction(RecordId { namespace: "shop.orders", key: id }, &compare, idem_runtime::store::DEFAULT_RETAIN, |tx| {
    ///         tx.execute("INSERT INTO orders VALUES (?1, ?2)", (id, amount))?;
    ///         Ok::<_, rusqlite::Error>(format!("order {id}: {amount}"))
    ///     })
    /// };
    /// assert_eq!(place_order("o-1", 120).unwrap(), Transacted::Ran("order o-1: 120".to_string()));
    /// assert!(place_order("o-1", 120).unwrap().is_replay()); // no second row
    /// ```
    pub fn transaction<T, E, F>(
        &self,
        id: RecordId<'_>,
        compare: &(impl Serialize + ?Sized),
        retain: Duration,
        body: F,
    ) -> Result<Transacted<T>, TransactionError<E>>
    where
        T: Serialize + DeserializeOwned,
        F: FnOnce(&Transaction<'_>) -> Result<T, E>,
    {
        let request = canonical_request(id, compare)?;
        let mut body = Some(body);
        let ran = self.with_write("begin", |conn| Ok(self.transact(conn, id, &request, retain, &mut body)));
        ran.map_err(|e| TransactionError::Idem(unavailable(id, &e)))?
    }

    fn transact<T, E, F>(
        &self,
        conn: &rusqlite::Connection,
        id: RecordId<'_>,
        request: &str,
        retain: Duration,
        body: &mut Option<F>,
    ) -> Result<Transacted<T>, TransactionError<E>>
    where
        T: Serialize + DeserializeOwned,
        F: FnOnce(&Transaction<'_>) -> Result<T, E>,
    {
        let unavailable =
            |operation, e: StoreError| TransactionError::Idem(unavailable(id, &self.within(e, operation)));
        let lease = duration_ms(crate::store::DEFAULT_LEASE);
        for _ in 0..ROUNDS {
            self.check_file().map_err(|e| unavailable("begin", e))?;
            // Dropping `tx` without a commit rolls it back: on an early return, or a panic.
            let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate)
                .map_err(|e| unavailable("begin", backend(e)))?;
            let inserted = tx
                .prepare_cached(INSERT)
                .and_then(|mut stmt| stmt.execute((id.namespace, id.key, request, lease)))
                .map_err(|e| unavailable("reserve", backend(e)))?;
            if inserted == 0 {
                match read_record(&tx, id).map_err(|e| unavailable("read", e))? {
                    Some(record) => return answer_existing(id, request, record),
                    None => continue,
                }
            }
            // `INSERT` has no `RETURNING` (it would build a temporary table): the new row's
            // rowid is the token.
            let token = tx.last_insert_rowid();
            let body = body.take().expect("the body runs at most once");
            let value = body(&tx).map_err(TransactionError::Body)?;
            let json = serde_json::to_string(&value).map_err(|e| TransactionError::Idem(unserializable(id, &e)))?;
            let changed = tx
                .prepare_cached(COMPLETE)
                .and_then(|mut stmt| {
                    stmt.execute(("completed", json, token, id.namespace, id.key, duration_ms(retain)))
                })
                .map_err(|e| unavailable("complete", backend(e)))?;
            if changed != 1 {
                return Err(unavailable(
                    "complete",
                    StoreError::Backend("the body's writes removed its own key".into()),
                ));
            }
            tx.commit().map_err(|e| unavailable("commit", backend(e)))?;
            return Ok(Transacted::Ran(value));
        }
        let vanished = format!("the existing record vanished {ROUNDS} times in a row");
        Err(unavailable("reserve", StoreError::Backend(vanished.into())))
    }
}
