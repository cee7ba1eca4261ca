//! The answers a call gives that are not the tool's own output: IN_PROGRESS with its retry
//! hint, CONFLICT, OUTCOME_UNKNOWN, RECORD_UNREADABLE, STORE_UNAVAILABLE and TIMEOUT, each
//! naming the tool, the key and what to do instead. The driver, status reads and a tool's
//! front end (rmcp's MCP Tasks) all answer with these, so a client reads the same words
//! whichever way it asked.

use std::time::Duration;

use crate::difference::FieldDifference;
use crate::error::{Error, ErrorCode, Running};
use crate::key::Key;
use crate::observe::Outcome;
use crate::store::StoreError;

use super::Tool;

/// Every concurrent duplicate gets this answer, so it is put together without `format!`
/// (whose formatting machinery cost as much as the rest of the answer).
pub(crate) fn in_progress(tool: &Tool, key: &Key, running: Running) -> Error {
    let key = key.readable();
    let message = match &running.progress {
        Some(progress) => concat(&[tool.name, ": ", &key, " is still in progress (", progress, ")"]),
        None => concat(&[tool.name, ": ", &key, " is still in progress"]),
    };
    let wait = wait_text(running.retry_after);
    Error::new(ErrorCode::InProgress, message)
        .with_suggestion(concat(&["do not call ", tool.name, " again; call ", tool.status_fn, " in ", &wait]))
        .with_running(running)
}

/// A repeat whose compared fields differ from the first call's: each differing field is
/// named with both values.
pub(crate) fn conflict(tool: &Tool, key: &Key, mut differing: Vec<FieldDifference>) -> Error {
    // Recorded under the names the tool keeps; shown as the model sent them.
    for difference in &mut differing {
        if let std::borrow::Cow::Owned(name) = tool.model_name(&difference.field) {
            difference.field = name;
        }
    }
    let mut message = concat(&[tool.name, ": ", &key.readable(), " was already requested with other values: "]);
    for (i, d) in differing.iter().enumerate() {
        let separator = if i == 0 { "" } else { "; " };
        message.extend([separator, &d.field, " was ", &d.stored_text, ", now ", &d.requested_text]);
    }
    Error::new(ErrorCode::Conflict, message)
        .with_suggestion(concat(&[
            "ask the user before changing or adding anything; call ",
            tool.status_fn,
            " to see the first request's result",
        ]))
        .with_differences(differing)
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

/// OUTCOME_UNKNOWN for a call that found `key`'s first call abandoned (its lease ended)
/// and no reconcile hook. Nothing takes such a key over, so that first call, if it was only
/// paused (a stopped process, a pause past its lease), may still finish and record its
/// result: the answer says so, and every later call and `<fn>_status` then read it.
pub(crate) fn unknown(tool: &Tool, key: &Key) -> Error {
    Error::new(
        ErrorCode::OutcomeUnknown,
        format!(
            "{}: an earlier call for {} stopped renewing its reservation before it finished (a crash, a panic, a \
             cancellation, or a process paused past its lease); it may or may not have happened, and a call that was \
             only paused may still finish and record its result",
            tool.name,
            key.readable()
        ),
    )
    .with_suggestion(format!(
        "do not call {} again blindly: call {} later, which shows a result recorded late, and check with the provider \
         or a person",
        tool.name, tool.status_fn
    ))
}

/// OUTCOME_UNKNOWN once reconciling `key` did not settle it (the reconcile hook could not
/// tell, or its answer could not be recorded). The key was taken over, so the first call
/// can no longer record a result: only a later reconcile or a person settles it.
pub(crate) fn unknown_after_reconcile(tool: &Tool, key: &Key) -> Error {
    Error::new(
        ErrorCode::OutcomeUnknown,
        format!(
            "{}: an earlier call for {} stopped before it finished, and reconciling it could not tell whether it \
             happened; it may or may not have happened",
            tool.name,
            key.readable()
        ),
    )
    .with_suggestion(format!(
        "do not call {} again blindly; check with the provider or a person, or call {} later",
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

/// The caller's `timeout` passed before the body finished; the body goes on. Only tokio
/// runs a body on after its caller's answer (see [`run_async_timeout`](super::run_async_timeout)),
/// so without it no call answers TIMEOUT.
#[cfg(feature = "tokio")]
pub(crate) fn timed_out(tool: &Tool, key: Option<&Key>, after: Duration) -> Error {
    let key = key.map_or_else(String::new, |key| format!(" for {}", key.readable()));
    let retry_after = retry_after(after, tool.lease, None);
    let wait = wait_text(retry_after);
    Error::new(
        ErrorCode::Timeout,
        format!(
            "{}: no answer within {after:?}; the call{key} goes on and its outcome is recorded when it finishes",
            tool.name
        ),
    )
    .with_suggestion(format!("do not call {} again; call {} in {wait} to learn the outcome", tool.name, tool.status_fn))
    .with_running(Running { retry_after, since_ms: None, progress: None })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::tests::SEND_INVOICE;
    use crate::key::build_key;

    #[test]
    fn in_progress_names_the_key_and_the_status_function() {
        let key = build_key(SEND_INVOICE.name, SEND_INVOICE.template, &[&"acme"]).unwrap();
        let running = Running { retry_after: Duration::from_millis(2500), since_ms: Some(7), progress: None };
        let error = in_progress(&SEND_INVOICE, &key, running.clone());
        assert_eq!(error.code(), ErrorCode::InProgress);
        assert_eq!(error.message(), "send_invoice: invoice:acme is still in progress");
        assert_eq!(error.suggestion(), Some("do not call send_invoice again; call send_invoice_status in 3 s"));
        assert_eq!(error.running(), Some(&running));
        let with_progress = Running { progress: Some("rendering the PDF".into()), ..running };
        let error = in_progress(&SEND_INVOICE, &key, with_progress);
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
        let key = build_key(SEND_INVOICE.name, SEND_INVOICE.template, &[&"acme"]).unwrap();
        let hint = retry_after(s(5), s(2), Some(s(2)));
        let error = in_progress(&SEND_INVOICE, &key, Running { retry_after: hint, since_ms: Some(7), progress: None });
        assert_eq!(error.retry_after(), Some(ms(666)));
        let json = serde_json::to_value(&error).unwrap();
        assert_eq!(json["error"]["retry_after_ms"], 666);
        assert_eq!(serde_json::from_value::<Error>(json).unwrap(), error, "the hint reads back equal");
    }
}
