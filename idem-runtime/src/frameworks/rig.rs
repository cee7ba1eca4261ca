//! rig: `#[idempotent]` on a `#[rig_tool]`, and idem's answers as rig `ToolExecutionError`s
//! the model can act on (feature `rig`; rig-core 0.44, since 0.46 needs rustc 1.97).
//!
//! Add `#[idempotent(...)]` to a `#[rig_tool]` function that returns
//! `Result<T, ToolExecutionError>`, as the repository's `examples/rig_tool.rs` does (`cargo
//! run -p idem-examples --features rig --bin rig_tool`):
//!
//! <!-- quoted from examples/rig_tool.rs -->
//! ```rust,ignore
//! /// Create and send the invoice for one customer and billing period. (`#[idempotent]` adds what
//! /// a retry does and which status tool to call: see `send_invoice_description()`.)
//! #[idempotent(key = "invoice:<customer>:<period>", compare = [amount], store = *STORE)]
//! #[rig_tool(params(customer = "The customer to bill", period = "The billing period, e.g. 2026-10"))]
//! async fn send_invoice(
//!     customer: String,
//!     period: String,
//!     amount: f64,
//!     memo: String,
//! ) -> Result<Invoice, ToolExecutionError> {
//!     let n = SENT.fetch_add(1, Ordering::SeqCst) + 1;
//!     let key = idem::current_key().expect("the body runs under a key");
//!     println!("  [billing] sending invoice {n} to {customer} for {period}: {amount:.2} ({memo}), provider key {key}");
//!     Ok(Invoice { id: format!("inv_{n}"), customer, amount, replayed: false })
//! }
//! ```
//!
//! rig then has two tools: `SendInvoice`, and `SendInvoiceStatus` taking the key's fields
//! (`customer` and `period`) only.
//!
//! - **Attribute order.** Put `#[idempotent]` above `#[rig_tool]`: the status function is
//!   then a rig tool too (`SendInvoiceStatus`, with the parameter descriptions the key's
//!   fields had). Below `#[rig_tool]` the tool works the same, but `#[idempotent]` cannot see
//!   that it is a rig tool, so `send_invoice_status` is a plain function. Above it, a
//!   `#[rig_tool]` without `description = ...` also gets its doc comment as paragraphs, as an
//!   rmcp tool does (rig would keep the source's line breaks), and either gets idem's
//!   paragraph after it (see [The description the model
//!   reads](https://docs.rs/idem-tools/latest/idem/index.html#the-description-the-model-reads)).
//! - **What the model sees.** rig shows the model a tool error's model output, and its
//!   default `map_error` replaces any error that is not a `ToolExecutionError` with a
//!   generic "the tool failed". So idem's answers convert into `ToolExecutionError`
//!   directly ([`tool_error`], also as `From<idem::Error>`): `code` set (`"CONFLICT"`),
//!   `retryable` set, the structured error `{"error": {"code", "message", "retryable",
//!   "suggestion"}}` as the model-visible output, and the `idem::Error` as its source, for
//!   code that downcasts. With an error type of your own, implement `From<idem::Error>` and
//!   map it in `map_error` with [`tool_error`].
//! - **A scope** cannot read a rig tool's arguments (the model fills them): such a `scope`
//!   does not compile.

use rig_core::tool::{ToolErrorKind, ToolExecutionError, ToolOutput as RigToolOutput};

use crate::error::{Error, ErrorCode};

/// An idem answer as a rig tool error; see [`tool_error`].
impl From<Error> for ToolExecutionError {
    fn from(error: Error) -> Self {
        tool_error(error)
    }
}

/// An idem answer as a rig tool error: kind `invalid_args` for INVALID_KEY, `timeout` for
/// TIMEOUT, `other` for the rest; the code (`"CONFLICT"`) and the retryable flag set; the
/// structured error as the model-visible JSON output; the `idem::Error` as the source.
pub fn tool_error(error: Error) -> ToolExecutionError {
    let kind = match error.code() {
        ErrorCode::InvalidKey => ToolErrorKind::InvalidArgs,
        ErrorCode::Timeout => ToolErrorKind::Timeout,
        _ => ToolErrorKind::Other,
    };
    ToolExecutionError::new(kind, error.to_string())
        .with_code(error.code().as_str())
        .with_retryable(error.retryable())
        .with_model_output(RigToolOutput::json(error.to_json()))
        .with_source(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflicts_reach_the_model_with_code_and_suggestion() {
        let error = Error::new(ErrorCode::Conflict, "amount differs").with_suggestion("ask the user");
        let tool_error = ToolExecutionError::from(error.clone());
        assert_eq!(tool_error.code(), Some("CONFLICT"));
        assert_eq!(tool_error.retryable(), Some(false));
        assert_eq!(tool_error.kind(), ToolErrorKind::Other);
        assert_eq!(tool_error.model_output().as_json(), Some(&error.to_json()));
        assert_eq!(tool_error.downcast_ref::<Error>(), Some(&error));
    }

    #[test]
    fn timeouts_are_not_retryable() {
        let tool_error = ToolExecutionError::from(Error::new(ErrorCode::Timeout, "slow"));
        assert_eq!(tool_error.kind(), ToolErrorKind::Timeout);
        assert_eq!(tool_error.retryable(), Some(false));
        let outage = ToolExecutionError::from(Error::new(ErrorCode::StoreUnavailable, "down"));
        assert_eq!(outage.retryable(), Some(true));
    }
}
