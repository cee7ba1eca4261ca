//! The one driver of a call, for sync and async tools alike: reserve, decide, reconcile
//! an abandoned reservation, run the body, settle. A sync tool's call waits for it on its
//! own thread ([`block_on`](crate::store::block_on)), so every branch is written once.
//!
//! The driver reaches the store through a [`CallStore`]: the store's own futures, never
//! boxed, so a sync tool over a local store pays no allocation per store operation. Only
//! the rare steps are boxed, one allocation each when a call takes them (the approval
//! gate, the reconciling of an abandoned reservation), so that every other call's future
//! does not carry theirs.

use std::future::Future;
use std::pin::pin;

use crate::error::Error;
use crate::key::Key;
use crate::observe::{
    AbandonedBy, Failure, Happened, ObservedCall, Outcome, Phase, TelemetryKey, Verdict, notify, observed,
};
use crate::output::{ToolOutput, replay_value};
use crate::scope::Scoped;
use crate::store::{Completion, RecordId, Reserve, Store, StoreError, Token};

use super::admit::{Admission, admit, runs};
use super::answers::{store_failed, unknown, unknown_after_reconcile, unreadable};
use super::call_store::{CallStore, Renews, Reserving};
use super::decide::{Answer, Step, decide};
use super::hold::{Current, renewing};
use super::hooks::{Abandoned, ErrorPolicy, Reconcile, Reconciled};
use super::serving::front_end;
use super::settle::{kept_abandoned, recordable, settle, settlement};
use super::{Call, Tool};

/// What a call came to: the output for the caller, and how it was answered.
pub(crate) struct Ran<O> {
    pub(crate) output: O,
    pub(crate) key: Option<Key>,
    pub(crate) outcome: Outcome,
    /// Why the answer is an error, if it is one.
    pub(crate) failure: Option<Failure>,
}

impl<O> Ran<O> {
    /// Tells observation of the answer, and an enclosing [`observe`](crate::telemetry::observe) on
    /// this thread.
    pub(crate) fn answered(&self, watch: &ObservedCall) {
        watch.answered(self.key.as_ref(), self.outcome, self.failure);
        observed(watch.subject().name, self.key.as_ref(), self.outcome);
    }
}

pub(crate) async fn drive<S, R, L, O, B, H, P>(
    call: Call,
    at: &CallStore<'_, S, R, L>,
    body: B,
    hook: &H,
    policy: &P,
    watch: &ObservedCall,
) -> Ran<O>
where
    S: Store + ?Sized,
    R: Reserving<S>,
    L: Renews,
    O: ToolOutput,
    B: Future<Output = O>,
    H: Reconcile<O::Value>,
    P: ErrorPolicy<O>,
{
    let Call { tool, key, request, asks, described, started } = call;
    let (key, request) = match (key, request) {
        (Ok(key), Ok(request)) => (key, request),
        (Err(error), _) => return invalid(None, error),
        (Ok(key), Err(error)) => return invalid(Some(key), error),
    };
    let admitted = match admit(tool, at, (&key, &request), (asks.as_deref(), described)).await {
        Admission::Invalid(error) => return invalid(Some(key), error),
        Admission::Answered(outcome, error) => {
            watch.reserved();
            return answered(tool, key, outcome, Answer::Error(error), policy, Phase::Reserve);
        }
        Admission::Reserved(reserved) => reserved,
    };
    let id = RecordId { namespace: tool.namespace, key: key.as_str() };
    let token = match decide(tool, &key, &request, admitted.reservation, H::PRESENT) {
        Step::Run(token) => {
            runs(tool, &key, admitted.approved);
            token
        }
        Step::Answer(outcome, answer) => {
            watch.reserved();
            found_running(tool, &key, outcome, &answer, at).await;
            return answered(tool, key, outcome, answer, policy, Phase::Reserve);
        }
        Step::Reconcile { expired, since_ms } => {
            notify(tool.subject(), &key, Phase::Reserve, Happened::FoundAbandoned);
            let abandoned = Abandoned { key: key.clone(), request: request.clone(), since_ms };
            // Boxed, as rare: a call that finds no abandoned reservation should not carry it.
            match Box::pin(reconcile(tool, at, id, expired, abandoned, hook)).await {
                Ok(token) => token,
                Err((outcome, answer)) => {
                    watch.reserved();
                    found_running(tool, &key, outcome, &answer, at).await;
                    return answered(tool, key, outcome, answer, policy, Phase::Reconcile);
                }
            }
        }
    };
    // The reservation's time includes a take-over and the reconcile hook.
    watch.reserved();
    if let Some((serving, store)) = front_end(tool, at) {
        serving.body_started(tool, &key, token, started, store).await;
    }
    watch.holds(token.0);
    let abandon = Abandon::arm(tool, &key);
    let held = at.hold(tool, &key, token, started);
    super::cancel::forget(tool.namespace, key.as_str());
    let current = Current { namespace: tool.namespace, key: Some(key.clone()), slot: Some(held.call_ref()) };
    let mut body = pin!(Scoped::new(body, current));
    let output = match held.slot() {
        Some(slot) => renewing(at, slot, (tool, &key), token, body.as_mut()).await,
        None => body.await,
    };
    // Renewal ends before the completion is written: no renewal races the completion.
    drop(held);
    abandon.disarm();
    watch.body_ended();
    let outcome = settle(tool, at.store, (&key, token), settlement(tool, &key, &output, policy)).await;
    let failure = output.success().is_none().then_some(Failure::Tool);
    Ran { output, key: Some(key), outcome, failure }
}

/// Tells the tool's front end that the call found its action running, so that it may
/// answer for it (an MCP task) instead of IN_PROGRESS.
async fn found_running<S: Store + ?Sized, R: Reserving<S>, L: Renews>(
    tool: &'static Tool,
    key: &Key,
    outcome: Outcome,
    answer: &Answer,
    at: &CallStore<'_, S, R, L>,
) {
    if let (Outcome::InProgress, Answer::Error(error)) = (outcome, answer)
        && let Some(running) = error.running()
        && let Some((serving, store)) = front_end(tool, at)
    {
        serving.found_running(tool, key, running, store).await;
    }
}

/// The answer to a call whose key could not be built, or whose compared fields could not
/// be serialized: the body does not run.
fn invalid<O: ToolOutput>(key: Option<Key>, error: Error) -> Ran<O> {
    let failure = Some(Failure::Idem(error.code()));
    Ran { output: O::from_error(error), key, outcome: Outcome::InvalidKey, failure }
}

/// Takes over an abandoned reservation and asks the hook what happened. `Ok(token)` when
/// the body must run now under `token`; otherwise the answer.
async fn reconcile<S, R, L, T, H>(
    tool: &'static Tool,
    at: &CallStore<'_, S, R, L>,
    id: RecordId<'_>,
    expired: Token,
    abandoned: Abandoned,
    hook: &H,
) -> Result<Token, (Outcome, Answer)>
where
    S: Store + ?Sized,
    R: Reserving<S>,
    L: Renews,
    T: serde::Serialize + serde::de::DeserializeOwned,
    H: Reconcile<T>,
{
    let key = abandoned.key.clone();
    let store = at.store;
    let token = match store.take_over(id, expired, tool.lease).await {
        Ok(token) => {
            notify(tool.subject(), &key, Phase::Reconcile, Happened::TakenOver);
            token
        }
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
    let verdict = hook.reconcile(abandoned).await;
    let said = match verdict {
        Reconciled::Done(_) => Verdict::Done,
        Reconciled::NotDone => Verdict::NotDone,
        Reconciled::Unknown => Verdict::Unknown,
    };
    notify(tool.subject(), &key, Phase::Reconcile, Happened::Reconciled(said));
    match verdict {
        Reconciled::NotDone => Ok(token),
        Reconciled::Done(value) => {
            let Ok(json) = recordable(tool, &key, "the reconcile hook's result", &value) else {
                kept_abandoned(tool, &key, store.abandon(id, token).await);
                return Err((Outcome::Unknown, Answer::Error(unknown_after_reconcile(tool, &key))));
            };
            if let Err(error) = store.complete(id, token, Completion::Success(&json), tool.retain).await {
                tracing::error!(
                    target: "idem", tool = tool.name, key = %TelemetryKey::of(&key), %error,
                    "the reconcile hook found the action done but the result could not be recorded"
                );
            }
            Err((Outcome::Reconciled, Answer::Replay(json)))
        }
        Reconciled::Unknown => {
            kept_abandoned(tool, &key, store.abandon(id, token).await);
            Err((Outcome::Unknown, Answer::Error(unknown_after_reconcile(tool, &key))))
        }
    }
}

/// Turns an answer that is not a fresh run into the tool's output, and tells observers
/// of a replay, a conflict, an in-progress answer or an abandoned reservation.
fn answered<O: ToolOutput, P: ErrorPolicy<O>>(
    tool: &'static Tool,
    key: Key,
    outcome: Outcome,
    answer: Answer,
    policy: &P,
    phase: Phase,
) -> Ran<O> {
    let unreadable_record =
        |error: Error| (Outcome::Unreadable, Some(Failure::Idem(error.code())), O::from_error(error));
    let (outcome, failure, output) = match answer {
        Answer::Error(error) => (outcome, Some(Failure::Idem(error.code())), O::from_error(error)),
        Answer::Replay(stored) => match replay_value::<O::Value>(&stored) {
            Ok(value) => (outcome, None, O::from_value(value)),
            Err(error) => unreadable_record(unreadable(tool, &key, "result", &error)),
        },
        Answer::KeptError(stored) => match policy.replay_error(&stored) {
            Some(Ok(output)) => (outcome, Some(Failure::Tool), output),
            Some(Err(error)) => unreadable_record(unreadable(tool, &key, "error", &error)),
            None => unreadable_record(
                Error::new(
                    crate::error::ErrorCode::RecordUnreadable,
                    format!("{}: {key} holds a kept error, and this tool does not keep errors", tool.name),
                )
                .with_suggestion(format!("call {} to read it", tool.status_fn)),
            ),
        },
    };
    // Told of the answer given: a replay whose stored result no longer reads is no replay.
    let happened = match (outcome, phase) {
        (Outcome::Replayed, _) => Some(Happened::Replayed),
        (Outcome::Conflict, _) => Some(Happened::Conflict),
        (Outcome::InProgress, _) => Some(Happened::InProgress),
        // Without a reconcile hook, an abandoned reservation is answered at once.
        (Outcome::Unknown, Phase::Reserve) => Some(Happened::FoundAbandoned),
        _ => None,
    };
    if let Some(happened) = happened {
        notify(tool.subject(), &key, phase, happened);
    }
    Ran { output, key: Some(key), outcome, failure }
}

/// Logs a body that never returned (a panic, or a dropped future): its reservation stays
/// in place, because nobody knows whether the action happened.
struct Abandon<'a> {
    tool: &'static Tool,
    key: &'a Key,
    armed: bool,
}

impl<'a> Abandon<'a> {
    fn arm(tool: &'static Tool, key: &'a Key) -> Self {
        Abandon { tool, key, armed: true }
    }

    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for Abandon<'_> {
    fn drop(&mut self) {
        if self.armed {
            let (how, by) = if std::thread::panicking() {
                ("panicked", AbandonedBy::Panic)
            } else {
                ("was cancelled", AbandonedBy::Cancellation)
            };
            tracing::warn!(
                target: "idem", tool = self.tool.name, key = %TelemetryKey::of(self.key),
                "the body {how}; its reservation stays in place until its lease ends (outcome unknown)"
            );
            notify(self.tool.subject(), self.key, Phase::Body, Happened::Abandoned(by));
        }
    }
}
