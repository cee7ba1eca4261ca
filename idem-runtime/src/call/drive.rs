//! The one driver of a call, for sync and async tools alike: reserve, decide, reconcile
//! an abandoned reservation, run the body, settle. Sync tools run it over a store whose
//! futures are always ready (see [`Blocking`]), so every branch is written once.
//!
//! The driver reaches the store through [`Driven`] rather than [`AsyncStore`], whose boxed
//! futures would cost a sync tool an allocation per store operation for nothing.

use std::future::{Future, ready};
use std::time::Duration;

use crate::error::Error;
use crate::key::Key;
use crate::observe::Outcome;
use crate::output::{ToolOutput, replay_value};
use crate::scope::Scoped;
use crate::store::{AsyncStore, Completion, RecordId, Reservation, Reserve, Store, StoreError, Token};

use super::decide::{Answer, Step, decide, store_failed, unknown, unreadable};
use super::hooks::{Abandoned, ErrorPolicy, Reconcile, Reconciled};
use super::{Call, CurrentKey, Tool};

/// What a call came to: the output for the caller, and how it was answered.
pub(crate) struct Ran<O> {
    pub(crate) output: O,
    pub(crate) key: Option<Key>,
    pub(crate) outcome: Outcome,
}

/// How often a completion is written before the body's result is returned unrecorded:
/// the store's own waits (SQLite's busy timeout, a pool's checkout) pace the attempts.
const COMPLETE_ATTEMPTS: usize = 3;

pub(crate) async fn drive<S, O, B, H, P>(call: Call, store: &S, body: B, hook: &H, policy: &P) -> Ran<O>
where
    S: Driven,
    O: ToolOutput,
    B: Future<Output = O>,
    H: Reconcile<O::Value>,
    P: ErrorPolicy<O>,
{
    let Call { tool, key, request, .. } = call;
    let (key, request) = match (key, request) {
        (Ok(key), Ok(request)) => (key, request),
        (Err(error), _) => return Ran { output: O::from_error(error), key: None, outcome: Outcome::InvalidKey },
        (Ok(key), Err(error)) => {
            return Ran { output: O::from_error(error), key: Some(key), outcome: Outcome::InvalidKey };
        }
    };
    let id = RecordId { namespace: tool.namespace, key: key.as_str() };
    let reserve = Reserve { id, request: &request, lease: tool.lease };
    let token = match decide(tool, &key, &request, store.reserve(reserve).await, H::PRESENT) {
        Step::Run(token) => token,
        Step::Answer(outcome, answer) => return answered(tool, key, outcome, answer, policy),
        Step::Reconcile { expired, since_ms } => {
            let abandoned = Abandoned { key: key.clone(), request: request.clone(), since_ms };
            match reconcile(tool, store, id, expired, abandoned, hook).await {
                Ok(token) => token,
                Err((outcome, answer)) => return answered(tool, key, outcome, answer, policy),
            }
        }
    };
    let abandon = Abandon::arm(tool, &key);
    let output = Scoped::new(body, CurrentKey(Some(key.clone()))).await;
    abandon.disarm();
    let outcome = match settlement(tool, &key, &output, policy) {
        Some(Ok(completion)) => {
            let completion = completion.as_completion();
            let mut result = store.complete(id, token, completion, tool.retain).await;
            for _ in 1..COMPLETE_ATTEMPTS {
                if !matches!(result, Err(StoreError::Backend(_))) {
                    break;
                }
                result = store.complete(id, token, completion, tool.retain).await;
            }
            recorded(tool, &key, result)
        }
        Some(Err(())) => Outcome::Unrecorded,
        None => released(tool, &key, store.release(id, token).await),
    };
    Ran { output, key: Some(key), outcome }
}

/// Takes over an abandoned reservation and asks the hook what happened. `Ok(token)` when
/// the body must run now under `token`; otherwise the answer.
async fn reconcile<S, T, H>(
    tool: &Tool,
    store: &S,
    id: RecordId<'_>,
    expired: Token,
    abandoned: Abandoned,
    hook: &H,
) -> Result<Token, (Outcome, Answer)>
where
    S: Driven,
    T: serde::Serialize,
    H: Reconcile<T>,
{
    let key = abandoned.key.clone();
    let token = match store.take_over(id, expired, tool.lease).await {
        Ok(token) => token,
        // Another caller is reconciling it, or it changed meanwhile: answer from what is
        // there now, without reconciling again.
        Err(StoreError::Fenced) => {
            let reserve = Reserve { id, request: &abandoned.request, lease: tool.lease };
            return match decide(tool, &key, &abandoned.request, store.reserve(reserve).await, false) {
                Step::Run(token) => Ok(token),
                Step::Answer(outcome, answer) => Err((outcome, answer)),
                Step::Reconcile { .. } => Err((Outcome::Unknown, Answer::Error(unknown(tool, &key)))),
            };
        }
        Err(error) => {
            let (outcome, error) = store_failed(tool, &key, &error);
            return Err((outcome, Answer::Error(error)));
        }
    };
    match hook.reconcile(abandoned).await {
        Reconciled::NotDone => Ok(token),
        Reconciled::Done(value) => {
            let Ok(json) = serde_json::to_string(&value) else {
                let _ = store.abandon(id, token).await;
                return Err((Outcome::Unknown, Answer::Error(unknown(tool, &key))));
            };
            if let Err(error) = store.complete(id, token, Completion::Success(&json), tool.retain).await {
                tracing::error!(
                    target: "idem", tool = tool.name, key = key.as_str(), %error,
                    "the reconcile hook found the action done but the result could not be recorded"
                );
            }
            Err((Outcome::Reconciled, Answer::Replay(json)))
        }
        Reconciled::Unknown => {
            if let Err(error) = store.abandon(id, token).await {
                tracing::error!(target: "idem", tool = tool.name, key = key.as_str(), %error, "could not mark the key abandoned again");
            }
            Err((Outcome::Unknown, Answer::Error(unknown(tool, &key))))
        }
    }
}

/// Turns an answer that is not a fresh run into the tool's output.
fn answered<O: ToolOutput, P: ErrorPolicy<O>>(
    tool: &Tool,
    key: Key,
    outcome: Outcome,
    answer: Answer,
    policy: &P,
) -> Ran<O> {
    let (outcome, output) = match answer {
        Answer::Error(error) => (outcome, O::from_error(error)),
        Answer::Replay(stored) => match replay_value::<O::Value>(&stored) {
            Ok(value) => (outcome, O::from_value(value)),
            Err(error) => (Outcome::Unreadable, O::from_error(unreadable(tool, &key, "result", &error))),
        },
        Answer::KeptError(stored) => match policy.replay_error(&stored) {
            Some(Ok(output)) => (outcome, output),
            Some(Err(error)) => (Outcome::Unreadable, O::from_error(unreadable(tool, &key, "error", &error))),
            None => {
                let error = Error::new(
                    crate::ErrorCode::RecordUnreadable,
                    format!("{}: {key} holds a kept error, and this tool does not keep errors", tool.name),
                )
                .with_suggestion(format!("call {} to read it", tool.status_fn));
                (Outcome::Unreadable, O::from_error(error))
            }
        },
    };
    Ran { output, key: Some(key), outcome }
}

/// What to write after the body: a completion (its result, or a kept error), `Err(())`
/// when it cannot be serialized, or `None` to release the key.
fn settlement<O: ToolOutput, P: ErrorPolicy<O>>(
    tool: &Tool,
    key: &Key,
    output: &O,
    policy: &P,
) -> Option<Result<Settled, ()>> {
    let serialized = match output.success() {
        Some(value) => serde_json::to_string(value).map(Settled::Success),
        None => policy.kept_error(output)?.map(Settled::KeptError),
    };
    Some(serialized.map_err(|error| {
        tracing::error!(
            target: "idem", tool = tool.name, key = key.as_str(), %error,
            "the body's answer cannot be serialized, so it was not recorded; the reservation stays for reconciliation"
        );
    }))
}

enum Settled {
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
fn recorded(tool: &Tool, key: &Key, result: Result<(), StoreError>) -> Outcome {
    match result {
        Ok(()) => Outcome::Fresh,
        Err(StoreError::Fenced) => {
            tracing::error!(
                target: "idem", tool = tool.name, key = key.as_str(),
                "the body finished after its lease was taken over; the newer holder's record stands and this result was not recorded"
            );
            Outcome::Fenced
        }
        Err(error) => {
            tracing::error!(
                target: "idem", tool = tool.name, key = key.as_str(), %error,
                "the body succeeded but its completion could not be recorded; returning its result and leaving the reservation for reconciliation"
            );
            Outcome::Unrecorded
        }
    }
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

    fn disarm(mut self) {
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

/// The store operations the driver awaits, with futures of each store's own type.
pub(crate) trait Driven {
    fn reserve<'a>(&'a self, request: Reserve<'a>)
    -> impl Future<Output = Result<Reservation, StoreError>> + Send + 'a;
    fn take_over<'a>(
        &'a self,
        id: RecordId<'a>,
        expired: Token,
        lease: Duration,
    ) -> impl Future<Output = Result<Token, StoreError>> + Send + 'a;
    fn complete<'a>(
        &'a self,
        id: RecordId<'a>,
        token: Token,
        completion: Completion<'a>,
        retain: Duration,
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'a;
    fn release<'a>(
        &'a self,
        id: RecordId<'a>,
        token: Token,
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'a;
    fn abandon<'a>(
        &'a self,
        id: RecordId<'a>,
        token: Token,
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'a;
}

/// A sync store seen as an async one whose futures are ready at once, for the driver.
pub(crate) struct Blocking<'s, S: ?Sized>(pub(crate) &'s S);

/// An async store, for the driver.
pub(crate) struct Async<'s, S: ?Sized>(pub(crate) &'s S);

/// Implements [`Driven`] for a wrapper of `$store`: `$wrap` turns what the store's method
/// returned (`$returned`) into the future.
macro_rules! driven {
    ($wrapper:ident, $store:ident, |$returned:ident| $wrap:expr) => {
        impl<S: $store + ?Sized> Driven for $wrapper<'_, S> {
            fn reserve<'a>(
                &'a self,
                request: Reserve<'a>,
            ) -> impl Future<Output = Result<Reservation, StoreError>> + Send + 'a {
                let $returned = $store::reserve(self.0, request);
                $wrap
            }
            fn take_over<'a>(
                &'a self,
                id: RecordId<'a>,
                expired: Token,
                lease: Duration,
            ) -> impl Future<Output = Result<Token, StoreError>> + Send + 'a {
                let $returned = $store::take_over(self.0, id, expired, lease);
                $wrap
            }
            fn complete<'a>(
                &'a self,
                id: RecordId<'a>,
                token: Token,
                completion: Completion<'a>,
                retain: Duration,
            ) -> impl Future<Output = Result<(), StoreError>> + Send + 'a {
                let $returned = $store::complete(self.0, id, token, completion, retain);
                $wrap
            }
            fn release<'a>(
                &'a self,
                id: RecordId<'a>,
                token: Token,
            ) -> impl Future<Output = Result<(), StoreError>> + Send + 'a {
                let $returned = $store::release(self.0, id, token);
                $wrap
            }
            fn abandon<'a>(
                &'a self,
                id: RecordId<'a>,
                token: Token,
            ) -> impl Future<Output = Result<(), StoreError>> + Send + 'a {
                let $returned = $store::abandon(self.0, id, token);
                $wrap
            }
        }
    };
}

driven!(Blocking, Store, |result| ready(result));
driven!(Async, AsyncStore, |future| future);

/// Runs a future that never waits (a sync tool's drive over [`Blocking`]) to its end. It
/// takes the future pinned where it was made, so the large state machine is not moved.
pub(crate) fn ready_now<F: Future>(future: std::pin::Pin<&mut F>) -> F::Output {
    match future.poll(&mut std::task::Context::from_waker(std::task::Waker::noop())) {
        std::task::Poll::Ready(output) => output,
        std::task::Poll::Pending => unreachable!("a sync tool's call waited: every step of it is ready at once"),
    }
}
