//! A rig tool that is safe to retry, and its status function as a second rig tool.
//!
//! ```sh
//! cargo run --features rig --bin rig_tool
//! ```
//!
//! `#[idempotent]` goes above `#[rig_tool]`: the tool keeps its signature (rig reads it),
//! idem's answers arrive as `ToolExecutionError`s with a code, a retryable flag and the
//! structured error as the model-visible output, and `send_invoice_status` becomes the rig
//! tool `SendInvoiceStatus`. Hand `SendInvoice` and `SendInvoiceStatus` to an agent like any
//! other `#[rig_tool]`. No model is needed here: the example calls the tools the way rig's
//! agent loop does and prints what the model would see.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use idem::{MemoryStore, idempotent};
use rig_core::rig_tool;
use rig_core::tool::{PortableTool, ToolExecutionError};
use serde::{Deserialize, Serialize};

static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);
static SENT: AtomicUsize = AtomicUsize::new(0);

/// An invoice as the billing system returns it.
#[derive(Debug, Serialize, Deserialize)]
struct Invoice {
    id: String,
    customer: String,
    amount: f64,
    /// Set by idem when this is the recorded result of an earlier call.
    #[serde(default)]
    replayed: bool,
}

/// Create and send the invoice for one customer and billing period. (`#[idempotent]` adds what
/// a retry does and which status tool to call: see `send_invoice_description()`.)
#[idempotent(key = "invoice:<customer>:<period>", compare = [amount], store = *STORE)]
#[rig_tool(params(customer = "The customer to bill", period = "The billing period, e.g. 2026-10"))]
async fn send_invoice(
    customer: String,
    period: String,
    amount: f64,
    memo: String,
) -> Result<Invoice, ToolExecutionError> {
    let n = SENT.fetch_add(1, Ordering::SeqCst) + 1;
    let key = idem::current_key().expect("the body runs under a key");
    println!("  [billing] sending invoice {n} to {customer} for {period}: {amount:.2} ({memo}), provider key {key}");
    Ok(Invoice { id: format!("inv_{n}"), customer, amount, replayed: false })
}

fn args(customer: &str, amount: f64, memo: &str) -> SendInvoiceParameters {
    SendInvoiceParameters { customer: customer.into(), period: "2026-10".into(), amount, memo: memo.into() }
}

/// What rig hands the model for a call: the output, or the error's model-visible output.
async fn model_sees(call: SendInvoiceParameters) -> String {
    match SendInvoice.call(call).await {
        Ok(invoice) => format!("ok {}", serde_json::to_string(&invoice).expect("an invoice serializes")),
        Err(error) => {
            let error = SendInvoice.map_error(error);
            format!(
                "error (code {}, retryable {}) {}",
                error.code().unwrap_or("-"),
                error.retryable().unwrap_or(false),
                error.model_output().render()
            )
        }
    }
}

#[tokio::main]
async fn main() {
    for (name, description, parameters) in [
        (SendInvoice::NAME, SendInvoice.description(), SendInvoice.parameters()),
        (SendInvoiceStatus::NAME, SendInvoiceStatus.description(), SendInvoiceStatus.parameters()),
    ] {
        println!("tool {name}: {description}\n  parameters {parameters}\n");
    }

    println!("the model sends the invoice:\n  {}", model_sees(args("acme", 120.0, "October support")).await);
    println!("it retries, reworded:\n  {}", model_sees(args("ACME", 120.0, "Support, Oct.")).await);
    println!("it retries with another amount:\n  {}", model_sees(args("acme", 150.0, "October support")).await);

    let status = SendInvoiceStatus
        .call(SendInvoiceStatusParameters { customer: "acme".into(), period: "2026-10".into() })
        .await
        .expect("the store answers");
    println!("it checks the status instead:\n  {}", serde_json::to_string(&status).expect("a status serializes"));

    let sent = SENT.load(Ordering::SeqCst);
    println!("\ninvoices sent: {sent}");
    assert_eq!(sent, 1, "one action, one invoice");
}
