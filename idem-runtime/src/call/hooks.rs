//! What a tool may plug into a call: a reconcile hook for abandoned calls, and the policy
//! for the body's errors.

use std::future::Future;
use std::pin::Pin;

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
    ///
    /// "The provider has no effect" means "not done" only if the abandoned call is dead: a
    /// call paused past its lease may still send its effect. Answer this only where the
    /// provider honours the key the body sends, or where no pause outlasts the lease; see
    /// the crate docs' [Errors](https://docs.rs/idem-tools/latest/idem/index.html#errors).
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

// A hook is checked once, where the user wrote it: `reconcile_sync` and `reconcile_async`
// carry the bounds (the expansion spans the call at the hook, and names `T`, the tool's
// stored value, so a hook answering another type is reported there too). What they return
// implements `Reconcile` whatever the hook: it calls the hook through a function pointer
// made where the bounds hold. The call that takes the hook then has nothing left to check,
// so a hook that does not fit is one error, at the hook, in idem's words, never a second
// one at the tool.

/// A sync tool's hook: `Fn(Abandoned) -> Reconciled<T>`.
#[doc(hidden)]
pub struct SyncHook<T, F> {
    hook: F,
    answer: fn(&F, Abandoned) -> Reconciled<T>,
}

/// An async tool's hook: `Fn(Abandoned) -> impl Future<Output = Reconciled<T>>`. Its
/// future is boxed when an abandoned call is reconciled, and only then. The future may
/// hold what the hook captured (`'h`), never the borrow of the hook itself (`Fn`'s output
/// cannot name it).
#[doc(hidden)]
pub struct AsyncHook<'h, T, F> {
    hook: F,
    answer: fn(&F, Abandoned) -> HookFuture<'h, T>,
}

/// An async hook's answer, boxed.
type HookFuture<'h, T> = Pin<Box<dyn Future<Output = Reconciled<T>> + Send + 'h>>;

/// Wraps a sync tool's `reconcile = ...`, where the closure's argument type is inferred.
#[doc(hidden)]
pub fn reconcile_sync<T, F, R>(hook: F) -> SyncHook<T, F>
where
    F: Fn(Abandoned) -> R + Sync,
    R: SyncAnswer<Value = T>,
{
    SyncHook { hook, answer: |hook, abandoned| hook(abandoned).into_reconciled() }
}

/// Wraps an async tool's `reconcile = ...`, where the closure's argument type is inferred.
#[doc(hidden)]
pub fn reconcile_async<'h, T, F, Fut>(hook: F) -> AsyncHook<'h, T, F>
where
    F: Fn(Abandoned) -> Fut + Sync,
    Fut: AsyncAnswer<Value = T> + Send + 'h,
{
    AsyncHook { hook, answer: |hook, abandoned| Box::pin(hook(abandoned)) }
}

/// What a sync tool's hook returns: a `Reconciled` itself, answered at once.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "a sync tool needs a sync reconcile hook, returning `idem::Reconciled<_>`: this one returns `{Self}`",
    label = "a sync tool's `reconcile` hook returns `idem::Reconciled<_>` itself",
    note = "make the hook a plain `fn(idem::Abandoned) -> idem::Reconciled<T>` (or such a closure), or make the tool an `async fn`"
)]
pub trait SyncAnswer {
    /// The tool's result type the hook reports.
    type Value;
    /// The answer.
    fn into_reconciled(self) -> Reconciled<Self::Value>;
}

impl<T> SyncAnswer for Reconciled<T> {
    type Value = T;
    fn into_reconciled(self) -> Reconciled<T> {
        self
    }
}

/// What an async tool's hook returns: a future of a `Reconciled`.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "an async tool needs an async reconcile hook, returning a future of `idem::Reconciled<_>`: this one returns `{Self}`",
    label = "an async tool's `reconcile` hook returns a future of `idem::Reconciled<_>`",
    note = "make the hook an `async fn(idem::Abandoned) -> idem::Reconciled<T>` or a closure `|abandoned| async move {{ ... }}`, or make the tool a plain `fn` to keep a hook that answers at once"
)]
pub trait AsyncAnswer: Future<Output = Reconciled<Self::Value>> {
    /// The tool's result type the hook reports.
    type Value;
}

// Not recommended: rustc then reports the sentence above instead of "`Reconciled<T>` is
// not a future".
#[diagnostic::do_not_recommend]
impl<T, Fut: Future<Output = Reconciled<T>>> AsyncAnswer for Fut {
    type Value = T;
}

impl<T: Send, F> Reconcile<T> for SyncHook<T, F> {
    const PRESENT: bool = true;
    fn reconcile(&self, abandoned: Abandoned) -> impl Future<Output = Reconciled<T>> + Send {
        std::future::ready((self.answer)(&self.hook, abandoned))
    }
}

impl<T, F> Reconcile<T> for AsyncHook<'_, T, F> {
    const PRESENT: bool = true;
    fn reconcile(&self, abandoned: Abandoned) -> impl Future<Output = Reconciled<T>> + Send {
        (self.answer)(&self.hook, abandoned)
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
