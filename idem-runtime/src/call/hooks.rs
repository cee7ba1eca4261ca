//! What a tool may plug into a call: a reconcile hook for abandoned calls, and the policy
//! for the body's errors.

use std::future::Future;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::key::Key;
use crate::output::ToolOutput;

/// A call that started and never finished (a crash, a panic, a dropped future) and whose
/// lease has ended: what a reconcile hook is given to ask the provider what happened.
#[derive(Clone, Debug)]
pub struct Abandoned {
    pub(crate) key: Key,
    pub(crate) request: String,
    pub(crate) since_ms: i64,
}

impl Abandoned {
    /// The abandoned call's key: ask the provider about it (e.g. look up the idempotency key
    /// it was sent with).
    pub fn key(&self) -> &Key {
        &self.key
    }

    /// The abandoned call's compared fields, as the JSON object stored with its reservation
    /// (`{"amount":120.0}`).
    pub fn request(&self) -> serde_json::Value {
        serde_json::from_str(&self.request).unwrap_or(serde_json::Value::Null)
    }

    /// When the abandoned call started, in milliseconds since the Unix epoch, by the
    /// store's clock.
    pub fn since_ms(&self) -> i64 {
        self.since_ms
    }
}

/// A reconcile hook's answer: what really happened to an abandoned call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reconciled<T> {
    /// The action happened; this is its result. The key is completed with it and the
    /// caller gets it as a replay.
    Done(T),
    /// The action did not happen: the caller runs the body now, under the key.
    NotDone,
    /// Nobody can tell: the caller gets OUTCOME_UNKNOWN and the key stays abandoned, to be
    /// reconciled again by a later call.
    Unknown,
}

/// A reconcile hook as a call uses it; built by the expansion from `reconcile = ...`. Its
/// future is `Send` so that async tools' futures stay `Send`.
#[doc(hidden)]
pub trait Reconcile<T> {
    /// Whether a hook was given: without one an abandoned call is OUTCOME_UNKNOWN.
    const PRESENT: bool;
    /// The hook's answer.
    fn reconcile(&self, abandoned: Abandoned) -> impl Future<Output = Reconciled<T>> + Send;
}

/// No `reconcile = ...`.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct NoReconcile;

impl<T: Send> Reconcile<T> for NoReconcile {
    const PRESENT: bool = false;
    fn reconcile(&self, _: Abandoned) -> impl Future<Output = Reconciled<T>> + Send {
        std::future::ready(Reconciled::Unknown)
    }
}

/// A sync tool's hook: `Fn(Abandoned) -> Reconciled<T>`.
#[doc(hidden)]
pub struct SyncHook<F>(F);

/// An async tool's hook: `Fn(Abandoned) -> impl Future<Output = Reconciled<T>>`.
#[doc(hidden)]
pub struct AsyncHook<F>(F);

/// Wraps a sync tool's `reconcile = ...`, where the closure's argument type is inferred.
#[doc(hidden)]
pub fn reconcile_sync<T, F: Fn(Abandoned) -> Reconciled<T> + Sync>(hook: F) -> SyncHook<F> {
    SyncHook(hook)
}

/// Wraps an async tool's `reconcile = ...`, where the closure's argument type is inferred.
#[doc(hidden)]
pub fn reconcile_async<T, F, Fut>(hook: F) -> AsyncHook<F>
where
    F: Fn(Abandoned) -> Fut + Sync,
    Fut: Future<Output = Reconciled<T>> + Send,
{
    AsyncHook(hook)
}

impl<T: Send, F: Fn(Abandoned) -> Reconciled<T> + Sync> Reconcile<T> for SyncHook<F> {
    const PRESENT: bool = true;
    fn reconcile(&self, abandoned: Abandoned) -> impl Future<Output = Reconciled<T>> + Send {
        std::future::ready((self.0)(abandoned))
    }
}

impl<T, F, Fut> Reconcile<T> for AsyncHook<F>
where
    F: Fn(Abandoned) -> Fut + Sync,
    Fut: Future<Output = Reconciled<T>> + Send,
{
    const PRESENT: bool = true;
    fn reconcile(&self, abandoned: Abandoned) -> impl Future<Output = Reconciled<T>> + Send {
        (self.0)(abandoned)
    }
}

/// What happens to the body's errors: released (the default), or kept as the final answer
/// (`on_error = keep`).
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`on_error = keep` stores `{O}`'s error as the final answer, so the error type must serialize and deserialize",
    label = "the error type must implement `serde::Serialize` and `serde::de::DeserializeOwned`",
    note = "or leave out `on_error = keep`: by default an error releases the key, so a retry may run the action"
)]
pub trait ErrorPolicy<O: ToolOutput> {
    /// The error to keep as JSON, or `None` to release the key (also for a success).
    fn kept_error(&self, output: &O) -> Option<Result<String, serde_json::Error>>;
    /// The answer for a kept error, or `None` when this tool does not replay kept errors.
    fn replay_error(&self, stored: &str) -> Option<Result<O, serde_json::Error>>;
    /// Whether an error answer leaves the outcome unknown: the action may have happened and
    /// its answer cannot be recorded (an HTTP response too large to store). The key is then
    /// kept and marked abandoned, never released. The policy logs why.
    fn outcome_unknown(&self, _output: &O) -> bool {
        false
    }
}

/// The default: an error means the action did not happen, so the key is released.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct Release;

impl<O: ToolOutput> ErrorPolicy<O> for Release {
    fn kept_error(&self, _: &O) -> Option<Result<String, serde_json::Error>> {
        None
    }
    fn replay_error(&self, _: &str) -> Option<Result<O, serde_json::Error>> {
        None
    }
}

/// `on_error = keep`: an error that happens after the side effect is the final answer,
/// replayed like a success (Stripe's choice).
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct Keep;

/// `on_error = keep`, checked where the attribute says `keep` (the expansion calls it with
/// the tool's error type, spanned at that word): an error type that cannot be stored is
/// reported there, in idem's words. [`Keep`]'s policy needs the same bound at the same
/// place, so rustc reports it once.
#[doc(hidden)]
pub fn keep<E: KeptError>() -> Keep {
    Keep
}

/// An error type `on_error = keep` can store and replay.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`on_error = keep` stores the tool's error `{Self}` and replays it to every retry, so `{Self}` must implement `serde::Serialize` and `serde::Deserialize`",
    label = "`{Self}` is kept as the final answer here",
    note = "derive both on the error type (`#[derive(serde::Serialize, serde::Deserialize)]`), or leave out `on_error = keep`: by default an error releases the key, so a retry may run the action"
)]
pub trait KeptError: Serialize + DeserializeOwned {}

// Not recommended: without it rustc would report the missing serde trait with a note
// naming `KeptError`, never `on_error = keep`.
#[diagnostic::do_not_recommend]
impl<E: Serialize + DeserializeOwned> KeptError for E {}

impl<T, E> ErrorPolicy<Result<T, E>> for Keep
where
    Result<T, E>: ToolOutput,
    E: KeptError,
{
    fn kept_error(&self, output: &Result<T, E>) -> Option<Result<String, serde_json::Error>> {
        output.as_ref().err().map(serde_json::to_string)
    }
    fn replay_error(&self, stored: &str) -> Option<Result<Result<T, E>, serde_json::Error>> {
        Some(serde_json::from_str(stored).map(Err))
    }
}
