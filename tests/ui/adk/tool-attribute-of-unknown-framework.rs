use adk_tool::{AdkError, tool};
use idem::idempotent;
use serde_json::Value;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct InvoiceArgs {
    customer: String,
}

type ToolResult = Result<Value, AdkError>;

/// Send the invoice: nothing in the signature says whose `#[tool]` this is.
#[idempotent(key = "invoice:<args.customer>")]
#[tool]
async fn send_invoice(args: InvoiceArgs) -> ToolResult {
    Ok(Value::from(args.customer))
}

fn main() {}
