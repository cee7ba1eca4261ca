#![deny(deprecated)]

use std::sync::Arc;

use adk_tool::{AdkError, ToolContext, tool};
use idem::idempotent;
use serde_json::Value;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct InvoiceArgs {
    customer: String,
}

/// Send the invoice.
#[idempotent(key = "invoice:<args.customer>")]
#[tool]
async fn send_invoice(ctx: Arc<dyn ToolContext>, args: InvoiceArgs) -> Result<Value, AdkError> {
    let _ = ctx.user_id();
    Ok(Value::from(args.customer))
}

/// Shared on purpose: no warning.
#[idempotent(key = "rate:<args.customer>", unscoped)]
#[tool]
async fn rate(ctx: Arc<dyn ToolContext>, args: InvoiceArgs) -> Result<Value, AdkError> {
    let _ = ctx.user_id();
    Ok(Value::from(args.customer))
}

fn main() {}
