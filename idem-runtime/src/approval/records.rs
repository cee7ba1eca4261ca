//! What an approval keeps in the store: write-once records of the namespace [`NAMESPACE`]
//! (see `store::once`), per action and per **round** (a round is one request and what
//! came of it; a new round starts after an expiry or an operator's reopen):
//!
//! - `<action>/<round>/request`: what a person is asked to approve (the key, the compared
//!   fields, the text, the time to live); written by the first call that needs it;
//! - `<action>/<round>/decision`: approved or declined, by whom, with a note;
//! - `<action>/<round>/expired`: the first call after the request's time to live found it
//!   without a decision (that call answered APPROVAL_EXPIRED; the next one asks anew);
//! - `<action>/<round>/reopened`: an operator reopened a declined round.
//!
//! `<action>` is 32 hex digits of the SHA-256 of the namespace and key: fixed length, so
//! no key text can reach another action's records. Each record is written once; the
//! store's unique constraint picks the first writer, so concurrent callers make one
//! request, and a decision cannot be overwritten.

use std::time::Duration;

use serde_json::{Value, json};

use crate::store::once::{self, Put};
use crate::store::{RecordId, Store, StoreError};

use super::{Decision, Request};

/// The namespace of the records approvals keep.
pub(crate) const NAMESPACE: &str = "idem.approvals";

/// How long the records of a round are kept after they were written: a decided round must
/// outlive its action's run. A century, which every store's clock arithmetic holds; `idem
/// purge` never removes them before.
const KEPT: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// The records of one action.
pub(crate) struct Action {
    prefix: String,
}

/// Where an action's approval stands: its latest round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Current {
    /// No round is open: the next request is round `next`. `closed` is how the last round
    /// ended, if there was one.
    Idle { next: u32, closed: Option<(Request, Closed)> },
    /// Round `round` is open: its request, and its decision if one was made.
    Open { round: u32, request: Request, decision: Option<Decision> },
}

/// How a round ended without a decision that stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Closed {
    /// It expired (and a call said so).
    Expired,
    /// An operator reopened it.
    Reopened,
}

impl Action {
    pub(crate) fn new(namespace: &str, key: &str) -> Action {
        let mut prefix = String::with_capacity(33);
        let mut identity = Vec::with_capacity(namespace.len() + 1 + key.len());
        identity.extend_from_slice(namespace.as_bytes());
        identity.push(0);
        identity.extend_from_slice(key.as_bytes());
        crate::key::hash_into(&identity, &mut prefix);
        prefix.push('/');
        Action { prefix }
    }

    fn key(&self, round: u32, kind: &str) -> String {
        format!("{}{round}/{kind}", self.prefix)
    }

    async fn get<S: Store + ?Sized>(
        &self,
        store: &S,
        round: u32,
        kind: &str,
    ) -> Result<Option<(Value, i64)>, StoreError> {
        let key = self.key(round, kind);
        let Some((text, at_ms)) = once::get(store, RecordId { namespace: NAMESPACE, key: &key }).await? else {
            return Ok(None);
        };
        let value = serde_json::from_str(&text)
            .map_err(|e| StoreError::Corrupt(format!("approval record {key} is not JSON ({e}): {text}")))?;
        Ok(Some((value, at_ms)))
    }

    async fn put<S: Store + ?Sized>(
        &self,
        store: &S,
        round: u32,
        kind: &str,
        value: &Value,
    ) -> Result<Put, StoreError> {
        let key = self.key(round, kind);
        once::put(store, RecordId { namespace: NAMESPACE, key: &key }, &value.to_string(), KEPT).await
    }

    /// Where the action's approval stands, round by round.
    pub(crate) async fn current<S: Store + ?Sized>(&self, store: &S) -> Result<Current, StoreError> {
        let mut closed = None;
        for round in 0.. {
            let Some((request, asked_at_ms)) = self.get(store, round, "request").await? else {
                return Ok(Current::Idle { next: round, closed });
            };
            let request = request_from(&request, asked_at_ms)?;
            if self.get(store, round, "reopened").await?.is_some() {
                closed = Some((request, Closed::Reopened));
                continue;
            }
            if let Some((decision, at_ms)) = self.get(store, round, "decision").await? {
                return Ok(Current::Open { round, request, decision: Some(decision_from(&decision, at_ms)?) });
            }
            if self.get(store, round, "expired").await?.is_some() {
                closed = Some((request, Closed::Expired));
                continue;
            }
            return Ok(Current::Open { round, request, decision: None });
        }
        unreachable!("rounds are counted with a u32")
    }

    /// Asks for approval in round `round`; see [`Put`].
    pub(crate) async fn ask<S: Store + ?Sized>(&self, store: &S, round: u32, ask: &Ask<'_>) -> Result<Put, StoreError> {
        let request = json!({
            "namespace": ask.namespace,
            "key": ask.key,
            "request": ask.request,
            "text": ask.text,
            "ttl_ms": u64::try_from(ask.ttl.as_millis()).unwrap_or(u64::MAX),
        });
        self.put(store, round, "request", &request).await
    }

    /// Records the decision of round `round`; see [`Put`] (`Found`: a decision was made).
    pub(crate) async fn decide<S: Store + ?Sized>(
        &self,
        store: &S,
        round: u32,
        (approved, by, note): (bool, &str, Option<&str>),
    ) -> Result<Put, StoreError> {
        self.put(store, round, "decision", &json!({"approved": approved, "by": by, "note": note})).await
    }

    /// Records that round `round` expired without a decision.
    pub(crate) async fn expire<S: Store + ?Sized>(&self, store: &S, round: u32) -> Result<Put, StoreError> {
        self.put(store, round, "expired", &json!({})).await
    }

    /// Closes round `round`, so that the next call asks anew.
    pub(crate) async fn reopen<S: Store + ?Sized>(
        &self,
        store: &S,
        round: u32,
        (by, note): (&str, Option<&str>),
    ) -> Result<Put, StoreError> {
        self.put(store, round, "reopened", &json!({"by": by, "note": note})).await
    }
}

/// A request to write: what a call asks a person to approve.
pub(crate) struct Ask<'a> {
    pub(crate) namespace: &'a str,
    pub(crate) key: &'a str,
    /// The compared fields, as canonical JSON.
    pub(crate) request: &'a str,
    pub(crate) text: &'a str,
    pub(crate) ttl: Duration,
}

fn corrupt(what: &str, value: &Value) -> StoreError {
    StoreError::Corrupt(format!("approval {what} record does not read: {value}"))
}

/// A request record, read back; `asked_at_ms` is its record's time (the store's clock).
pub(crate) fn request_from(value: &Value, asked_at_ms: i64) -> Result<Request, StoreError> {
    let text = |field: &str| value.get(field).and_then(Value::as_str).map(str::to_owned);
    let ttl_ms = value.get("ttl_ms").and_then(Value::as_u64).ok_or_else(|| corrupt("request", value))?;
    let ttl_ms = i64::try_from(ttl_ms).unwrap_or(i64::MAX / 4);
    Ok(Request {
        namespace: text("namespace").ok_or_else(|| corrupt("request", value))?,
        key: text("key").ok_or_else(|| corrupt("request", value))?,
        request: text("request").ok_or_else(|| corrupt("request", value))?,
        text: text("text").ok_or_else(|| corrupt("request", value))?,
        asked_at_ms,
        expires_at_ms: asked_at_ms.saturating_add(ttl_ms),
    })
}

fn decision_from(value: &Value, at_ms: i64) -> Result<Decision, StoreError> {
    Ok(Decision {
        approved: value.get("approved").and_then(Value::as_bool).ok_or_else(|| corrupt("decision", value))?,
        by: value.get("by").and_then(Value::as_str).ok_or_else(|| corrupt("decision", value))?.to_owned(),
        note: value.get("note").and_then(Value::as_str).map(str::to_owned),
        at_ms,
    })
}
