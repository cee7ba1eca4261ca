//! `timeout = "2s"`: the caller gets an answer in time while the body runs to completion.

use std::time::Duration;

use crate::output::ToolOutput;
use crate::store::AsyncStore;

use super::Call;
#[cfg(feature = "tokio")]
use {
    super::drive::{Async, drive},
    super::hooks::{ErrorPolicy, Reconcile},
    crate::error::{Error, ErrorCode},
    crate::key::Key,
    crate::observe::{Outcome, emit, observed},
    std::future::Future,
};

/// Runs an async tool's call as a task of its own and answers TIMEOUT if it has not
/// finished within `timeout`. The task goes on: the body completes its key and a later
/// status check or retry sees the result. So the call cannot borrow from its caller:
/// the body's future, the store and the hook must be `Send + 'static`.
#[cfg(feature = "tokio")]
pub async fn run_async_timeout<S, O, B, H, P>(
    call: Call,
    store: &'static S,
    body: B,
    hook: H,
    policy: P,
    timeout: Duration,
) -> O
where
    S: AsyncStore + ?Sized + 'static,
    O: ToolOutput + Send + 'static,
    O::Value: Send,
    B: Future<Output = O> + Send + 'static,
    H: Reconcile<O::Value> + Send + Sync + 'static,
    P: ErrorPolicy<O> + Send + Sync + 'static,
{
    let (tool, started) = (call.tool, call.started);
    let key = call.key.as_ref().ok().cloned();
    // The task emits its own event and count: it may finish long after its caller left.
    let task = tokio::spawn(async move {
        let ran = drive(call, &Async { store }, body, &hook, &policy).await;
        emit(tool, ran.key.as_ref(), ran.outcome, started);
        ran
    });
    match tokio::time::timeout(timeout, task).await {
        Ok(Ok(ran)) => {
            observed(tool, ran.key.as_ref(), ran.outcome);
            ran.output
        }
        Ok(Err(failed)) if failed.is_panic() => std::panic::resume_unwind(failed.into_panic()),
        // The runtime is shutting down and dropped the task: nobody knows how far it got.
        Ok(Err(_cancelled)) => O::from_error(Error::new(
            ErrorCode::OutcomeUnknown,
            format!("{}: the call was cancelled as the runtime shut down; it may or may not have happened", tool.name),
        )),
        Err(_elapsed) => {
            emit(tool, key.as_ref(), Outcome::TimedOut, started);
            observed(tool, key.as_ref(), Outcome::TimedOut);
            O::from_error(timed_out(tool, key.as_ref(), timeout))
        }
    }
}

#[cfg(feature = "tokio")]
pub(crate) fn timed_out(tool: &super::Tool, key: Option<&Key>, after: std::time::Duration) -> Error {
    let key = key.map_or_else(String::new, |key| format!(" for {key}"));
    let retry_after = super::decide::retry_after(after, tool.lease, None);
    let wait = super::decide::wait_text(retry_after);
    Error::new(
        ErrorCode::Timeout,
        format!(
            "{}: no answer within {after:?}; the call{key} goes on and its outcome is recorded when it finishes",
            tool.name
        ),
    )
    .with_suggestion(format!("do not call {} again; call {} in {wait} to learn the outcome", tool.name, tool.status_fn))
    .with_running(crate::error::Running { retry_after, since_ms: None, progress: None })
}

/// Without the `tokio` feature a timeout has no runtime to go on in.
#[doc(hidden)]
#[cfg_attr(feature = "tokio", allow(dead_code))]
#[diagnostic::on_unimplemented(
    message = "`timeout = ...` needs idem's `tokio` feature",
    label = "the body must go on after the caller gets TIMEOUT, which needs a runtime to spawn it on",
    note = "enable it in Cargo.toml: idem-tools = {{ version = \"0.1\", features = [\"tokio\"] }} (it is on by default)"
)]
pub trait TimeoutNeedsTokio {}

/// See the `tokio` form; this one only reports the missing feature.
#[cfg(not(feature = "tokio"))]
pub async fn run_async_timeout<S, O, B, H, P>(_: Call, _: &'static S, _: B, _: H, _: P, _: Duration) -> O
where
    S: AsyncStore + ?Sized + 'static,
    O: ToolOutput + TimeoutNeedsTokio,
{
    unreachable!("no type implements TimeoutNeedsTokio")
}
