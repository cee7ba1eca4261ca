//! One call of an idempotent tool: reserve the key, run the body once, store its result,
//! and answer every repeat from the store.
//!
//! [`drive`](drive::drive) makes every decision once; the entry points here only differ in
//! how they reach the store and whether the caller waits.

mod admit;
pub(crate) mod answers;
pub(crate) mod approval;
mod blocking;
mod budget;
mod call_store;
pub(crate) mod cancel;
mod decide;
mod drive;
mod hold;
mod hooks;
mod namespace;
mod renewer;
mod serving;
mod settle;
#[cfg(test)]
pub(crate) mod tests;
mod timeout;

use std::borrow::Cow;
use std::future::Future;
use std::time::{Duration, Instant};

use crate::compare::{ComparedValue, request_json};
use crate::error::Error;
use crate::json_names::JsonNames;
use crate::key::{Key, KeyPart, Segment, build_key_named};
use crate::observe::{Instruments, ObservedCall, Subject};
use crate::output::ToolOutput;
use crate::store::Store;

pub use approval::ApprovalPolicy;
use blocking::with_blocking;
pub use budget::BudgetPolicy;
use call_store::{CallStore, OwnTask};
pub use call_store::{Charged, Reserving, Uncharged};
use drive::drive;
pub use hold::{cancel_requested, progress};
pub use hooks::{
    Abandoned, AsyncAnswer, ErrorPolicy, Keep, KeptError, NoReconcile, Reconcile, Reconciled, Release, SyncAnswer,
    keep, reconcile_async, reconcile_sync,
};
pub use namespace::Claim;
pub(crate) use namespace::claim;
pub use serving::Serving;
pub use timeout::{TimeoutNeedsTokio, run_async_timeout};

/// What the macro knows about one tool at compile time.
#[doc(hidden)]
#[derive(Debug)]
pub struct Tool {
    /// The function's name.
    pub name: &'static str,
    /// The record namespace: the module path and the function's name
    /// (`my_crate::billing::send_invoice`) unless the attribute sets one.
    pub namespace: &'static str,
    /// Whether the attribute set the namespace: only then may two tools share it.
    pub namespace_given: bool,
    /// Where the attribute is, `file:line:column`: the tool and its status function
    /// share it, two different tools never do.
    pub site: &'static str,
    /// The parsed key template.
    pub template: &'static [Segment],
    /// The compared fields by the names the model sends them under (`amount` for
    /// `req.amount` when `Parameters(req)` binds the arguments) before serde's renames,
    /// sorted: the names in stored requests (CONFLICT shows them through `json_names`).
    pub compare: &'static [&'static str],
    /// The same fields as written in `compare = [...]`, in the same order: the names
    /// records written before idem 0.1 used, still matched on a repeat.
    pub compare_written: &'static [&'static str],
    /// The JSON names of the key and compared fields that come from the arguments the model
    /// sends (`customerId` for `customer_id` under `#[serde(rename_all = "camelCase")]`):
    /// the names answers show the model. Records keep the names above.
    pub json_names: JsonNames,
    /// The generated status function's name, named in suggestions.
    pub status_fn: &'static str,
    /// How long a reservation holds without a renewal before an unfinished call counts
    /// as abandoned.
    pub lease: Duration,
    /// How long a running body's lease is renewed at most.
    pub max_hold: Duration,
    /// How long a settled record is kept before [`Store::purge`] may remove it.
    pub retain: Duration,
    /// The front end that serves the tool's calls and may answer for them (rmcp's MCP
    /// Tasks, for an async rmcp tool), if any.
    pub serving: Option<&'static dyn Serving>,
    /// `timeout = ...` of a tool with a front end, which the front end applies to the
    /// request it serves (`#[idem::tasks]`: the body runs on as the `tools/call`'s own tokio
    /// task); other tools apply theirs in [`run_async_timeout`].
    pub timeout: Option<Duration>,
    /// `approval(...)`: how the tool asks a person, if it does.
    pub approval: Option<&'static ApprovalPolicy>,
    /// `budget = ...`: what its fresh runs are charged to, if anything.
    pub budget: Option<&'static BudgetPolicy>,
    /// Its counters and span (see `__idem_instruments!`).
    pub instruments: Instruments,
    /// Whether this tool may use its namespace, once checked.
    pub claim: Claim,
}

impl Tool {
    /// What the model calls the key or compared field recorded as `name` (see
    /// [`JsonNames::model_name`]).
    pub(crate) fn model_name<'a>(&self, name: &'a str) -> std::borrow::Cow<'a, str> {
        self.json_names.model_name(name)
    }

    /// The key for `key_parts`, an INVALID_KEY error naming the field as the model knows it
    /// and what `who` (the tool or its status function) was.
    pub(crate) fn key(&self, who: &str, key_parts: &[&dyn KeyPart]) -> Result<Key, Error> {
        build_key_named(who, self.template, key_parts, Some(&self.json_names))
    }

    /// The tool as observation sees it.
    pub(crate) fn subject(&'static self) -> Subject {
        Subject { name: self.name, namespace: self.namespace, instruments: &self.instruments }
    }
}

/// A call's key and compared fields, computed before the body runs so that a body which
/// changes its inputs cannot change what is recorded.
#[doc(hidden)]
pub struct Call {
    tool: &'static Tool,
    key: Result<Key, Error>,
    request: Result<String, Error>,
    /// What this call would ask a person to approve, when its `approval` condition holds.
    asks: Option<String>,
    /// `approval(text = ...)` of a tool with `approval(over_budget)`, rendered for this call: what
    /// it asks when its budget has no room.
    described: Option<String>,
    started: Instant,
}

impl Call {
    /// Gathers a call's key fields (in template order) and compared fields (in
    /// `tool.compare` order).
    pub fn new<const N: usize>(tool: &'static Tool, key_parts: &[&dyn KeyPart], compared: [ComparedValue; N]) -> Call {
        let started = Instant::now();
        Call {
            tool,
            key: claim(tool).and_then(|()| tool.key(tool.name, key_parts)),
            request: request_json(tool.name, tool.compare, compared, Some(&tool.json_names)),
            asks: None,
            described: None,
            started,
        }
    }

    /// The call's `approval(text = ...)`, for a tool that asks when its budget has no room.
    pub fn describing(mut self, text: Option<String>) -> Call {
        self.described = text;
        self
    }

    /// This call needs a person's approval (its `approval` condition holds), asking with
    /// `text`, or with the tool's summary, the key and the compared fields when `None`.
    pub fn asking(mut self, text: Option<String>) -> Call {
        let text = text.unwrap_or_else(|| {
            let key = self.key.as_ref().map_or(Cow::Borrowed(""), Key::readable);
            approval::default_text(self.tool, &key, self.request.as_deref().unwrap_or("{}"))
        });
        self.asks = Some(text);
        self
    }
}

impl Call {
    /// Starts observing the call: its span opens before the reservation.
    fn observed(&self) -> ObservedCall {
        ObservedCall::start(self.tool.subject(), self.key.as_ref().ok(), self.started)
    }
}

/// Runs a sync tool's body at most once per key: the call waits for its store on this
/// thread ([`block_on`](crate::store::block_on)), and its lease is renewed from the
/// renewer thread while the body runs.
pub fn run_sync<S, R, O, F, H, P>(call: Call, store: &S, reserving: R, body: F, hook: H, policy: P) -> O
where
    S: Store + ?Sized,
    R: Reserving<S>,
    O: ToolOutput,
    F: FnOnce() -> O,
    H: Reconcile<O::Value>,
    P: ErrorPolicy<O>,
{
    let watch = call.observed();
    let ran = watch.in_scope(|| {
        with_blocking(store, |lent| {
            let at = CallStore { store, reserving, renews: lent };
            crate::store::wait(std::pin::pin!(drive(call, &at, async move { body() }, &hook, &policy, &watch)))
        })
    });
    ran.answered(&watch);
    ran.output
}

/// Runs an async tool's body at most once per key.
pub async fn run_async<S, R, O, B, H, P>(call: Call, store: &S, reserving: R, body: B, hook: H, policy: P) -> O
where
    S: Store + ?Sized,
    R: Reserving<S>,
    O: ToolOutput,
    B: Future<Output = O>,
    H: Reconcile<O::Value>,
    P: ErrorPolicy<O>,
{
    let watch = call.observed();
    let at = CallStore { store, reserving, renews: OwnTask };
    let ran = watch.instrument(drive(call, &at, body, &hook, &policy, &watch)).await;
    ran.answered(&watch);
    ran.output
}

/// The key of the idempotent call whose body is running on this thread or task, to send
/// to a provider that accepts idempotency keys (as Stripe does), or to derive per-step
/// keys with [`Key::step`]. `None` outside a body.
pub fn current_key() -> Option<Key> {
    hold::current_key()
}
