//! An ADK-Rust agent's tool call times out and the model retries it with a new function call id.
//!
//! `cargo run -p idem-examples --features adk --bin adk_agent`
//!
//! No model service is reachable here, and ADK's `MockLlm` (adk-model) answers every turn with
//! the same responses, so the model is a script of function calls. Each call goes through
//! ADK's tool interface as its `LlmAgent` makes it: a `ToolContext` per function call,
//! `Tool::execute` under the agent's `tool_timeout`, and the answer as the agent hands it to
//! the model (`Ok` as it is, an `Err(AdkError)` or a timeout as `{"error": "..."}`).
//!
//! The billing provider is slow: it sends the invoice after `IDEM_DEMO_DELAY_MS` (default
//! 600), longer than the agent waits. A plain ADK tool sends a second invoice when the model
//! re-plans the call; the keyed one sends one, answers TIMEOUT, IN_PROGRESS, then its result.

use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use adk_core::{AdkError, Tool, ToolContext};
use adk_tool::tool;
use idem::testing::adk::ToolCall;
use idem::{MemoryStore, idempotent};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);
/// The invoices the billing provider sent.
static SENT: Mutex<Vec<String>> = Mutex::new(Vec::new());
/// How long the agent waits for a tool (`LlmAgentBuilder::tool_timeout`).
const TOOL_TIMEOUT: Duration = Duration::from_millis(300);

/// The arguments the model sends: ADK's `#[tool]` reads them from the call's JSON and shows the
/// model their schema.
#[derive(Deserialize, JsonSchema)]
struct InvoiceArgs {
    /// The customer to bill, e.g. "acme".
    customer: String,
    /// The billing period, e.g. "2026-10".
    period: String,
    /// The amount to bill, in euros.
    amount: f64,
}

/// Create and send the invoice for one customer and billing period. (`#[idempotent]` adds what
/// a retry does and which status tool to call: see `send_invoice_description()`.)
#[idempotent(key = "invoice:<args.customer>:<args.period>", compare = [args.amount],
    scope = ctx.user_id(), timeout = "150ms", store = *STORE)]
#[tool]
async fn send_invoice(ctx: Arc<dyn ToolContext>, args: InvoiceArgs) -> Result<Value, AdkError> {
    let id = bill(&args).await;
    Ok(json!({"invoice": id, "customer": args.customer, "amount": args.amount}))
}

/// The same tool without idem.
#[tool]
async fn send_invoice_plain(args: InvoiceArgs) -> Result<Value, AdkError> {
    let id = bill(&args).await;
    Ok(json!({"invoice": id, "customer": args.customer, "amount": args.amount}))
}

/// The provider's API: the request, once sent, is carried out whether or not the caller still
/// waits for the answer.
async fn bill(args: &InvoiceArgs) -> String {
    let delay = std::env::var("IDEM_DEMO_DELAY_MS").ok().and_then(|ms| ms.parse().ok()).unwrap_or(600);
    let what = format!("to {} for {} ({} EUR)", args.customer, args.period, args.amount);
    let request = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(delay)).await;
        let mut sent = SENT.lock().unwrap();
        sent.push(what);
        let id = format!("inv_{}", sent.len());
        println!("  [billing provider] {id} sent {}", sent[sent.len() - 1]);
        id
    });
    request.await.expect("the provider answers")
}

/// One function call of the model, as ADK's `LlmAgent` runs it: a `ToolContext` for the call,
/// `execute` under the agent's tool timeout, the answer as the model reads it.
async fn agent_runs(tools: &[Arc<dyn Tool>], call_id: &str, name: &str, args: Value) -> Value {
    let tool = tools.iter().find(|tool| tool.name() == name).expect("the model calls a declared tool");
    let ctx = ToolCall::new("alice", call_id).app("billing-app").into_context();
    let answer = match tokio::time::timeout(TOOL_TIMEOUT, tool.execute(ctx, args.clone())).await {
        Ok(Ok(value)) => value,
        Ok(Err(error)) => json!({ "error": error.to_string() }),
        Err(_) => json!({ "error": format!("Tool '{name}' timed out after {TOOL_TIMEOUT:?}") }),
    };
    println!("model -> {name}({args}) [{call_id}]\n  <- {answer}");
    answer
}

#[tokio::main]
async fn main() {
    let args = json!({"customer": "acme", "period": "2026-10", "amount": 120.0});
    let reworded = json!({"customer": "ACME", "period": "2026-10", "amount": 120.0});

    println!("== a plain ADK tool");
    let plain: Vec<Arc<dyn Tool>> = vec![Arc::new(SendInvoicePlain)];
    agent_runs(&plain, "call-1", "send_invoice_plain", args.clone()).await;
    // The model re-plans the timed-out call: a new function call id.
    agent_runs(&plain, "call-2", "send_invoice_plain", reworded.clone()).await;
    settle().await;
    let naive = SENT.lock().unwrap().len();

    println!("\n== the same tool with #[idempotent]");
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(SendInvoice), Arc::new(SendInvoiceStatus)];
    println!("the model sees: {}", SendInvoiceStatus.declaration());
    agent_runs(&tools, "call-3", "send_invoice", args.clone()).await;
    agent_runs(&tools, "call-4", "send_invoice", reworded.clone()).await;
    // The model does as it was told: asks the status tool until the first call is done.
    let key = json!({"customer": "acme", "period": "2026-10"});
    for attempt in 5.. {
        let status = agent_runs(&tools, &format!("call-{attempt}"), "send_invoice_status", key.clone()).await;
        if status["status"] == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let replay = agent_runs(&tools, "call-99", "send_invoice", reworded).await;
    assert_eq!(replay["replayed"], true);
    let keyed = SENT.lock().unwrap().len() - naive;
    println!("\nplain: {naive} invoices, keyed: {keyed} invoice");
}

/// Waits until the provider has carried out the plain tool's requests.
async fn settle() {
    for _ in 0..100 {
        if SENT.lock().unwrap().len() >= 2 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
