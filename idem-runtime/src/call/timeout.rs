//! `timeout = "2s"`: the caller gets an answer in time while the body runs to completion.

use std::time::Duration;

use crate::output::ToolOutput;
use crate::store::Store;

use super::Call;
use super::call_store::Reserving;
#[cfg(feature = "tokio")]
use {
    super::answers::timed_out,
    super::call_store::{CallStore, OwnTask},
    super::drive::drive,
    super::hooks::{ErrorPolicy, Reconcile},
    crate::error::{Error, ErrorCode},
    crate::observe::{Failure, Happened, Outcome, Phase, notify, observed},
    std::future::Future,
    std::sync::Arc,
    std::sync::atomic::{AtomicBool, Ordering},
};

/// Runs an async tool's call as a task of its own and answers TIMEOUT if it has not
/// finished within `timeout`. The task goes on: the body completes its key and a later
/// status check or retry sees the result. So the call cannot borrow from its caller:
/// the body's future, the store and the hook must be `Send + 'static`.
#[cfg(feature = "tokio")]
pub async fn run_async_timeout<S, R, O, B, H, P>(
    call: Call,
    store: &'static S,
    reserving: R,
    body: B,
    hook: H,
    policy: P,
    timeout: Duration,
) -> O
where
    S: Store + ?Sized + 'static,
    R: Reserving<S> + 'static,
    O: ToolOutput + Send + 'static,
    O::Value: Send,
    B: Future<Output = O> + Send + 'static,
    H: Reconcile<O::Value> + Send + Sync + 'static,
    P: ErrorPolicy<O> + Send + Sync + 'static,
{
    let tool = call.tool;
    let key = call.key.as_ref().ok().cloned();
    let watch = call.observed();
    // Whoever answers first, the task (its result) or the wait (TIMEOUT), records the
    // answer; the task records what it came to after a TIMEOUT as a late outcome.
    let answered = Arc::new(AtomicBool::new(false));
    let in_task = (watch.already_entered(), Arc::clone(&answered));
    let mut task = tokio::spawn(watch.instrument(async move {
        let (watch, answered) = in_task;
        let at = CallStore { store, reserving, renews: OwnTask };
        let ran = drive(call, &at, body, &hook, &policy, &watch).await;
        if answered.swap(true, Ordering::AcqRel) {
            watch.settled_late(ran.key.as_ref(), ran.outcome);
        } else {
            watch.answered(ran.key.as_ref(), ran.outcome, ran.failure);
        }
        ran
    }));
    let finished = |joined: Result<super::drive::Ran<O>, tokio::task::JoinError>| match joined {
        Ok(ran) => {
            observed(tool.name, ran.key.as_ref(), ran.outcome);
            ran.output
        }
        Err(failed) if failed.is_panic() => std::panic::resume_unwind(failed.into_panic()),
        // The runtime is shutting down and dropped the task: nobody knows how far it got.
        Err(_cancelled) => {
            let error = Error::new(
                ErrorCode::OutcomeUnknown,
                format!(
                    "{}: the call was cancelled as the runtime shut down; it may or may not have happened",
                    tool.name
                ),
            );
            if !answered.swap(true, Ordering::AcqRel) {
                watch.answered(key.as_ref(), Outcome::Unknown, Some(Failure::Idem(error.code())));
            }
            O::from_error(error)
        }
    };
    match tokio::time::timeout(timeout, &mut task).await {
        Ok(joined) => finished(joined),
        // The body finished as the wait ended: its answer stands.
        Err(_elapsed) if answered.swap(true, Ordering::AcqRel) => finished(task.await),
        Err(_elapsed) => {
            if let Some(key) = &key {
                notify(tool.subject(), key, Phase::Body, Happened::TimedOut);
            }
            watch.answered(key.as_ref(), Outcome::TimedOut, Some(Failure::Idem(ErrorCode::Timeout)));
            observed(tool.name, key.as_ref(), Outcome::TimedOut);
            O::from_error(timed_out(tool, key.as_ref(), timeout))
        }
    }
}

/// Without the `tokio` feature a timeout has no runtime to go on in.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`timeout = ...` needs idem's `tokio` feature",
    label = "the body must go on after the caller gets TIMEOUT, which needs a runtime to spawn it on",
    note = "enable it in Cargo.toml: idem-tools = {{ version = \"0.1\", features = [\"tokio\"] }} (it is on by default)"
)]
pub trait TimeoutNeedsTokio {}

/// See the `tokio` form; this one only reports the missing feature.
#[cfg(not(feature = "tokio"))]
pub async fn run_async_timeout<S, R, O, B, H, P>(_: Call, _: &'static S, _: R, _: B, _: H, _: P, _: Duration) -> O
where
    S: Store + ?Sized + 'static,
    R: Reserving<S>,
    O: ToolOutput + TimeoutNeedsTokio,
{
    unreachable!("no type implements TimeoutNeedsTokio")
}
