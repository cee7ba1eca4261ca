//! What the `#[idempotent]` expansion calls. Not a public API: it changes without notice.

pub use crate::__idem_instruments as instruments;
pub use crate::approval::DEFAULT_APPROVAL_TTL;
pub use crate::call::{
    ApprovalPolicy, AsyncAnswer, BudgetPolicy, Call, Charged, Claim, ErrorPolicy, Keep, KeptError, NoReconcile,
    Reconcile, Release, Reserving, Serving, SyncAnswer, TimeoutNeedsTokio, Tool, Uncharged, keep, reconcile_async,
    reconcile_sync, run_async, run_async_timeout, run_sync,
};
pub use crate::compare::compared;
pub use crate::describe::{Part, describe};
pub use crate::frameworks::status_tool::{Rmcp, StatusTool};
pub use crate::json_names::{JsonNames, JsonObject};
pub use crate::key::{FieldMode, KeyPart, Segment, normalize};
pub use crate::observe::conventions::SPAN_FIELDS;
pub use crate::observe::{Instruments, SpanCallsite};
pub use crate::output::ToolOutput;
pub use crate::status::{record_id, status_async, status_sync};
pub use crate::store::default::DefaultStore;
pub use crate::store::{DEFAULT_LEASE, DEFAULT_MAX_HOLD, DEFAULT_RETAIN};

/// The budget of `budget = PATH`, checked where the user wrote it: a sum budget must add up
/// one of the tool's compared fields. Evaluated in a `const`, so a mismatch does not
/// compile.
pub const fn budget_of(budget: &'static crate::budget::Budget, compare: &[&str]) -> &'static crate::budget::Budget {
    assert!(
        crate::budget::sums_a_compared_field(budget, compare),
        "this budget adds up a field that is not in the tool's `compare = [...]`: add it there (a budget sums a compared field, so that a repeat with another amount is a CONFLICT, not a second charge)"
    );
    budget
}

/// Checks an `approval(when = ...)` condition's type where the user wrote it.
#[inline(always)]
pub fn approval_condition<T: ApprovalCondition>(condition: T) -> bool {
    condition.holds()
}

/// What `approval(when = ...)` takes: a condition over the parameters.
#[diagnostic::on_unimplemented(
    message = "`approval(when = ...)` must be a `bool` condition, not `{Self}`",
    label = "this decides whether the call needs a person's approval: it must be a `bool`",
    note = "e.g. `approval(when = amount > 1000.0)`; `approval` alone asks on every first call"
)]
pub trait ApprovalCondition {
    /// Whether the call needs approval.
    fn holds(self) -> bool;
}

impl ApprovalCondition for bool {
    fn holds(self) -> bool {
        self
    }
}

/// The text of an approval request from an `approval(text = ...)` template: literal pieces and
/// the parameters' values, written with `Display`.
pub fn approval_text(pieces: &[&dyn std::fmt::Display]) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    for piece in pieces {
        let _ = write!(text, "{piece}");
    }
    text
}
pub use tracing;

/// Checks a key field's type where the user wrote it: the expansion calls this with the
/// parameter's span, so an unfit type is reported on that parameter.
#[inline(always)]
pub fn key_part<T: KeyPart>(value: &T) -> &dyn KeyPart {
    value
}

/// Checks a scope's type where the user wrote `scope = ...`: like [`key_part`], in words
/// about scopes (a scope is not a key field).
#[inline(always)]
pub fn scope_part<T: ScopePart>(value: &T) -> &dyn KeyPart {
    value
}

/// A value that can be a scope: any key part (strings, integers, identifier types).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an idempotency scope",
    label = "a scope names whose records these are (a tenant or user id), and `{Self}` is not such an id",
    note = "give `scope = ...` the caller's id itself, a string or an integer (e.g. `scope = principal.tenant`), or a type that implements `idem::KeyPart`; the scope's text is hashed into every key, so it must be the same on every call of that caller"
)]
pub trait ScopePart: KeyPart {}

// Not recommended: without it rustc would report the missing `KeyPart` in words about key
// fields.
#[diagnostic::do_not_recommend]
impl<T: KeyPart + ?Sized> ScopePart for T {}

/// Names the return type's stored value for the generated status function.
pub type ValueOf<O> = <O as ToolOutput>::Value;

/// What the generated status function of a tool returning `O` returns.
pub type StatusOf<O> = Result<crate::status::Status<ValueOf<O>>, crate::error::Error>;
pub use crate::key::build_key;

/// The error type of a tool's `Result`, for status functions served as tools of the same
/// framework (a rig status tool fails with the tool's own error type).
pub trait ResultParts {
    /// The `E` of `Result<T, E>`.
    type Error;
}

impl<T, E> ResultParts for Result<T, E> {
    type Error = E;
}

/// Names the error type of a tool returning `Result<T, E>`.
pub type ErrorOf<O> = <O as ResultParts>::Error;

/// ADK-Rust glue: what the status tool `#[idempotent]` makes beside an ADK `#[tool]` names.
#[cfg(feature = "adk")]
pub mod adk {
    pub use crate::frameworks::adk::{status_answer, tool_error};
    pub use adk_core::{AdkError, Tool, ToolContext, async_trait};
    pub use serde_json::Value;

    use crate::frameworks::status_args::{JsonObject, key_schema};

    /// The status tool's parameters: the tool's own (as ADK's `#[tool]` made them) with
    /// only the key's `fields` (Rust names, each found by its JSON name, with the names
    /// `given` in `json_names = [...]`). A field without a JSON name is left out; the
    /// status tool's calls say why.
    pub fn status_schema(tool: Option<Value>, fields: &[&str], given: &[(&str, &str)]) -> Option<Value> {
        match tool? {
            Value::Object(schema) => Some(Value::Object(key_schema(&schema, fields, given))),
            other => Some(other),
        }
    }

    /// A status tool's description: `template` with `{fields}` replaced by the key's
    /// `fields` as the model knows them (their JSON names in the tool's schema). Warns once
    /// for each field the tool's own description (a literal, fixed at compile time) names
    /// otherwise than the schema: a `rename_all` the macro could not see. `described` holds
    /// each such field's path and the name that description gives it.
    pub fn status_description<T: Tool>(
        tool: &T,
        fields: &[&str],
        given: &[(&str, &str)],
        template: &str,
        described: &[(&str, &str)],
    ) -> String {
        let schema = arguments_schema(tool);
        if let Some(schema) = &schema {
            for (path, name, json) in crate::json_names::misnamed(schema, described, given) {
                tracing::warn!(
                    target: "idem",
                    tool = tool.name(),
                    "the description of {} names the field {name}, which the model knows as {json}: ADK-Rust \
                     takes the description as written at compile time, where serde's rename_all is not visible; \
                     add json_names = [<the path to {path}> = \"{json}\"] to its #[idempotent]",
                    tool.name()
                );
            }
        }
        let names: Vec<String> =
            fields.iter().map(|field| crate::json_names::json_path(schema.as_ref(), field, given)).collect();
        template.replace("{fields}", &names.join(", "))
    }

    /// The JSON schema of an ADK tool's arguments, as its answers find its fields' JSON
    /// names in it: the tool's own parameters.
    pub fn arguments_schema<T: Tool>(tool: &T) -> Option<JsonObject> {
        match tool.parameters_schema()? {
            Value::Object(schema) => Some(schema),
            _ => None,
        }
    }

    /// A status tool call's arguments as an object: anything else reads as no arguments, so
    /// each key field is reported missing.
    pub fn arguments(args: Value) -> JsonObject {
        match args {
            Value::Object(args) => args,
            _ => JsonObject::new(),
        }
    }
}

/// rmcp glue the `#[idem::tasks]` and `#[idem::status_tools]` expansions call.
#[cfg(feature = "rmcp")]
pub mod rmcp {
    /// MCP Tasks: what `#[idem::tasks]` generates and `#[idempotent]` on an rmcp tool names.
    pub mod tasks {
        pub use crate::frameworks::rmcp::tasks::{
            Answer, Ask, Caller, Client, OwnedServer, SERVING, ServesTasks, Tasks, ToolAnswer, acknowledged, advertise,
            ask, client, first_answer, owned_server, serve_call, state_of,
        };
    }
}
// Also here, for compile errors: rustc names a hidden item by its path only when it is one
// of `__private`'s own items (it does not look inside modules of a `doc(hidden)` module), and
// would otherwise print a path that reads like rmcp's own (`rmcp::tasks::ServesTasks`).
/// The JSON schema of an rmcp tool's arguments `P`, where its fields' JSON names are.
#[cfg(feature = "rmcp")]
pub use crate::frameworks::rmcp::status_input::arguments_schema as rmcp_arguments_schema;
/// An rmcp status tool's input: the key's fields only.
#[cfg(feature = "rmcp")]
pub use crate::frameworks::rmcp::status_input::{StatusInput, status_description, status_input_schema};
/// Without idem's `rmcp` feature no schema is read: fields keep their Rust names.
#[cfg(not(feature = "rmcp"))]
pub fn rmcp_arguments_schema<P: ?Sized>() -> Option<JsonObject> {
    None
}
#[cfg(feature = "rmcp")]
pub use crate::frameworks::rmcp::tasks::{OwnedServer, ServesTasks};
/// A status tool's arguments (rmcp, ADK-Rust), read field by field.
#[cfg(any(feature = "rmcp", feature = "adk"))]
pub use crate::frameworks::status_args::StatusArgs;
