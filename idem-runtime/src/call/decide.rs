//! Decisions on what a store said, as plain functions: what a reservation attempt means
//! for a call, and the errors the caller is told.

use crate::compare::differences;
use crate::error::{Error, ErrorCode};
use crate::key::Key;
use crate::observe::Outcome;
use crate::store::{RecordState, Reservation, StoreError, Token};

use super::Tool;

/// What to do after a reservation attempt.
pub(crate) enum Step {
    /// The key is ours: run the body.
    Run(Token),
    /// An abandoned reservation, to take over and reconcile.
    Reconcile { expired: Token, since_ms: i64 },
    /// Answer without running anything.
    Answer(Outcome, Answer),
}

/// An answer that is not a fresh run.
pub(crate) enum Answer {
    Error(Error),
    /// A stored result, as JSON.
    Replay(String),
    /// A kept error (`on_error = keep`), as JSON.
    KeptError(String),
}

/// What a reservation attempt means for this call. CONFLICT is judged first, on every
/// path that finds a record: a repeat with other compared fields is told so even while
/// the first call runs, and even when it was abandoned.
pub(crate) fn decide(
    tool: &Tool,
    key: &Key,
    request: &str,
    reserved: Result<Reservation, StoreError>,
    can_reconcile: bool,
) -> Step {
    let record = match reserved {
        Ok(Reservation::Acquired { token }) => return Step::Run(token),
        Ok(Reservation::Existing(record)) => record,
        Err(error) => {
            let (outcome, error) = store_failed(tool, key, &error);
            return Step::Answer(outcome, Answer::Error(error));
        }
    };
    let differing = differences(&record.request, request);
    if !differing.is_empty() {
        let mut message = concat(&[tool.name, ": ", key, " was already requested with other values: "]);
        for (i, d) in differing.iter().enumerate() {
            let separator = if i == 0 { "" } else { "; " };
            message.extend([separator, &d.field, " was ", &d.stored_text, ", now ", &d.requested_text]);
        }
        let error = Error::new(ErrorCode::Conflict, message)
            .with_suggestion(concat(&[
                "ask the user before changing or adding anything; call ",
                tool.status_fn,
                " to see the first request's result",
            ]))
            .with_differences(differing);
        return Step::Answer(Outcome::Conflict, Answer::Error(error));
    }
    match record.state {
        RecordState::Completed { result } => Step::Answer(Outcome::Replayed, Answer::Replay(result)),
        RecordState::Failed { error } => Step::Answer(Outcome::Replayed, Answer::KeptError(error)),
        RecordState::InProgress { lease_expired: false, .. } => {
            Step::Answer(Outcome::InProgress, Answer::Error(in_progress(tool, key)))
        }
        RecordState::InProgress { lease_expired: true, .. } if can_reconcile => {
            Step::Reconcile { expired: record.token, since_ms: record.created_at_ms }
        }
        RecordState::InProgress { lease_expired: true, .. } => {
            Step::Answer(Outcome::Unknown, Answer::Error(unknown(tool, key)))
        }
    }
}

/// Every concurrent duplicate gets this answer, so it is put together without `format!`
/// (whose formatting machinery cost as much as the rest of the answer).
pub(crate) fn in_progress(tool: &Tool, key: &Key) -> Error {
    Error::new(ErrorCode::InProgress, concat(&[tool.name, ": ", key, " is still in progress"]))
        .with_suggestion(concat(&["do not call ", tool.name, " again; call ", tool.status_fn, " in a few seconds"]))
}

/// The pieces joined, in one allocation.
fn concat(pieces: &[&str]) -> String {
    let mut out = String::with_capacity(pieces.iter().map(|piece| piece.len()).sum());
    pieces.iter().for_each(|piece| out.push_str(piece));
    out
}

/// What a store's failure means for a call or a status read: a record the store cannot
/// interpret (a state a newer idem wrote, a damaged row) is RECORD_UNREADABLE, which no
/// retry can fix; only a failure of the backend itself is STORE_UNAVAILABLE, retryable.
pub(crate) fn store_failed(tool: &Tool, key: &Key, error: &StoreError) -> (Outcome, Error) {
    match error {
        StoreError::Corrupt(why) => (Outcome::Unreadable, corrupt(tool, key, why)),
        _ => (Outcome::StoreUnavailable, store_unavailable(tool, error)),
    }
}

fn corrupt(tool: &Tool, key: &Key, why: &str) -> Error {
    let namespace = tool.namespace;
    Error::new(
        ErrorCode::RecordUnreadable,
        format!(
            "{}: the record for key {key} in namespace {namespace} cannot be read ({why}): a newer idem \
             may have written it, or it was damaged; the action was not run",
            tool.name
        ),
    )
    .with_suggestion(format!(
        "do not retry: a person must inspect the record (namespace {namespace}, key {key}) and settle or remove it"
    ))
}

fn store_unavailable(tool: &Tool, error: &StoreError) -> Error {
    Error::new(
        ErrorCode::StoreUnavailable,
        format!("{}: the idempotency store failed ({error}); the action was not run", tool.name),
    )
    .with_suggestion("retry in a moment")
}

pub(crate) fn unknown(tool: &Tool, key: &Key) -> Error {
    Error::new(
        ErrorCode::OutcomeUnknown,
        format!(
            "{}: an earlier call for {key} stopped before it finished (crash, panic or cancellation); it may or may not have happened",
            tool.name
        ),
    )
    .with_suggestion(format!(
        "do not call {} again blindly; check with the provider or a person, or call {}",
        tool.name, tool.status_fn
    ))
}

pub(crate) fn unreadable(tool: &Tool, key: &Key, what: &str, error: &serde_json::Error) -> Error {
    Error::new(
        ErrorCode::RecordUnreadable,
        format!(
            "{}: the stored {what} for {key} does not read as this tool's type ({error}); the action was not run again",
            tool.name
        ),
    )
    .with_suggestion(format!("a person must inspect the record for {key}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{FieldMode, Segment, build_key};
    use crate::metrics::Counters;
    use crate::store::{Record, RecordState};

    static TOOL: Tool = Tool {
        name: "send_invoice",
        namespace: "test::send_invoice",
        namespace_given: false,
        site: "src/lib.rs:1:1",
        template: &[
            Segment::Literal("invoice:"),
            Segment::Field("customer", FieldMode { normalize: true, hash: false }),
        ],
        compare: &["amount", "currency"],
        status_fn: "send_invoice_status",
        lease: std::time::Duration::from_secs(60),
        retain: std::time::Duration::from_secs(60),
        counters: Counters::new(),
        claim: crate::call::Claim::new(),
    };

    #[test]
    fn in_progress_names_the_key_and_the_status_function() {
        let key = build_key(TOOL.name, TOOL.template, &[&"acme"]).unwrap();
        let error = in_progress(&TOOL, &key);
        assert_eq!(error.code(), ErrorCode::InProgress);
        assert_eq!(error.message(), "send_invoice: invoice:acme is still in progress");
        assert_eq!(
            error.suggestion(),
            Some("do not call send_invoice again; call send_invoice_status in a few seconds")
        );
    }

    #[test]
    fn a_conflict_names_every_differing_field() {
        let key = build_key(TOOL.name, TOOL.template, &[&"acme"]).unwrap();
        let record = Record {
            request: r#"{"amount":120.0,"currency":"EUR"}"#.into(),
            token: Token(1),
            created_at_ms: 0,
            updated_at_ms: 0,
            retain_until_ms: None,
            state: RecordState::Completed { result: "{}".into() },
        };
        let requested = r#"{"amount":150.0,"currency":"USD"}"#;
        let Step::Answer(Outcome::Conflict, Answer::Error(error)) =
            decide(&TOOL, &key, requested, Ok(Reservation::Existing(record)), false)
        else {
            panic!("expected a conflict");
        };
        assert_eq!(
            error.message(),
            "send_invoice: invoice:acme was already requested with other values: \
             amount was 120.0, now 150.0; currency was \"EUR\", now \"USD\""
        );
        assert_eq!(
            error.suggestion(),
            Some(
                "ask the user before changing or adding anything; \
                 call send_invoice_status to see the first request's result"
            )
        );
    }
}
