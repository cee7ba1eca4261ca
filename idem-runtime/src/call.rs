//! One call of an idempotent tool: reserve the key, run the body once, store its result,
//! and answer every repeat from the store.
//!
//! The sync and async drivers differ only in how they reach the store; every decision
//! is made by the plain functions they share.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::compare::{ComparedValue, differences, request_json};
use crate::error::{Error, ErrorCode};
use crate::key::{Key, KeyPart, Segment, build_key};
use crate::observe::{Outcome, record};
use crate::output::{ToolOutput, replay_value};
use crate::scope::{Scope, Scoped, in_scope};
use crate::store::{AsyncStore, Completion, RecordId, RecordState, Reservation, Reserve, Store, StoreError, Token};

/// What the macro knows about one tool at compile time.
#[doc(hidden)]
#[derive(Debug)]
pub struct Tool {
    /// The function's name.
    pub name: &'static str,
    /// The record namespace: `crate::fn_name` unless the attribute sets one.
    pub namespace: &'static str,
    /// The parsed key template.
    pub template: &'static [Segment],
    /// The compared fields, as written, sorted.
    pub compare: &'static [&'static str],
    /// The generated status function's name, named in suggestions.
    pub status_fn: &'static str,
    /// How long a reservation holds before an unfinished call counts as abandoned.
    pub lease: Duration,
}

/// The default lease: long enough for slow providers, short enough that a crashed call
/// is reported as OUTCOME_UNKNOWN within minutes rather than blocking its key for good.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(300);

/// A call's key and compared fields, computed before the body runs so that a body which
/// changes its inputs cannot change what is recorded.
#[doc(hidden)]
pub struct Call {
    tool: &'static Tool,
    key: Result<Key, Error>,
    request: Result<String, Error>,
    started: Instant,
}

impl Call {
    /// Gathers a call's key fields (in template order) and compared fields (in
    /// `tool.compare` order).
    pub fn new<const N: usize>(tool: &'static Tool, key_parts: &[&dyn KeyPart], compared: [ComparedValue; N]) -> Call {
        let started = Instant::now();
        Call {
            tool,
            key: build_key(tool.name, tool.template, key_parts),
            request: request_json(tool.name, tool.compare, compared),
            started,
        }
    }
}

/// Runs a sync tool's body at most once per key.
pub fn run_sync<S, O, F>(call: Call, store: &S, body: F) -> O
where
    S: Store + ?Sized,
    O: ToolOutput,
    F: FnOnce() -> O,
{
    let Call { tool, key, request, started } = call;
    let (key, request) = match checked(key, request) {
        Ok(ready) => ready,
        Err((key, error)) => return answer(tool, key.as_ref(), started, Outcome::InvalidKey, Err(error)),
    };
    let id = RecordId { namespace: tool.namespace, key: key.as_str() };
    let reserved = store.reserve(Reserve { id, request: &request, lease: tool.lease });
    let token = match decide(tool, &key, &request, reserved) {
        Step::Run(token) => token,
        Step::Answer(outcome, answer_) => return answer(tool, Some(&key), started, outcome, answer_),
    };
    let mut abandon = Abandon::arm(tool, &key);
    let output = in_scope(&mut CurrentKey(Some(key.clone())), body);
    abandon.disarm();
    let outcome = match settlement(tool, &key, &output) {
        Settlement::Complete(json) => {
            let mut result = store.complete(id, token, Completion::Success(&json));
            for _ in 1..COMPLETE_ATTEMPTS {
                if !worth_retrying(&result) {
                    break;
                }
                result = store.complete(id, token, Completion::Success(&json));
            }
            recorded(tool, &key, result)
        }
        Settlement::Release => released(tool, &key, store.release(id, token)),
        Settlement::Unrecordable => Outcome::Unrecorded,
    };
    record(tool.name, Some(&key), outcome, started.elapsed());
    output
}

/// Runs an async tool's body at most once per key.
pub async fn run_async<S, O, F>(call: Call, store: &S, body: F) -> O
where
    S: AsyncStore + ?Sized,
    O: ToolOutput,
    F: Future<Output = O>,
{
    let Call { tool, key, request, started } = call;
    let (key, request) = match checked(key, request) {
        Ok(ready) => ready,
        Err((key, error)) => return answer(tool, key.as_ref(), started, Outcome::InvalidKey, Err(error)),
    };
    let id = RecordId { namespace: tool.namespace, key: key.as_str() };
    let reserved = store.reserve(Reserve { id, request: &request, lease: tool.lease }).await;
    let token = match decide(tool, &key, &request, reserved) {
        Step::Run(token) => token,
        Step::Answer(outcome, answer_) => return answer(tool, Some(&key), started, outcome, answer_),
    };
    let mut abandon = Abandon::arm(tool, &key);
    let output = Scoped::new(body, CurrentKey(Some(key.clone()))).await;
    abandon.disarm();
    let outcome = match settlement(tool, &key, &output) {
        Settlement::Complete(json) => {
            let mut result = store.complete(id, token, Completion::Success(&json)).await;
            for _ in 1..COMPLETE_ATTEMPTS {
                if !worth_retrying(&result) {
                    break;
                }
                result = store.complete(id, token, Completion::Success(&json)).await;
            }
            recorded(tool, &key, result)
        }
        Settlement::Release => released(tool, &key, store.release(id, token).await),
        Settlement::Unrecordable => Outcome::Unrecorded,
    };
    record(tool.name, Some(&key), outcome, started.elapsed());
    output
}

/// The key and request, or the first error with the key when it was built.
fn checked(key: Result<Key, Error>, request: Result<String, Error>) -> Result<(Key, String), (Option<Key>, Error)> {
    match (key, request) {
        (Ok(key), Ok(request)) => Ok((key, request)),
        (Err(error), _) => Err((None, error)),
        (Ok(key), Err(error)) => Err((Some(key), error)),
    }
}

/// Only a backend failure may pass on a second attempt; a fenced completion never will.
fn worth_retrying(result: &Result<(), StoreError>) -> bool {
    matches!(result, Err(StoreError::Backend(_)))
}

/// How often a completion is written before the body's result is returned unrecorded:
/// the store's own waits (SQLite's busy timeout, a pool's checkout) pace the attempts.
const COMPLETE_ATTEMPTS: usize = 3;

enum Step {
    Run(Token),
    Answer(Outcome, Result<String, Error>),
}

/// What a reservation attempt means for this call. CONFLICT is judged first, on every
/// path that finds a record: a repeat with other compared fields is told so even while
/// the first call runs.
fn decide(tool: &Tool, key: &Key, request: &str, reserved: Result<Reservation, StoreError>) -> Step {
    let record = match reserved {
        Ok(Reservation::Acquired { token }) => return Step::Run(token),
        Ok(Reservation::Existing(record)) => record,
        Err(error) => return Step::Answer(Outcome::StoreUnavailable, Err(store_unavailable(tool, &error))),
    };
    let differing = differences(&record.request, request);
    if !differing.is_empty() {
        let list: Vec<String> =
            differing.iter().map(|d| format!("{} was {}, now {}", d.field, d.stored, d.requested)).collect();
        let error = Error::new(
            ErrorCode::Conflict,
            format!("{}: {key} was already requested with other values: {}", tool.name, list.join("; ")),
        )
        .with_suggestion(format!(
            "ask the user before changing or adding anything; call {} to see the first request's result",
            tool.status_fn
        ))
        .with_differences(differing);
        return Step::Answer(Outcome::Conflict, Err(error));
    }
    match record.state {
        RecordState::Completed { result } => Step::Answer(Outcome::Replayed, Ok(result)),
        RecordState::InProgress { lease_expired: false, .. } => {
            let error = Error::new(ErrorCode::InProgress, format!("{}: {key} is still in progress", tool.name))
                .with_suggestion(format!("do not call {} again; call {} in a few seconds", tool.name, tool.status_fn));
            Step::Answer(Outcome::InProgress, Err(error))
        }
        RecordState::InProgress { lease_expired: true, .. } => Step::Answer(Outcome::Unknown, Err(unknown(tool, key))),
        RecordState::Failed { .. } => {
            let error = Error::new(
                ErrorCode::RecordUnreadable,
                format!("{}: {key} holds a kept error, which this version of the tool cannot replay", tool.name),
            )
            .with_suggestion(format!("call {} to read it", tool.status_fn));
            Step::Answer(Outcome::Unreadable, Err(error))
        }
    }
}

pub(crate) fn store_unavailable(tool: &Tool, error: &StoreError) -> Error {
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

/// Turns an answer that is not a fresh run into the tool's output, and records it.
fn answer<O: ToolOutput>(
    tool: &Tool,
    key: Option<&Key>,
    started: Instant,
    outcome: Outcome,
    answer: Result<String, Error>,
) -> O {
    let (outcome, output) = match answer {
        Ok(stored) => match replay_value::<O::Value>(&stored) {
            Ok(value) => (outcome, O::from_value(value)),
            Err(error) => {
                let key = key.map_or("", Key::as_str);
                let error = Error::new(
                    ErrorCode::RecordUnreadable,
                    format!(
                        "{}: the stored result for {key} does not read as this tool's result ({error}); the action was not run again",
                        tool.name
                    ),
                )
                .with_suggestion(format!("a person must inspect the record for {key}"));
                (Outcome::Unreadable, O::from_error(error))
            }
        },
        Err(error) => (outcome, O::from_error(error)),
    };
    record(tool.name, key, outcome, started.elapsed());
    output
}

enum Settlement {
    Complete(String),
    Release,
    Unrecordable,
}

fn settlement<O: ToolOutput>(tool: &Tool, key: &Key, output: &O) -> Settlement {
    let Some(value) = output.success() else {
        return Settlement::Release;
    };
    match serde_json::to_string(value) {
        Ok(json) => Settlement::Complete(json),
        Err(error) => {
            tracing::error!(
                target: "idem", tool = tool.name, key = key.as_str(), %error,
                "the result cannot be serialized, so it was not recorded; the reservation stays for reconciliation"
            );
            Settlement::Unrecordable
        }
    }
}

/// The outcome of completion attempts: recorded, or (after the effect happened) left
/// reserved for reconciliation, never released.
fn recorded(tool: &Tool, key: &Key, result: Result<(), StoreError>) -> Outcome {
    let Err(error) = result else {
        return Outcome::Fresh;
    };
    tracing::error!(
        target: "idem", tool = tool.name, key = key.as_str(), %error,
        "the body succeeded but its completion could not be recorded; returning its result and leaving the reservation for reconciliation"
    );
    Outcome::Unrecorded
}

fn released(tool: &Tool, key: &Key, result: Result<(), StoreError>) -> Outcome {
    if let Err(error) = result {
        tracing::error!(
            target: "idem", tool = tool.name, key = key.as_str(), %error,
            "the body failed but its reservation could not be released; retries will see it in progress until its lease ends"
        );
    }
    Outcome::Released
}

/// Logs a body that never returned (a panic, or a dropped future): its reservation stays
/// in place, because nobody knows whether the action happened.
struct Abandon<'a> {
    tool: &'a Tool,
    key: &'a Key,
    armed: bool,
}

impl<'a> Abandon<'a> {
    fn arm(tool: &'a Tool, key: &'a Key) -> Self {
        Abandon { tool, key, armed: true }
    }

    fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for Abandon<'_> {
    fn drop(&mut self) {
        if self.armed {
            let how = if std::thread::panicking() { "panicked" } else { "was cancelled" };
            tracing::warn!(
                target: "idem", tool = self.tool.name, key = self.key.as_str(),
                "the body {how}; its reservation stays in place until its lease ends (outcome unknown)"
            );
        }
    }
}

thread_local!(static CURRENT_KEY: std::cell::RefCell<Option<Key>> = const { std::cell::RefCell::new(None) });

struct CurrentKey(Option<Key>);

impl Scope for CurrentKey {
    type Saved = Option<Key>;
    fn enter(&mut self) -> Option<Key> {
        CURRENT_KEY.with(|slot| slot.replace(self.0.take()))
    }
    fn exit(&mut self, saved: Option<Key>) {
        self.0 = CURRENT_KEY.with(|slot| slot.replace(saved));
    }
}

/// The key of the idempotent call whose body is running on this thread or task, to send
/// to a provider that accepts idempotency keys (as Stripe does), or to derive per-step
/// keys with [`Key::step`]. `None` outside a body.
pub fn current_key() -> Option<Key> {
    CURRENT_KEY.with(|slot| slot.borrow().clone())
}
