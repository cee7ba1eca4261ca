//! The decision on what a store said, as a plain function: what a reservation attempt
//! means for a call. The errors it answers with are put together in [`answers`](super::answers).

use crate::compare::renamed;
use crate::difference::differences;
use crate::error::Error;
use crate::key::Key;
use crate::observe::Outcome;
use crate::store::{RecordState, Reservation, StoreError, Token};

use super::Tool;
use super::answers::{conflict, in_progress, running, store_failed, unknown};

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
        Ok(Reservation::OverBudget(window)) => {
            return Step::Answer(
                Outcome::BudgetExceeded,
                Answer::Error(super::budget::exceeded(tool, (key, request), &window)),
            );
        }
        Err(error) => {
            let (outcome, error) = store_failed(tool, key, &error);
            return Step::Answer(outcome, Answer::Error(error));
        }
    };
    let differing = match differences(&record.request, request) {
        differing if differing.is_empty() || tool.compare == tool.compare_written => differing,
        // A record written under the names as written (`req.amount`) by an earlier version.
        differing => match renamed(&record.request, tool.compare_written, tool.compare) {
            Some(stored) => differences(&stored, request),
            None => differing,
        },
    };
    if !differing.is_empty() {
        return Step::Answer(Outcome::Conflict, Answer::Error(conflict(tool, key, differing)));
    }
    match record.state {
        RecordState::Completed { result } => Step::Answer(Outcome::Replayed, Answer::Replay(result)),
        RecordState::Failed { error } => Step::Answer(Outcome::Replayed, Answer::KeptError(error)),
        RecordState::InProgress { lease_expired: false, lease_until_ms, progress } => {
            let running = running(tool, record.created_at_ms, lease_until_ms, progress);
            Step::Answer(Outcome::InProgress, Answer::Error(in_progress(tool, key, running)))
        }
        RecordState::InProgress { lease_expired: true, .. } if can_reconcile => {
            Step::Reconcile { expired: record.token, since_ms: record.created_at_ms }
        }
        RecordState::InProgress { lease_expired: true, .. } => {
            Step::Answer(Outcome::Unknown, Answer::Error(unknown(tool, key)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::tests::SEND_INVOICE;
    use crate::key::build_key;
    use crate::store::{Record, RecordState};

    #[test]
    fn a_conflict_names_every_differing_field() {
        let key = build_key(SEND_INVOICE.name, SEND_INVOICE.template, &[&"acme"]).unwrap();
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
            decide(&SEND_INVOICE, &key, requested, Ok(Reservation::Existing(record)), false)
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
