//! An MCP server over stdio whose `send_invoice` tool is safe to retry, and whose
//! `send_invoice_status` tool tells a model what happened to a call it lost track of.
//!
//! ```sh
//! cargo run --features rmcp --example mcp_server             # speaks MCP on stdin/stdout
//! cargo run --features rmcp --example mcp_server -- --demo   # plays a model's retries through rmcp's client
//! ```
//!
//! Any MCP client can start it, e.g. with the MCP Inspector
//! (`npx @modelcontextprotocol/inspector cargo run --quiet --features rmcp --example mcp_server`)
//! or in a client's server list as the command `cargo` with the arguments
//! `run --quiet --manifest-path /path/to/idem/Cargo.toml --features rmcp --example mcp_server`.
//! Keys are kept in the SQLite file `IDEM_DB`, else in the default store's file
//! (`idem::default_store_path()`, in the user's data directory), never in whatever working
//! directory the client started the server from, so a retry after a restart of the server
//! is still answered from the store.
//! Sent invoices are logged on stderr; stdout carries the protocol.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use idem::{SqliteStore, idempotent};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::{ErrorData, ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};

/// The arguments of `send_invoice`.
#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct SendInvoice {
    /// The customer to bill, e.g. "acme".
    customer: String,
    /// The billing period, e.g. "2026-10".
    period: String,
    /// The amount to bill, in euros.
    amount: f64,
    /// A note printed on the invoice.
    memo: String,
}

/// The billing service: a store for idempotency keys and the invoices it sent.
#[derive(Clone)]
struct Billing {
    store: Arc<SqliteStore>,
    sent: Arc<Mutex<Vec<String>>>,
}

#[idem::status_tools]
#[tool_router]
impl Billing {
    /// Create and send the invoice for one customer and billing period. Safe to retry: a
    /// second call for the same customer and period never sends a second invoice; it gets
    /// the first invoice back, marked "replayed": true.
    #[idempotent(key = "invoice:<req.customer>:<req.period>", compare = [req.amount], store = self.store)]
    #[tool(annotations(title = "Send invoice", destructive_hint = false))]
    async fn send_invoice(&self, Parameters(req): Parameters<SendInvoice>) -> Result<CallToolResult, ErrorData> {
        // The key to hand to a billing provider that accepts idempotency keys (as Stripe does).
        let key = idem::current_key().expect("the body runs under a key");
        let id = {
            let mut sent = self.sent.lock().expect("the ledger is not poisoned");
            sent.push(key.to_string());
            format!("inv_{}", sent.len())
        };
        eprintln!("[billing] sent {id} to {} for {:.2} ({}), provider key {key}", req.customer, req.amount, req.memo);
        Ok(CallToolResult::structured(json!({
            "invoice": id,
            "customer": req.customer,
            "period": req.period,
            "amount": req.amount,
            "memo": req.memo,
        })))
    }
}

#[tool_handler(
    name = "idem-billing",
    instructions = "Billing tools. send_invoice is safe to retry; after a timeout or an IN_PROGRESS answer, call send_invoice_status with the same arguments instead of sending again."
)]
impl ServerHandler for Billing {}

impl Billing {
    fn open(path: &Path) -> Result<Billing, String> {
        let store = SqliteStore::open(path).map_err(|error| format!("cannot open the key store (IDEM_DB): {error}"))?;
        Ok(Billing { store: Arc::new(store), sent: Arc::default() })
    }
}

/// Errors end the process with one line on stderr, never a panic's backtrace: an MCP
/// client shows that line to the person who configured the server.
#[tokio::main]
async fn main() -> ExitCode {
    let run = if std::env::args().any(|arg| arg == "--demo") { demo().await } else { serve().await };
    match run {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("mcp_server: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn serve() -> Result<(), Box<dyn std::error::Error>> {
    let path = match std::env::var_os("IDEM_DB") {
        Some(path) => PathBuf::from(path),
        None => idem::default_store_path()?,
    };
    let billing = Billing::open(&path)?;
    eprintln!(
        "[billing] MCP server on stdio, keys in {}; connect an MCP client (see the example's docs)",
        path.display()
    );
    let server = billing.serve(rmcp::transport::stdio()).await?;
    server.waiting().await?;
    Ok(())
}

/// What a model's client sees when it retries: the server and rmcp's client in one
/// process, over an in-memory pipe, with a fresh key store.
async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("idem-mcp-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let billing = Billing::open(&dir.join("keys.db"))?;
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    let server_billing = billing.clone();
    tokio::spawn(async move {
        if let Ok(server) = server_billing.serve(server_io).await {
            let _ = server.waiting().await;
        }
    });
    let client = ().serve(client_io).await?;

    for tool in client.list_all_tools().await? {
        println!("tool {:<20} annotations {}", tool.name, serde_json::to_string(&tool.annotations)?);
    }
    let calls = [
        (
            "the model sends the invoice",
            "send_invoice",
            json!({"customer": "acme", "period": "2026-10", "amount": 120.0, "memo": "October support"}),
        ),
        (
            "its call timed out: it retries, reworded",
            "send_invoice",
            json!({"customer": "ACME", "period": "2026-10", "amount": 120.0, "memo": "Support, Oct."}),
        ),
        (
            "it retries with another amount",
            "send_invoice",
            json!({"customer": "acme", "period": "2026-10", "amount": 150.0, "memo": "October support"}),
        ),
        (
            "it checks the status instead, with the key's fields only",
            "send_invoice_status",
            json!({"customer": "acme", "period": "2026-10"}),
        ),
    ];
    for (what, tool, args) in calls {
        let args = args.as_object().expect("an object").clone();
        let result = client.call_tool(CallToolRequestParams::new(tool).with_arguments(args)).await?;
        let shown = result.structured_content.unwrap_or(Value::Null);
        println!("\n{what}: {tool}\n  isError: {}\n  {shown}", result.is_error.unwrap_or(false));
    }
    let sent = billing.sent.lock().expect("the ledger is not poisoned").len();
    println!("\ninvoices sent: {sent}");
    client.cancel().await?;
    std::fs::remove_dir_all(&dir)?;
    if sent != 1 {
        return Err(format!("{sent} invoices sent for one action").into());
    }
    Ok(())
}
