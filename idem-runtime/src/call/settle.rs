//! Settling a key once its body returned: the completion (retried briefly), a result that
//! cannot be recorded (the key is kept, marked abandoned: the effect happened), or the
//! release of a body's error. Never a release of a result: a blind release turns a crash
//! into a duplicate.

use crate::key::Key;
use crate::observe::{AbandonedBy, Happened, Outcome, Phase, TelemetryKey, notify};
use crate::output::ToolOutput;
use crate::store::{Completion, RecordId, Store, StoreError, Token};

use super::Tool;
use super::hooks::ErrorPolicy;

/// How often a completion is written before the body's result is returned unrecorded:
/// the store's own waits (SQLite's busy timeout, a pool's checkout) pace the attempts. A
/// store that waited its whole deadline is not asked again (see `Store::complete`).
const COMPLETE_ATTEMPTS: usize = 3;

/// Settles the key after its body returned: `settled` is what [`settlement`] made of the
/// body's output (taken before any await, so that the output is not held across them).
pub(super) async fn settle<S: Store + ?Sized>(
    tool: &'static Tool,
    store: &S,
    (key, token): (&Key, Token),
    settled: Option<Result<Settled, ()>>,
) -> Outcome {
    let id = RecordId { namespace: tool.namespace, key: key.as_str() };
    match settled {
        Some(Ok(completion)) => {
            let completion = completion.as_completion();
            let mut result = store.complete(id, token, completion, tool.retain).await;
            for _ in 1..COMPLETE_ATTEMPTS {
                match &result {
                    Err(error @ StoreError::Backend(_)) if !error.ran_out_of_time() => {}
                    _ => break,
                }
                result = store.complete(id, token, completion, tool.retain).await;
            }
            recorded(tool, key, result)
        }
        Some(Err(())) => {
            notify(tool.subject(), key, Phase::Settle, Happened::Abandoned(AbandonedBy::UnrecordableResult));
            kept_abandoned(tool, key, store.abandon(id, token).await)
        }
        None => {
            let result = store.release(id, token).await;
            if result.is_ok() && tool.budget.is_some() {
                notify(tool.subject(), key, Phase::Settle, Happened::BudgetRefunded);
            }
            released(tool, key, result)
        }
    }
}

/// What to write after the body: a completion (its result, or a kept error), `Err(())`
/// when it cannot be recorded (see [`recordable`]), or `None` to release the key.
pub(super) fn settlement<O: ToolOutput, P: ErrorPolicy<O>>(
    tool: &Tool,
    key: &Key,
    output: &O,
    policy: &P,
) -> Option<Result<Settled, ()>> {
    Some(match output.success() {
        Some(value) => recordable(tool, key, "the body's result", value).map(Settled::Success),
        None if policy.outcome_unknown(output) => Err(()),
        None => match policy.kept_error(output)? {
            Ok(json) => match policy.replay_error(&json) {
                Some(Err(error)) => not_recorded(tool, key, "the body's kept error", "does not read back", &error),
                _ => Ok(Settled::KeptError(json)),
            },
            Err(error) => not_recorded(tool, key, "the body's kept error", "cannot be serialized", &error),
        },
    })
}

/// `value` as the JSON to store, if it reads back as its own type: a value JSON cannot
/// hold (`f64::NAN` and the infinities serialize as `null`) would otherwise be stored and
/// answer RECORD_UNREADABLE to every retry. The check deserializes the bytes just written,
/// once, on the path that ran the body; replays never pay for it.
pub(super) fn recordable<T: serde::Serialize + serde::de::DeserializeOwned>(
    tool: &Tool,
    key: &Key,
    what: &str,
    value: &T,
) -> Result<String, ()> {
    let json = serde_json::to_string(value).or_else(|e| not_recorded(tool, key, what, "cannot be serialized", &e))?;
    match serde_json::from_str::<T>(&json) {
        Ok(_) => Ok(json),
        Err(error) => not_recorded(tool, key, what, "does not read back from its JSON", &error),
    }
}

/// The error event for an answer that cannot be recorded.
fn not_recorded<T>(tool: &Tool, key: &Key, what: &str, why: &str, error: &serde_json::Error) -> Result<T, ()> {
    tracing::error!(
        target: "idem", tool = tool.name, key = %TelemetryKey::of(key), %error,
        "{what} {why} (JSON has no NaN or infinity, for one), so it was not recorded; the effect happened, so \
         the key is kept and marked abandoned: retries answer OUTCOME_UNKNOWN or run the reconcile hook"
    );
    Err(())
}

/// What [`settlement`] found to write.
pub(super) enum Settled {
    Success(String),
    KeptError(String),
}

impl Settled {
    fn as_completion(&self) -> Completion<'_> {
        match self {
            Settled::Success(json) => Completion::Success(json),
            Settled::KeptError(json) => Completion::KeptError(json),
        }
    }
}

/// The outcome of completing: recorded, refused because a newer holder took the key over,
/// or (after the effect happened) left reserved for reconciliation, never released.
fn recorded(tool: &'static Tool, key: &Key, result: Result<(), StoreError>) -> Outcome {
    match result {
        Ok(()) => Outcome::Fresh,
        Err(StoreError::Fenced) => {
            notify(tool.subject(), key, Phase::Settle, Happened::Fenced);
            tracing::error!(
                target: "idem", tool = tool.name, key = %TelemetryKey::of(key),
                "the body finished after its lease was taken over; the newer holder's record stands and this result was not recorded"
            );
            Outcome::Fenced
        }
        Err(error) => {
            notify(tool.subject(), key, Phase::Settle, Happened::Unrecorded);
            tracing::error!(
                target: "idem", tool = tool.name, key = %TelemetryKey::of(key), %error,
                "the body succeeded but its completion could not be recorded; returning its result and leaving the reservation for reconciliation"
            );
            Outcome::Unrecorded
        }
    }
}

/// The outcome of marking a key abandoned after its body ran but its answer could not be
/// recorded: never released, since the effect happened.
pub(super) fn kept_abandoned(tool: &Tool, key: &Key, result: Result<(), StoreError>) -> Outcome {
    if let Err(error) = result {
        tracing::error!(
            target: "idem", tool = tool.name, key = %TelemetryKey::of(key), %error,
            "could not mark the key abandoned; retries will see it in progress until its lease ends"
        );
    }
    Outcome::Unrecorded
}

fn released(tool: &Tool, key: &Key, result: Result<(), StoreError>) -> Outcome {
    if let Err(error) = result {
        tracing::error!(
            target: "idem", tool = tool.name, key = %TelemetryKey::of(key), %error,
            "the body failed but its reservation could not be released; retries will see it in progress until its lease ends"
        );
    }
    Outcome::Released
}
