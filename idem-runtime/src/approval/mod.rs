//! Approvals bound to the business action: a tool with `approval` asks a person once
//! per action, however often and however concurrently the model retries, and runs the
//! body only after a person approved exactly what the request named. What each call
//! answers is the table under *Approvals* in the crate's docs; this module says the rest.
//!
//! **Deciding.** In code, on any store: [`approve`], [`decline`], [`reopen`], [`state`] and
//! [`pending`] (and [`blocking`] for sync code). The `idem` command does the same for
//! operators (`idem approvals`, `idem approve`, `idem decline`, `idem reopen NS KEY --by
//! NAME`); an rmcp server asks its user in band (see
//! `idem::frameworks::rmcp`, *Approvals in the client*). Whoever decides, the record does
//! not care: `by` names them (never empty), `note` says why, the store's clock says when.
//! [`approve`] and [`decline`] decide the request waiting now; an answer given in the client
//! decides only the request its question was asked about, so one that arrives after that
//! request expired, or was reopened and asked anew, decides nothing.
//!
//! - **One request per action.** The first call that asks (its `approval(when = ...)`
//!   holds, or any first call with `approval` alone) writes the request; every call that
//!   finds it (on any worker) answers from it. The request governs the action from then
//!   on: a call with other compared values is a CONFLICT, even one whose condition does
//!   not hold (a smaller amount), so that a person never approves X while Y runs.
//! - **A decision is final.** The first decision written stands; a second, or one racing it,
//!   gets [`DecideError::Decided`] with the one that stands. An approval approves the action,
//!   not one attempt: after a body that failed (and released its key, `on_error` left at
//!   `release`), the next call runs it again under the same approval. A decline holds until
//!   [`reopen`]ed (operators: `idem reopen NS KEY --by NAME`); after that, the next call
//!   asks anew: a new request, a new notification.
//! - **Expiry.** A request without a decision expires its `approval(ttl = ...)` after it
//!   was asked ([`DEFAULT_APPROVAL_TTL`], a day, when the tool sets none). From then on a
//!   decision is refused ([`DecideError::Expired`]); the first call at or after the expiry
//!   answers APPROVAL_EXPIRED (and records that it did, so this happens once), and the call
//!   after it asks anew. Times are the store's (when a record was written); an expiry is
//!   judged against them by the caller's clock, so keep the `ttl` well above the clock
//!   skew between your machines (seconds).
//! - **Scopes.** A scoped tool's keys start with the scope's prefix, and so do its requests:
//!   one tenant's approval never runs another tenant's action, and `idem approvals --scope
//!   acme` (or [`pending`] with `idem::store::scope_prefix("acme")`) lists one tenant's.
//! - **The action ran.** Once the action has a record, its record answers (replays,
//!   IN_PROGRESS, ...) and the approval is not read again.
//!
//! **Where approvals are kept.** Beside the actions' records, as write-once records of the
//! namespace `idem.approvals`, written through the store protocol: every store (also one of
//! your own that passes `idem::testing::conformance::check_approvals`) keeps approvals with
//! nothing added to it, decisions survive restarts and are the same on every worker, and
//! the store's unique constraint makes concurrent requests one request and a decision
//! final. They are kept for a century (`idem purge` leaves them): a decided action must
//! stay decided as long as its record may answer.

mod records;

use std::fmt;

use crate::store::once::Put;
use crate::store::{Admin, ListQuery, RecordId, StateFilter, Store, StoreError, now_ms};

pub(crate) use records::{Action, Ask, Closed, Current, NAMESPACE};

/// The default of `approval(ttl = ...)`: a day. Long enough for a person to see the request within a
/// working day, short enough that a request nobody answered does not run weeks later, when
/// the model, the user and the facts have moved on.
pub const DEFAULT_APPROVAL_TTL: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// What a person is asked to approve: one action, with exactly these compared fields.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Request {
    /// The tool's namespace.
    pub namespace: String,
    /// The action's key (a scoped tool's starts with its scope's prefix).
    pub key: String,
    /// The compared fields of the call that asked, as canonical JSON: what is approved. A
    /// call with other values is a CONFLICT, never a run.
    pub request: String,
    /// The text a person reads: `approval(text = ...)`, or the tool's summary, the key and the
    /// compared fields.
    pub text: String,
    /// When it was asked, in milliseconds since the Unix epoch, by the store's clock.
    pub asked_at_ms: i64,
    /// When it expires without a decision (`asked_at_ms` + the tool's approval `ttl`).
    pub expires_at_ms: i64,
}

impl From<&crate::error::Approval> for Request {
    fn from(approval: &crate::error::Approval) -> Request {
        Request {
            namespace: approval.namespace.clone(),
            key: approval.key.clone(),
            request: approval.request.clone(),
            text: approval.text.clone(),
            asked_at_ms: approval.asked_at_ms,
            expires_at_ms: approval.expires_at_ms,
        }
    }
}

/// A person's decision on a [`Request`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Decision {
    /// Approved (the next call runs the action) or declined (every call answers DECLINED).
    pub approved: bool,
    /// Who decided, as the decider gave it (`idem approve --by`; in band, `the user through
    /// the client`).
    pub by: String,
    /// Why, if they said.
    pub note: Option<String>,
    /// When, in milliseconds since the Unix epoch, by the store's clock.
    pub at_ms: i64,
}

/// Where an action's approval stands; see [`state`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum State {
    /// Asked, waiting for a person.
    Pending(Request),
    /// Approved: the next call runs the action (once, as always).
    Approved(Request, Decision),
    /// Declined: every call answers DECLINED until an operator reopens it.
    Declined(Request, Decision),
    /// Its time to live passed without a decision; the next call asks anew.
    Expired(Request),
}

/// Why a decision was not recorded. Nothing changed.
#[derive(Debug)]
#[non_exhaustive]
pub enum DecideError {
    /// No request is waiting for this action: it never asked, its request expired, or it
    /// was reopened and has not asked again.
    NoRequest,
    /// A decision was made already; it stands.
    Decided(Decision),
    /// The request's time to live passed; the next call asks anew.
    Expired(Box<Request>),
    /// `reopen` of a round that was not declined: where it stands.
    NotDeclined(Box<State>),
    /// Who decides must be named (`by` is empty).
    Anonymous,
    /// The store failed.
    Store(StoreError),
}

impl fmt::Display for DecideError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecideError::NoRequest => f.write_str("no approval request is waiting for this action"),
            DecideError::Decided(decision) => write!(
                f,
                "it was {} already, by {} at {}",
                if decision.approved { "approved" } else { "declined" },
                decision.by,
                crate::store::rfc3339(decision.at_ms)
            ),
            DecideError::Expired(request) => write!(
                f,
                "its request expired at {} without a decision; the next call asks again",
                crate::store::rfc3339(request.expires_at_ms)
            ),
            DecideError::NotDeclined(_) => f.write_str("only a declined approval reopens"),
            DecideError::Anonymous => f.write_str("say who decides (by must not be empty)"),
            DecideError::Store(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for DecideError {}

impl From<StoreError> for DecideError {
    fn from(error: StoreError) -> Self {
        DecideError::Store(error)
    }
}

/// Where the approval of the action `id` stands, or `None` when it never asked (or was
/// reopened and has not asked again). Never writes.
pub async fn state<S: Store + ?Sized>(store: &S, id: RecordId<'_>) -> Result<Option<State>, StoreError> {
    Ok(match Action::new(id.namespace, id.key).current(store).await? {
        Current::Idle { closed: Some((request, Closed::Expired)), .. } => Some(State::Expired(request)),
        Current::Idle { .. } => None,
        Current::Open { request, decision: Some(decision), .. } if decision.approved => {
            Some(State::Approved(request, decision))
        }
        Current::Open { request, decision: Some(decision), .. } => Some(State::Declined(request, decision)),
        Current::Open { request, decision: None, .. } if now_ms() >= request.expires_at_ms => {
            Some(State::Expired(request))
        }
        Current::Open { request, decision: None, .. } => Some(State::Pending(request)),
    })
}

/// Approves the request waiting for the action `id`: the next call runs it. Returns what
/// was approved.
pub async fn approve<S: Store + ?Sized>(
    store: &S,
    id: RecordId<'_>,
    by: &str,
    note: Option<&str>,
) -> Result<Request, DecideError> {
    decide(store, id, (true, by, note)).await
}

/// Declines the request waiting for the action `id`: every call answers DECLINED, naming
/// `by` and `note`, until an operator [`reopen`]s it. Returns what was declined.
pub async fn decline<S: Store + ?Sized>(
    store: &S,
    id: RecordId<'_>,
    by: &str,
    note: Option<&str>,
) -> Result<Request, DecideError> {
    decide(store, id, (false, by, note)).await
}

async fn decide<S: Store + ?Sized>(
    store: &S,
    id: RecordId<'_>,
    verdict: (bool, &str, Option<&str>),
) -> Result<Request, DecideError> {
    decide_in(store, id, None, verdict).await
}

/// A request that is waiting for a decision, as an answer in band names it: its round and
/// when it was asked. A decision for it is written for that round only, so an answer to an
/// earlier request (expired, or reopened and asked anew) never decides a later one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Asked {
    pub(crate) round: u32,
    pub(crate) asked_at_ms: i64,
}

/// The request waiting for a decision on the action `id` (not decided; maybe expired), with
/// the round it is asked in.
#[cfg(feature = "rmcp")]
pub(crate) async fn waiting<S: Store + ?Sized>(
    store: &S,
    id: RecordId<'_>,
) -> Result<Option<(Asked, Request)>, StoreError> {
    Ok(match Action::new(id.namespace, id.key).current(store).await? {
        Current::Open { round, request, decision: None } => {
            Some((Asked { round, asked_at_ms: request.asked_at_ms }, request))
        }
        _ => None,
    })
}

/// Decides the request `asked`, and no other: [`DecideError::NoRequest`] when the request
/// waiting now is another (or none), as for [`approve`] and [`decline`] otherwise.
#[cfg(feature = "rmcp")]
pub(crate) async fn decide_asked<S: Store + ?Sized>(
    store: &S,
    id: RecordId<'_>,
    asked: Asked,
    verdict: (bool, &str, Option<&str>),
) -> Result<Request, DecideError> {
    decide_in(store, id, Some(asked), verdict).await
}

async fn decide_in<S: Store + ?Sized>(
    store: &S,
    id: RecordId<'_>,
    asked: Option<Asked>,
    (approved, by, note): (bool, &str, Option<&str>),
) -> Result<Request, DecideError> {
    if by.trim().is_empty() {
        return Err(DecideError::Anonymous);
    }
    let action = Action::new(id.namespace, id.key);
    let (round, request) = match action.current(store).await? {
        Current::Idle { .. } => return Err(DecideError::NoRequest),
        Current::Open { round, request, .. }
            if asked.is_some_and(|asked| asked != Asked { round, asked_at_ms: request.asked_at_ms }) =>
        {
            return Err(DecideError::NoRequest);
        }
        Current::Open { decision: Some(decision), .. } => return Err(DecideError::Decided(decision)),
        Current::Open { request, .. } if now_ms() >= request.expires_at_ms => {
            return Err(DecideError::Expired(Box::new(request)));
        }
        Current::Open { round, request, decision: None } => (round, request),
    };
    match action.decide(store, round, (approved, by, note)).await? {
        Put::Written => {
            let verdict = if approved { "approved" } else { "declined" };
            tracing::info!(target: "idem", namespace = id.namespace, key = id.key, by, verdict, "approval decided");
            Ok(request)
        }
        // Another decider was first: theirs stands.
        Put::Found(_) => match action.current(store).await? {
            Current::Open { decision: Some(decision), .. } => Err(DecideError::Decided(decision)),
            _ => Err(DecideError::NoRequest),
        },
    }
}

/// Reopens the declined approval of the action `id`: the next call that needs approval asks
/// a person anew (a new request, a new notification). Returns the request that had been
/// declined.
pub async fn reopen<S: Store + ?Sized>(
    store: &S,
    id: RecordId<'_>,
    by: &str,
    note: Option<&str>,
) -> Result<Request, DecideError> {
    if by.trim().is_empty() {
        return Err(DecideError::Anonymous);
    }
    let action = Action::new(id.namespace, id.key);
    match action.current(store).await? {
        Current::Open { round, request, decision: Some(decision) } if !decision.approved => {
            action.reopen(store, round, (by, note)).await?;
            Ok(request)
        }
        _ => match state(store, id).await? {
            Some(other) => Err(DecideError::NotDeclined(Box::new(other))),
            None => Err(DecideError::NoRequest),
        },
    }
}

/// The requests waiting for a person, oldest first: of `namespace` only, and of keys that
/// start with `key_prefix` only (`idem::store::scope_prefix("acme")` for one tenant's), when given.
/// Expired ones are left out.
pub fn pending<S: Admin + ?Sized>(
    store: &S,
    namespace: Option<&str>,
    key_prefix: Option<&str>,
) -> Result<Vec<Request>, StoreError> {
    let query = ListQuery {
        state: StateFilter::Completed,
        namespace: Some(NAMESPACE),
        key_prefix: None,
        older_than: None,
        limit: usize::MAX,
    };
    let asked = store.list(&query)?;
    let mut waiting: Vec<Request> = Vec::new();
    for listed in asked.iter().filter(|listed| listed.key.ends_with("/request")) {
        let crate::store::RecordState::Completed { result } = &listed.record.state else { continue };
        let value = serde_json::from_str(result)
            .map_err(|e| StoreError::Corrupt(format!("approval request {} is not JSON: {e}", listed.key)))?;
        let request = records::request_from(&value, listed.record.created_at_ms)?;
        let selected = namespace.is_none_or(|namespace| namespace == request.namespace)
            && key_prefix.is_none_or(|prefix| request.key.starts_with(prefix))
            && !waiting.iter().any(|known| known.namespace == request.namespace && known.key == request.key);
        if !selected {
            continue;
        }
        let id = RecordId { namespace: &request.namespace, key: &request.key };
        if let Some(State::Pending(current)) = blocking::state(store.as_dyn_store(), id)? {
            waiting.push(current);
        }
    }
    waiting.sort_by_key(|request| request.asked_at_ms);
    Ok(waiting)
}

/// The same operations for sync code (an operator's command), each waiting for the store on
/// the calling thread ([`block_on`](crate::store::block_on)).
pub mod blocking {
    use crate::store::{RecordId, Store, StoreError, block_on};

    use super::{DecideError, Request, State};

    /// See [`state`](super::state).
    pub fn state<S: Store + ?Sized>(store: &S, id: RecordId<'_>) -> Result<Option<State>, StoreError> {
        block_on(super::state(store, id))
    }

    /// See [`approve`](super::approve).
    pub fn approve<S: Store + ?Sized>(
        store: &S,
        id: RecordId<'_>,
        by: &str,
        note: Option<&str>,
    ) -> Result<Request, DecideError> {
        block_on(super::approve(store, id, by, note))
    }

    /// See [`decline`](super::decline).
    pub fn decline<S: Store + ?Sized>(
        store: &S,
        id: RecordId<'_>,
        by: &str,
        note: Option<&str>,
    ) -> Result<Request, DecideError> {
        block_on(super::decline(store, id, by, note))
    }

    /// See [`reopen`](super::reopen).
    pub fn reopen<S: Store + ?Sized>(
        store: &S,
        id: RecordId<'_>,
        by: &str,
        note: Option<&str>,
    ) -> Result<Request, DecideError> {
        block_on(super::reopen(store, id, by, note))
    }
}
