//! The one driver of a call, for sync and async tools alike: reserve, decide, reconcile
//! an abandoned reservation, run the body, settle. A sync tool's call waits for it on its
//! own thread ([`block_on`](crate::store::block_on)), so every branch is written once.
//!
//! The driver reaches the store through a [`CallStore`]: the store's own futures, never
//! boxed, so a sync tool over a local store pays no allocation per store operation.

use std::future::Future;

use crate::error::Error;
use crate::key::Key;
use crate::observe::{
    AbandonedBy, Failure, Happened, ObservedCall, Outcome, Phase, TelemetryKey, Verdict, notify, observed,
};
use crate::output::{ToolOutput, replay_value};
use crate::scope::Scoped;
use crate::store::{Completion, DynStore, RecordId, Reservation, Reserve, Store, StoreError, Token};

use super::answers::{store_failed, unknown, unknown_after_reconcile, unreadable};
use super::approval::{Gate, gate};
use super::call_store::{CallStore, Renews, Reserving};
use super::decide::{Answer, Step, decide};
use super::hold::{Current, in_body, renewing};
use super::hooks::{Abandoned, ErrorPolicy, Reconcile, Reconciled};
use super::serving::Serving;
use super::{BudgetPolicy, Call, Tool};

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

/// How often a completion is written before the body's result is returned unrecorded:
/// the store's own waits (SQLite's busy timeout, a pool's checkout) pace the attempts. A
/// store that waited its whole deadline is not asked again (see `Store::complete`).
const COMPLETE_ATTEMPTS: usize = 3;

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
    // What a budget would charge, checked before anything is asked or reserved.
    let amount = match tool.budget.map(|policy| super::budget::amount(tool, policy.budget, &request)) {
        Some(Err(error)) => return invalid(Some(key), error),
        Some(Ok(amount)) => amount,
        None => 0,
    };
    let id = RecordId { namespace: tool.namespace, key: key.as_str() };
    let mut approved = None;
    let mut reserved = match tool.approval {
        None => reserve(tool, at, (&key, &request), amount, false).await,
        Some(asking) => match approval_gate(tool, asking, (&key, &request), asks.as_deref(), at).await {
            Gate::Record(record) => Ok(Reservation::Existing(record)),
            Gate::Open(decision) => {
                approved = decision;
                reserve(tool, at, (&key, &request), amount, approved.is_some()).await
            }
            Gate::Answer(outcome, error) => {
                watch.reserved();
                return answered(tool, key, outcome, Answer::Error(error), policy, Phase::Reserve);
            }
        },
    };
    // `over_budget = approval`: no room in the budget asks a person instead; once approved,
    // the call runs past the limit.
    if let (Ok(Reservation::OverBudget(window)), Some(asking), Some(BudgetPolicy { over_budget_asks: true, .. })) =
        (&reserved, tool.approval, tool.budget)
    {
        let action = match asks.clone().or(described) {
            Some(text) => text,
            None => super::default_approval_text(tool, &key.readable(), &request),
        };
        let text = super::budget::over_budget_text(&action, window);
        reserved = match approval_gate(tool, asking, (&key, &request), Some(&text), at).await {
            Gate::Record(record) => Ok(Reservation::Existing(record)),
            Gate::Open(decision) => {
                approved = decision;
                reserve(tool, at, (&key, &request), amount, true).await
            }
            Gate::Answer(outcome, error) => {
                watch.reserved();
                return answered(tool, key, outcome, Answer::Error(error), policy, Phase::Reserve);
            }
        };
    }
    if matches!(reserved, Ok(Reservation::OverBudget(_))) {
        notify(tool.subject(), &key, Phase::Reserve, Happened::BudgetExceeded);
    }
    let token = match decide(tool, &key, &request, reserved, H::PRESENT) {
        Step::Run(token) => {
            if approved.is_some() {
                notify(tool.subject(), &key, Phase::Reserve, Happened::Approved);
            }
            if tool.budget.is_some() {
                notify(tool.subject(), &key, Phase::Reserve, Happened::BudgetSpent);
            }
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
            match reconcile(tool, at, id, expired, abandoned, hook).await {
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
    let body = Scoped::new(body, current);
    let output = match held.slot() {
        Some(slot) => renewing(at, slot, (tool, &key), token, body).await,
        None => body.await,
    };
    // Renewal ends before the completion is written: no renewal races the completion.
    drop(held);
    abandon.disarm();
    watch.body_ended();
    let store = at.store;
    let outcome = match settlement(tool, &key, &output, policy) {
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
            recorded(tool, &key, result)
        }
        Some(Err(())) => {
            notify(tool.subject(), &key, Phase::Settle, Happened::Abandoned(AbandonedBy::UnrecordableResult));
            kept_abandoned(tool, &key, store.abandon(id, token).await)
        }
        None => {
            let result = store.release(id, token).await;
            if result.is_ok() && tool.budget.is_some() {
                notify(tool.subject(), &key, Phase::Settle, Happened::BudgetRefunded);
            }
            released(tool, &key, result)
        }
    };
    let failure = output.success().is_none().then_some(Failure::Tool);
    Ran { output, key: Some(key), outcome, failure }
}

/// Reserves the call's key, charging `amount` to the tool's budget if it has one (past its
/// limit when a person approved the action and `over_budget = approval`).
async fn reserve<S: Store + ?Sized, R: Reserving<S>, L: Renews>(
    tool: &'static Tool,
    at: &CallStore<'_, S, R, L>,
    (key, request): (&Key, &str),
    amount: i64,
    approved: bool,
) -> Result<Reservation, StoreError> {
    let id = RecordId { namespace: tool.namespace, key: key.as_str() };
    let reserve = Reserve { id, request, lease: tool.lease };
    let charge = tool.budget.map(|policy| {
        let past_limit = approved && policy.over_budget_asks;
        super::budget::charge(policy.budget, key, amount, past_limit)
    });
    at.reserve(reserve, charge).await
}

/// The front end that may answer for this call instead of its tool, with the store to keep
/// what it promises in: an async call's, made outside any tool's body.
fn front_end<'a, S, R, L>(
    tool: &'static Tool,
    at: &'a CallStore<'_, S, R, L>,
) -> Option<(&'static dyn Serving, &'a dyn DynStore)>
where
    S: Store + ?Sized,
    R: Reserving<S>,
    L: Renews,
{
    let serving = tool.serving?;
    (L::ASYNC && !in_body()).then(|| (serving, at.erased()))
}

/// The approval gate; a front end may ask the person in band when it answers
/// APPROVAL_REQUIRED, and the gate is asked again when the front end says so (a decision was
/// recorded, or the request moved on).
async fn approval_gate<S: Store + ?Sized, R: Reserving<S>, L: Renews>(
    tool: &'static Tool,
    asking: &super::approval::ApprovalPolicy,
    call: (&Key, &str),
    asks: Option<&str>,
    at: &CallStore<'_, S, R, L>,
) -> Gate {
    let gated = gate(tool, asking, call, asks, at.erased()).await;
    let Gate::Answer(Outcome::ApprovalRequired, error) = &gated else { return gated };
    let (Some((serving, store)), Some(approval)) = (front_end(tool, at), error.approval()) else {
        return gated;
    };
    let asked = crate::approval::Request::from(approval);
    if serving.approval_required(tool, call.0, &asked, store).await {
        return gate(tool, asking, call, asks, at.erased()).await;
    }
    gated
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
            if let Err(error) = store.abandon(id, token).await {
                tracing::error!(target: "idem", tool = tool.name, key = %TelemetryKey::of(&key), %error, "could not mark the key abandoned again");
            }
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
                    crate::ErrorCode::RecordUnreadable,
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

/// What to write after the body: a completion (its result, or a kept error), `Err(())`
/// when it cannot be recorded (see [`recordable`]), or `None` to release the key.
fn settlement<O: ToolOutput, P: ErrorPolicy<O>>(
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
fn recordable<T: serde::Serialize + serde::de::DeserializeOwned>(
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
fn kept_abandoned(tool: &Tool, key: &Key, result: Result<(), StoreError>) -> Outcome {
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
