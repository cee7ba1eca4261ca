//! Decisions on what a store said, as plain functions: what a reservation attempt means
//! for a call, and the errors the caller is told.

use std::time::Duration;

use crate::compare::renamed;
use crate::difference::differences;
use crate::error::{Error, ErrorCode, Running};
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
    let differing = match differences(&record.request, request) {
        differing if differing.is_empty() || tool.compare == tool.compare_written => differing,
        // A record written under the names as written (`req.amount`) by an earlier version.
        differing => match renamed(&record.request, tool.compare_written, tool.compare) {
            Some(stored) => differences(&stored, request),
            None => differing,
        },
    };
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

/// Every concurrent duplicate gets this answer, so it is put together without `format!`
/// (whose formatting machinery cost as much as the rest of the answer).
pub(crate) fn in_progress(tool: &Tool, key: &Key, running: Running) -> Error {
    let message = match &running.progress {
        Some(progress) => concat(&[tool.name, ": ", key, " is still in progress (", progress, ")"]),
        None => concat(&[tool.name, ": ", key, " is still in progress"]),
    };
    let wait = wait_text(running.retry_after);
    Error::new(ErrorCode::InProgress, message)
        .with_suggestion(concat(&["do not call ", tool.name, " again; call ", tool.status_fn, " in ", &wait]))
        .with_running(running)
}

/// A running call as a repeat sees it, from its record: started at `since_ms`, its lease
/// ending at `lease_until_ms` (both by the store's clock), with the poll hint.
pub(crate) fn running(tool: &Tool, since_ms: i64, lease_until_ms: i64, progress: Option<String>) -> Running {
    let now_ms = crate::store::now_ms();
    let ms = |ms: i64| Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    let retry_after = retry_after(ms(now_ms - since_ms), tool.lease, Some(ms(lease_until_ms - now_ms)));
    Running { retry_after, since_ms: Some(since_ms), progress }
}

/// See [`Running::retry_after`]: `elapsed` is how long the call has run, `lease_left` how
/// long its current lease still holds (the store's times against this process's clock,
/// which is why the bounds matter more than the exact value).
///
/// The lease's caps come before the 1 s minimum: the hint exists to bring a caller back
/// before a holder that died could be freed. Whole milliseconds, as the wire says it, so
/// an answer reads back equal and every place that shows the hint shows the same number.
pub(crate) fn retry_after(elapsed: Duration, lease: Duration, lease_left: Option<Duration>) -> Duration {
    const SOONEST: Duration = Duration::from_millis(100);
    let hint = elapsed.clamp(Duration::from_secs(1), Duration::from_secs(30)).min(lease / 3);
    let hint = lease_left.map_or(hint, |left| hint.min(left + SOONEST));
    let whole_ms = Duration::from_millis(u64::try_from(hint.as_millis()).unwrap_or(u64::MAX));
    whole_ms.max(SOONEST)
}

/// A wait as a suggestion says it: `800 ms`, `3 s` (whole seconds, rounded up).
pub(crate) fn wait_text(wait: Duration) -> String {
    let ms = wait.as_millis();
    let (number, unit) = if ms < 1000 { (ms, " ms") } else { (ms.div_ceil(1000), " s") };
    // Digits by hand: `format!` cost as much as the rest of an IN_PROGRESS answer.
    let mut digits = [0u8; 40];
    let (mut at, mut rest) = (digits.len(), number);
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let mut text = String::with_capacity(digits.len() - at + unit.len());
    text.extend(digits[at..].iter().map(|&digit| char::from(digit)));
    text.push_str(unit);
    text
}

/// The pieces joined, in one allocation.
fn concat(pieces: &[&str]) -> String {
    let mut out = String::with_capacity(pieces.iter().map(|piece| piece.len()).sum());
    pieces.iter().for_each(|piece| out.push_str(piece));
    out
}

/// What a store's failure means for a call or a status read: a record the store cannot
/// interpret (a state a newer idem wrote, a damaged row) is RECORD_UNREADABLE, which no
/// retry can fix; a record locked by a transaction in flight is IN_PROGRESS; only a failure
/// of the backend itself is STORE_UNAVAILABLE, retryable.
pub(crate) fn store_failed(tool: &Tool, key: &Key, error: &StoreError) -> (Outcome, Error) {
    match error {
        StoreError::Corrupt(why) => (Outcome::Unreadable, corrupt(tool, key, why)),
        // Held by a transaction in flight: in progress, with no record to say since when.
        StoreError::Locked => {
            let running =
                Running { retry_after: retry_after(Duration::ZERO, tool.lease, None), since_ms: None, progress: None };
            (Outcome::InProgress, in_progress(tool, key, running))
        }
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
    let why = error.backend_text();
    Error::new(
        ErrorCode::StoreUnavailable,
        format!("{}: the idempotency store failed ({why}); the action was not run", tool.name),
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
        compare_written: &["amount", "currency"],
        status_fn: "send_invoice_status",
        lease: std::time::Duration::from_secs(60),
        max_hold: std::time::Duration::from_secs(3600),
        retain: std::time::Duration::from_secs(60),
        serving: None,
        timeout: None,
        instruments: crate::__idem_instruments!("send_invoice"),
        claim: crate::call::Claim::new(),
    };

    #[test]
    fn in_progress_names_the_key_and_the_status_function() {
        let key = build_key(TOOL.name, TOOL.template, &[&"acme"]).unwrap();
        let running = Running { retry_after: Duration::from_millis(2500), since_ms: Some(7), progress: None };
        let error = in_progress(&TOOL, &key, running.clone());
        assert_eq!(error.code(), ErrorCode::InProgress);
        assert_eq!(error.message(), "send_invoice: invoice:acme is still in progress");
        assert_eq!(error.suggestion(), Some("do not call send_invoice again; call send_invoice_status in 3 s"));
        assert_eq!(error.running(), Some(&running));
        let with_progress = Running { progress: Some("rendering the PDF".into()), ..running };
        let error = in_progress(&TOOL, &key, with_progress);
        assert_eq!(error.message(), "send_invoice: invoice:acme is still in progress (rendering the PDF)");
        let json = serde_json::to_value(&error).unwrap();
        assert_eq!(json["error"]["retry_after_ms"], 2500);
        assert_eq!(json["error"]["since_ms"], 7);
        assert_eq!(json["error"]["progress"], "rendering the PDF");
        assert_eq!(serde_json::from_value::<Error>(json).unwrap(), error, "the running call reads back");
    }

    #[test]
    fn the_retry_hint_follows_the_elapsed_time_within_its_bounds() {
        let (s, ms) = (Duration::from_secs, Duration::from_millis);
        let lease = s(30);
        assert_eq!(retry_after(ms(200), lease, None), s(1), "at least a second");
        assert_eq!(retry_after(s(4), lease, None), s(4), "as long as it has run");
        assert_eq!(retry_after(s(600), lease, None), s(10), "at most a third of the lease");
        assert_eq!(retry_after(s(600), s(300), None), s(30), "and at most 30 s");
        assert_eq!(retry_after(s(4), lease, Some(ms(500))), ms(600), "just after the lease ends");
        assert_eq!(retry_after(s(4), lease, Some(ms(0))), ms(100), "soon, at an ended lease");
        assert_eq!(retry_after(s(4), ms(150), None), ms(100), "never sooner than 100 ms");
        assert_eq!(retry_after(s(4), lease, Some(ms(300) + Duration::from_nanos(1))), ms(400), "whole milliseconds");
        assert_eq!(wait_text(ms(800)), "800 ms");
        assert_eq!(wait_text(ms(2001)), "3 s");
        assert_eq!(wait_text(ms(0)), "0 ms");
        assert_eq!(wait_text(s(30)), "30 s");
    }

    /// Under a lease shorter than 3 s, a third of the lease wins over the 1 s minimum: a
    /// caller that waits as told comes back before a holder that died could be freed.
    #[test]
    fn a_short_lease_caps_the_hint_below_a_second() {
        let (s, ms) = (Duration::from_secs, Duration::from_millis);
        for (lease, hint) in [(s(3), s(1)), (s(2), ms(666)), (s(1), ms(333)), (ms(500), ms(166)), (ms(240), ms(100))] {
            for elapsed in [Duration::ZERO, ms(200), s(5), s(600)] {
                assert_eq!(retry_after(elapsed, lease, None), hint, "lease {lease:?}, run for {elapsed:?}");
                let running = retry_after(elapsed, lease, Some(lease));
                assert_eq!(running, hint, "lease {lease:?}, run for {elapsed:?}, just renewed");
            }
        }
        // A running call whose lease ends sooner than that is asked about just after it ends.
        assert_eq!(retry_after(s(5), s(2), Some(ms(200))), ms(300));

        // What a caller reads is what the code holds: the answer reads back equal.
        let key = build_key(TOOL.name, TOOL.template, &[&"acme"]).unwrap();
        let hint = retry_after(s(5), s(2), Some(s(2)));
        let error = in_progress(&TOOL, &key, Running { retry_after: hint, since_ms: Some(7), progress: None });
        assert_eq!(error.retry_after(), Some(ms(666)));
        let json = serde_json::to_value(&error).unwrap();
        assert_eq!(json["error"]["retry_after_ms"], 666);
        assert_eq!(serde_json::from_value::<Error>(json).unwrap(), error, "the hint reads back equal");
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
