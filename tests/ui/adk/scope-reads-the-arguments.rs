use std::sync::Arc;

use adk_tool::{AdkError, ToolContext, tool};
use idem::idempotent;
use serde_json::Value;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct InvoiceArgs {
    tenant: String,
    customer: String,
}

/// Send the invoice.
#[idempotent(key = "invoice:<args.customer>", scope = args.tenant)]
#[tool]
async fn send_invoice(ctx: Arc<dyn ToolContext>, args: InvoiceArgs) -> Result<Value, AdkError> {
    let _ = ctx;
    Ok(Value::from(args.customer))
}

fn main() {}
