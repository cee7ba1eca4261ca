//! ADK-Rust: `#[idempotent]` on the `#[tool]` functions an ADK agent already has, idem's
//! answers as `AdkError`s the model reads, and a status tool registered as any ADK tool
//! (feature `adk`; adk-core 2.3, rustc 1.95).
//!
//! Put `#[idempotent(...)]` **on the line above** ADK's `#[tool]` (from `adk-tool`, or
//! `adk-rust`'s re-export). The key's fields come from the tool's argument struct, as
//! `<args.customer>`: what the model sends. The scope comes from ADK's `ToolContext`, what
//! the runtime authenticated (`scope = ctx.user_id()`). From the repository's
//! `examples/adk_agent.rs` (`cargo run -p idem-examples --features adk --bin adk_agent`):
//!
//! <!-- quoted from examples/adk_agent.rs -->
//! ```rust,ignore
//! /// The arguments the model sends: ADK's `#[tool]` reads them from the call's JSON and shows the
//! /// model their schema.
//! #[derive(Deserialize, JsonSchema)]
//! struct InvoiceArgs {
//!     /// The customer to bill, e.g. "acme".
//!     customer: String,
//!     /// The billing period, e.g. "2026-10".
//!     period: String,
//!     /// The amount to bill, in euros.
//!     amount: f64,
//! }
//!
//! /// Create and send the invoice for one customer and billing period. (`#[idempotent]` adds what
//! /// a retry does and which status tool to call: see `send_invoice_description()`.)
//! #[idempotent(key = "invoice:<args.customer>:<args.period>", compare = [args.amount],
//!     scope = ctx.user_id(), timeout = "150ms", store = *STORE)]
//! #[tool]
//! async fn send_invoice(ctx: Arc<dyn ToolContext>, args: InvoiceArgs) -> Result<Value, AdkError> {
//!     let id = bill(&args).await;
//!     Ok(json!({"invoice": id, "customer": args.customer, "amount": args.amount}))
//! }
//! ```
//!
//! ADK's `#[tool]` makes `SendInvoice`, an `adk_tool::Tool`; `#[idempotent]` adds
//! `SendInvoiceStatus`, the read-only tool `send_invoice_status`. Give the agent both:
//! `.tool(Arc::new(SendInvoice)).tool(Arc::new(SendInvoiceStatus))`.
//!
//! # What the model reads
//!
//! ADK's agent hands the model a tool's `Ok` value as the function response, and an
//! `Err(AdkError)` as `{"error": "<component>.<category>: <message>"}`. idem's answers are
//! `AdkError`s ([`tool_error`], also as `From<idem::Error>`), whose message is the structured
//! error, so the model reads its code, its suggestion (which names the status tool) and the
//! rest, and ADK's code sees a failure (its `on_tool_error` callbacks, its circuit breaker):
//!
//! | idem's answer | the `AdkError` | the model reads |
//! | --- | --- | --- |
//! | the first call | | the body's `Ok` value |
//! | a replay | | the first call's value, with `"replayed": true` in an object |
//! | CONFLICT | `code` `"CONFLICT"`, category `invalid_input` | `{"error": "tool.invalid_input: {\"error\":{\"code\":\"CONFLICT\", ... \"differences\": [...]}}"}`: ask the user |
//! | IN_PROGRESS | `"IN_PROGRESS"`, `unavailable`, `retry_after_ms` | the same shape: call `send_invoice_status` in a few seconds |
//! | TIMEOUT (`timeout = ...`) | `"TIMEOUT"`, `timeout` | the same: the work goes on; call `send_invoice_status` |
//! | OUTCOME_UNKNOWN | `"OUTCOME_UNKNOWN"`, `internal` | the same: check with a person, never re-run |
//! | STORE_UNAVAILABLE | `"STORE_UNAVAILABLE"`, `unavailable`, `should_retry` | the same; the body did not run |
//! | INVALID_KEY | `"INVALID_KEY"`, `invalid_input` | the same, naming the empty field |
//! | APPROVAL_REQUIRED, DECLINED, APPROVAL_EXPIRED | `forbidden` | the same |
//! | BUDGET_EXCEEDED | `rate_limited` | the same, with the window's reset |
//!
//! The `AdkError`'s retry hint is idem's `retryable` flag (and `retry_after_ms`), and its
//! source is the `idem::Error`, for code that downcasts. ADK's agent retries a failed tool
//! only under a retry budget you configure, with the same function call id; a repeat then
//! gets the same answer, or the replay once the first call completed.
//!
//! # Timeouts
//!
//! ADK's agent waits `tool_timeout` for a tool, then drops its future and tells the model the
//! tool timed out. A body dropped mid-call leaves its key reserved with an unknown outcome:
//! repeats answer IN_PROGRESS until the lease ends, then OUTCOME_UNKNOWN (or your `reconcile`
//! hook decides), never a second run. Give the tool a `timeout` shorter than the agent's
//! `tool_timeout` instead: the model then reads idem's TIMEOUT, which names the status tool,
//! while the body runs on as a tokio task and records its result (feature `tokio`).
//!
//! # The status tool
//!
//! `SendInvoiceStatus` takes the key's fields only (its schema is the tool's own, cut down to
//! them), is read-only and concurrency safe, and answers with the status as JSON:
//! `{"status": "completed", "result": ...}`, `{"status": "in_progress", ...}`, `{"status":
//! "not_found"}`, ... It reads the scope from its own `ToolContext`, as the tool does. It is
//! made when every key field is a field of the argument struct; the plain function
//! `send_invoice_status(ctx, args)` is made always.
//!
//! Its parameters, what it reads and the errors it answers name each key field by its JSON
//! name, the one the tool's own parameters show: with `#[serde(rename_all = "camelCase")]`
//! on `InvoiceArgs`, `<args.customer_id>` is `customerId` (any of serde's `rename_all`
//! rules is found by itself); a field `#[serde(rename = "custId")]` renames is named in the
//! attribute, `json_names = [args.customer_id = "custId"]`. Its declaration, which ADK's
//! agent reads on every run, never panics: a field whose JSON name is not found is left out
//! of its parameters, and every call answers `INVALID_KEY` saying which field and what to
//! write. CONFLICT and the tool's other answers name fields by their JSON names too. The
//! rule: [Field names the model sees](https://docs.rs/idem-tools/latest/idem/index.html#field-names-the-model-sees).
//!
//! # Which `#[tool]`
//!
//! rmcp's attribute is `#[tool]` too. `#[idempotent]` reads the path first: `#[adk_tool::tool]`,
//! `#[adk_rust::tool]` (any path from an `adk*` crate) is ADK's, `#[rmcp::tool]` rmcp's. A bare
//! `#[tool]` is told by the function: a method (`&self`) or rmcp's types (`Parameters`,
//! `CallToolResult`, ...) make it rmcp's; a `ToolContext` parameter, `AdkError` or an `adk_*`
//! path in the signature make it ADK's. A bare `#[tool]` with neither does not compile: write
//! its path. (A `#[tool]` from another path, a re-export, is told by the function too.)
//!
//! # Scopes
//!
//! The argument struct is what the model sends, so a `scope` that reads it does not compile;
//! read the caller from the tool's context (`scope = ctx.user_id()`, or
//! `ctx.session_id()` for records per session). A tool that takes the `ToolContext` without
//! `scope` (or `unscoped`) compiles with a warning: its records are shared by every user.
//!
//! In a test, call the tool's `execute` with the context ADK's agent would make for one
//! function call of a given user: `idem::testing::adk::ToolCall::new("alice", "call-1")`
//! (features `testing` and `adk`). ADK's `SimpleToolContext` answers `"anonymous"` for every
//! user, so two users' records cannot be told apart with it.
//!
//! # ADK's own ledger
//!
//! ADK-Rust's main branch adds an `ActionLedger` (begin / complete / get) keyed by the
//! execution and the function call id: a model that re-plans a timed-out call sends a new
//! call id, which such a key does not catch, and it keeps a digest of the result, not the
//! result. No published adk-core has it yet (2.3.0 is the newest); idem does not implement
//! it until a release does.

use std::any::Any;

use adk_core::{AdkError, ErrorCategory, ErrorComponent, RetryHint};
use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, ErrorCode};
use crate::status::Status;

/// An idem answer as an ADK tool error; see [`tool_error`].
impl From<Error> for AdkError {
    fn from(error: Error) -> Self {
        tool_error(error)
    }
}

/// An idem answer as an ADK tool error: component `tool`, the code (`"CONFLICT"`), a
/// category ADK knows (see the module's table), the retry hint from idem's `retryable` flag
/// and `retry_after_ms`, the structured error `{"error": {"code", "message", "retryable",
/// "suggestion", ...}}` as the message the model reads, and the `idem::Error` as the source.
pub fn tool_error(error: Error) -> AdkError {
    let category = match error.code() {
        ErrorCode::Conflict | ErrorCode::InvalidKey => ErrorCategory::InvalidInput,
        ErrorCode::InProgress | ErrorCode::StoreUnavailable => ErrorCategory::Unavailable,
        ErrorCode::Timeout => ErrorCategory::Timeout,
        ErrorCode::ApprovalRequired | ErrorCode::Declined | ErrorCode::ApprovalExpired => ErrorCategory::Forbidden,
        ErrorCode::BudgetExceeded => ErrorCategory::RateLimited,
        ErrorCode::OutcomeUnknown | ErrorCode::RecordUnreadable | ErrorCode::NamespaceClash => ErrorCategory::Internal,
    };
    let retry = RetryHint {
        should_retry: error.retryable(),
        retry_after_ms: error.retry_after().map(|after| u64::try_from(after.as_millis()).unwrap_or(u64::MAX)),
        max_attempts: None,
    };
    AdkError::new(ErrorComponent::Tool, category, error.code().as_str(), error.to_json().to_string())
        .with_retry(retry)
        .with_source(error)
}

/// A status read as an ADK status tool's answer: the status as JSON (`{"status":
/// "completed", "result": ...}`, `{"status": "not_found"}`, ...), or the error that
/// prevented the read as [`tool_error`].
pub fn status_answer<T: Serialize + 'static>(status: Result<Status<T>, Error>) -> Result<Value, AdkError> {
    let status = status.map_err(tool_error)?;
    let json = match &status {
        // A completed ADK tool's result is JSON already: shown as it was.
        Status::Completed(value) => match (value as &dyn Any).downcast_ref::<Value>() {
            Some(value) => Ok(serde_json::json!({"status": "completed", "result": value})),
            None => serde_json::to_value(&status),
        },
        _ => serde_json::to_value(&status),
    };
    json.map_err(|error| {
        tool_error(Error::new(
            ErrorCode::RecordUnreadable,
            format!("the recorded result cannot be shown as JSON ({error})"),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn conflicts_reach_the_model_with_code_and_suggestion() {
        let error = Error::new(ErrorCode::Conflict, "amount differs").with_suggestion("ask the user");
        let adk = AdkError::from(error.clone());
        assert_eq!(adk.code, "CONFLICT");
        assert_eq!(adk.category, ErrorCategory::InvalidInput);
        assert!(!adk.is_retryable());
        let shown: Value = serde_json::from_str(&adk.message).unwrap();
        assert_eq!(shown, error.to_json());
        assert!(adk.to_string().starts_with("tool.invalid_input: {\"error\":"), "{adk}");
        assert_eq!(adk.source().and_then(|source| source.downcast_ref::<Error>()), Some(&error));
    }

    #[test]
    fn outages_are_retryable_and_timeouts_are_not() {
        let outage = tool_error(Error::new(ErrorCode::StoreUnavailable, "down"));
        assert!(outage.is_retryable());
        let timeout = tool_error(Error::new(ErrorCode::Timeout, "slow"));
        assert!(timeout.is_timeout());
        assert!(!timeout.is_retryable(), "ADK retries timeouts by category: idem's flag wins");
    }

    #[test]
    fn status_reads_show_the_json_result() {
        let completed = status_answer(Ok(Status::Completed(serde_json::json!({"id": 1})))).unwrap();
        assert_eq!(completed, serde_json::json!({"status": "completed", "result": {"id": 1}}));
        assert_eq!(status_answer::<Value>(Ok(Status::NotFound)).unwrap(), serde_json::json!({"status": "not_found"}));
        let failed = status_answer::<Value>(Err(Error::new(ErrorCode::StoreUnavailable, "down"))).unwrap_err();
        assert_eq!(failed.code, "STORE_UNAVAILABLE");
    }
}
