//! The approval gate of a tool with `approval(...)`: before a call may reserve its key,
//! the action's approval is looked up, asked for, or answered from.
//!
//! | where the action stands | the call |
//! | --- | --- |
//! | it has a record (it ran, or runs) | is answered from the record, as any call |
//! | no request, and this call needs none | goes on to reserve |
//! | no request, and this call needs one | asks (one request, however many callers race): APPROVAL_REQUIRED |
//! | asked, other compared values | CONFLICT: an approval binds what was asked |
//! | asked, waiting | APPROVAL_REQUIRED (the same request) |
//! | asked, its time to live passed | APPROVAL_EXPIRED, once; the next call asks anew |
//! | approved | goes on to reserve: runs once, as any first call |
//! | declined | DECLINED, until an operator reopens it |
//!
//! Once an action has a request, the request governs every call of it: a call whose own
//! `approval` condition is false does not slip past a pending or declined request.

use std::time::Duration;

use crate::approval::{Action, Ask, Current, Decision, Request};
use crate::compare::renamed;
use crate::difference::differences;
use crate::error::{Approval, Error, ErrorCode};
use crate::key::Key;
use crate::observe::{Happened, Outcome, Phase, notify};
use crate::store::once::Put;
use crate::store::{DynStore, Record, RecordId, Store, now_ms};

use super::Tool;
use super::answers::{conflict, store_failed};

/// What a tool with approvals keeps at compile time.
#[doc(hidden)]
#[derive(Debug)]
pub struct ApprovalPolicy {
    /// How long a request waits for a decision (`approval(ttl = ...)`).
    pub ttl: Duration,
    /// The first line of the tool's doc comment: the start of a request's default text.
    pub summary: &'static str,
    /// Called once when a request is made (`approval(notify = ...)`), never for a repeat.
    pub on_request: Option<fn(&Request)>,
}

/// What the gate found.
pub(crate) enum Gate {
    /// The call goes on to reserve its key; with the decision it runs under, if any.
    Open(Option<Decision>),
    /// The action has a record: the call is answered from it.
    Record(Record),
    /// The call is answered without running anything.
    Answer(Outcome, Error),
}

/// The gate for one call of `tool` (which has an approval policy): `ask` is the text of
/// the request this call would make, when its `approval` condition holds.
pub(crate) async fn gate(
    tool: &'static Tool,
    policy: &ApprovalPolicy,
    (key, request): (&Key, &str),
    ask: Option<&str>,
    store: &dyn DynStore,
) -> Gate {
    let failed = |error| {
        let (outcome, error) = store_failed(tool, key, &error);
        Gate::Answer(outcome, error)
    };
    let id = RecordId { namespace: tool.namespace, key: key.as_str() };
    match store.read(id).await {
        Ok(Some(record)) => return Gate::Record(record),
        Ok(None) => {}
        Err(error) => return failed(error),
    }
    let action = Action::new(tool.namespace, key.as_str());
    // Three looks at most: each race lost (another caller asked, or marked an expiry, at
    // the same moment) settles what the next look finds.
    for _ in 0..3 {
        let current = match action.current(store).await {
            Ok(current) => current,
            Err(error) => return failed(error),
        };
        let (round, asked, decision) = match current {
            Current::Idle { next, .. } => {
                let Some(text) = ask else { return Gate::Open(None) };
                let made = Ask { namespace: tool.namespace, key: key.as_str(), request, text, ttl: policy.ttl };
                match action.ask(store, next, &made).await {
                    Ok(Put::Written) => return asked_now(tool, policy, key, (request, text), store).await,
                    Ok(Put::Found(_)) => continue,
                    Err(error) => return failed(error),
                }
            }
            Current::Open { round, request, decision } => (round, request, decision),
        };
        if let Some(conflict) = differing(tool, key, &asked.request, request) {
            return Gate::Answer(Outcome::Conflict, conflict);
        }
        match decision {
            Some(decision) if decision.approved => return Gate::Open(Some(decision)),
            Some(decision) => {
                notify(tool.subject(), key, Phase::Reserve, Happened::Declined);
                return Gate::Answer(Outcome::Declined, declined(tool, key, &asked, &decision));
            }
            None if now_ms() >= asked.expires_at_ms => match action.expire(store, round).await {
                Ok(Put::Written) => {
                    notify(tool.subject(), key, Phase::Reserve, Happened::ApprovalExpired);
                    return Gate::Answer(Outcome::ApprovalExpired, expired(tool, key, &asked));
                }
                Ok(Put::Found(_)) => continue,
                Err(error) => return failed(error),
            },
            None => return Gate::Answer(Outcome::ApprovalRequired, required(tool, key, &asked)),
        }
    }
    // Still racing after three looks: the request is being made right now.
    let text = ask.unwrap_or_default().to_owned();
    let now = now_ms();
    let pending = Request {
        namespace: tool.namespace.to_owned(),
        key: key.as_str().to_owned(),
        request: request.to_owned(),
        text,
        asked_at_ms: now,
        expires_at_ms: now.saturating_add(crate::store::duration_ms(policy.ttl)),
    };
    Gate::Answer(Outcome::ApprovalRequired, required(tool, key, &pending))
}

/// This call made the request: the hook and the observers hear of it, once per request.
async fn asked_now(
    tool: &'static Tool,
    policy: &ApprovalPolicy,
    key: &Key,
    (request, text): (&str, &str),
    store: &dyn DynStore,
) -> Gate {
    let action = Action::new(tool.namespace, key.as_str());
    // Read back for the store's time of the request; the values are this call's.
    let asked = match action.current(store).await {
        Ok(Current::Open { request: asked, .. }) => asked,
        _ => {
            let now = now_ms();
            Request {
                namespace: tool.namespace.to_owned(),
                key: key.as_str().to_owned(),
                request: request.to_owned(),
                text: text.to_owned(),
                asked_at_ms: now,
                expires_at_ms: now.saturating_add(crate::store::duration_ms(policy.ttl)),
            }
        }
    };
    notify(tool.subject(), key, Phase::Reserve, Happened::ApprovalRequested);
    if let Some(hook) = policy.on_request {
        // A hook that panics must not leave the caller without an answer: the request is
        // recorded either way.
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hook(&asked))).is_err() {
            tracing::error!(target: "idem", tool = tool.name, "the approval's notify hook panicked; the request stands");
        }
    }
    Gate::Answer(Outcome::ApprovalRequired, required(tool, key, &asked))
}

/// CONFLICT when the request was asked with other compared values.
fn differing(tool: &Tool, key: &Key, asked: &str, request: &str) -> Option<Error> {
    let mut found = differences(asked, request);
    if !found.is_empty()
        && tool.compare != tool.compare_written
        && let Some(stored) = renamed(asked, tool.compare_written, tool.compare)
    {
        found = differences(&stored, request);
    }
    (!found.is_empty()).then(|| conflict(tool, key, found))
}

fn details(asked: &Request) -> Approval {
    Approval {
        namespace: asked.namespace.clone(),
        key: asked.key.clone(),
        text: asked.text.clone(),
        request: asked.request.clone(),
        asked_at_ms: asked.asked_at_ms,
        expires_at_ms: asked.expires_at_ms,
        declined_by: None,
        declined_at_ms: None,
        note: None,
    }
}

/// APPROVAL_REQUIRED for the request `asked`.
pub(crate) fn required(tool: &Tool, key: &Key, asked: &Request) -> Error {
    Error::new(
        ErrorCode::ApprovalRequired,
        format!(
            "{}: {} needs a person's approval, which was asked for: {}; nothing was done",
            tool.name,
            key.readable(),
            asked.text
        ),
    )
    .with_suggestion(format!(
        "do not call {} again yet: ask the user to approve it; call {} later to see the decision, and {} again once it is approved",
        tool.name, tool.status_fn, tool.name
    ))
    .with_approval(details(asked))
}

pub(crate) fn declined(tool: &Tool, key: &Key, asked: &Request, decision: &Decision) -> Error {
    let why = decision.note.as_deref().map_or_else(String::new, |note| format!(": {note}"));
    let mut approval = details(asked);
    approval.declined_by = Some(decision.by.clone());
    approval.declined_at_ms = Some(decision.at_ms);
    approval.note = decision.note.clone();
    Error::new(
        ErrorCode::Declined,
        format!(
            "{}: {} was declined by {} at {}{why}; nothing was done",
            tool.name,
            key.readable(),
            decision.by,
            crate::store::rfc3339(decision.at_ms)
        ),
    )
    .with_suggestion(format!("do not call {} again for this; tell the user it was declined, and why", tool.name))
    .with_approval(approval)
}

pub(crate) fn expired(tool: &Tool, key: &Key, asked: &Request) -> Error {
    Error::new(
        ErrorCode::ApprovalExpired,
        format!(
            "{}: the approval request for {} expired at {} without a decision; nothing was done",
            tool.name,
            key.readable(),
            crate::store::rfc3339(asked.expires_at_ms)
        ),
    )
    .with_suggestion(format!("ask the user whether it is still wanted; calling {} again asks a person anew", tool.name))
    .with_approval(details(asked))
}

/// What a person is asked to approve when the tool gives no `approval(text = ...)`: its summary,
/// the key as a person reads it (see [`Key::readable`]: no scope's hash, no escapes) and
/// the compared fields in words (`amount 2000.0`).
pub(super) fn default_text(tool: &Tool, key: &str, fields: &str) -> String {
    let summary = tool.approval.map_or("", |policy| policy.summary);
    let fields = fields_in_words(tool, fields);
    match (summary.is_empty(), fields.is_empty()) {
        (true, true) => format!("{} {key}", tool.name),
        (true, false) => format!("{} {key} with {fields}", tool.name),
        (false, true) => format!("{summary} ({key})"),
        (false, false) => format!("{summary} ({key}, {fields})"),
    }
}

/// Compared fields (a request's canonical JSON object) as a person reads them: each name as
/// the model sent it and its value, a string without its quotes (`amount 2000.0, currency
/// EUR`).
fn fields_in_words(tool: &Tool, fields: &str) -> String {
    let Ok(serde_json::Value::Object(fields)) = serde_json::from_str::<serde_json::Value>(fields) else {
        return fields.to_owned();
    };
    let mut words = String::new();
    for (name, value) in &fields {
        if !words.is_empty() {
            words.push_str(", ");
        }
        words.push_str(&tool.model_name(name));
        words.push(' ');
        match value {
            serde_json::Value::String(text) => words.push_str(text),
            other => words.push_str(&other.to_string()),
        }
    }
    words
}
