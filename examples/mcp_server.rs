//! An MCP server over stdio whose `send_invoice` tool is safe to retry, whose
//! `send_invoice_status` tool tells a model what happened to a call it lost track of, and
//! whose slow `export_ledger` answers as an MCP task (SEP-2663) keyed by the month.
//!
//! ```sh
//! cargo run --features rmcp --bin mcp_server             # speaks MCP on stdin/stdout
//! cargo run --features rmcp --bin mcp_server -- --demo   # plays a model's retries through rmcp's client
//! ```
//!
//! Any MCP client can start it, e.g. with the MCP Inspector
//! (`npx @modelcontextprotocol/inspector cargo run --quiet --features rmcp --bin mcp_server`)
//! or in a client's server list as the command `cargo` with the arguments
//! `run --quiet --manifest-path /path/to/idem/Cargo.toml --features rmcp --bin mcp_server`.
//! Keys are kept in the SQLite file `IDEM_DB`, else in the default store's file
//! (`idem::store::default_store_path()`, in the user's data directory), never in whatever working
//! directory the client started the server from, so a retry after a restart of the server
//! is still answered from the store.
//! Sent invoices are logged on stderr; stdout carries the protocol.
//!
//! `export_ledger` takes about three seconds and has `timeout = "1s"`. A client that
//! declared the tasks extension (`"capabilities": {"extensions":
//! {"io.modelcontextprotocol/tasks": {}}}`) gets a task after a second, the same task for a
//! retry, and polls it:
//!
//! ```text
//! -> {"method": "tools/call", "params": {"name": "export_ledger", "arguments": {"month": "2026-10"}}}
//! <- {"resultType": "task", "taskId": "idem2.q3L0Bd9sZqRk1c2Xy8JfPw",
//!     "status": "working", "pollIntervalMs": 1000, "ttlMs": 608400000, ...}
//! -> {"method": "tasks/get", "params": {"taskId": "idem2.q3L0Bd9sZqRk1c2Xy8JfPw"}}
//! <- {"taskId": "idem2.q3L0...", "status": "working", "statusMessage": "exporting page 2 of 3", ...}
//! -> {"method": "tasks/get", "params": {"taskId": "idem2.q3L0..."}}
//! <- {"taskId": "idem2.q3L0...", "status": "completed", "result": {"structuredContent":
//!     {"month": "2026-10", "rows": 3, "replayed": true}, ...}, ...}
//! ```
//!
//! A client without it gets TIMEOUT after a second, and asks the status tool:
//!
//! ```text
//! -> {"method": "tools/call", "params": {"name": "export_ledger", "arguments": {"month": "2026-10"}}}
//! <- {"isError": true, "structuredContent": {"error": {"code": "TIMEOUT", "retryable": false,
//!     "suggestion": "do not call export_ledger again; call export_ledger_status in 1 s to learn the outcome", ...}}}
//! -> {"method": "tools/call", "params": {"name": "export_ledger_status", "arguments": {"month": "2026-10"}}}
//! <- {"structuredContent": {"status": "completed", "result": {"month": "2026-10", "rows": 3}}}
//! ```

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use idem::{SqliteStore, idempotent};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{ErrorData, ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::json;

/// The arguments of `send_invoice`: rmcp reads them from the call's JSON (`Deserialize`)
/// and shows the model their JSON schema (`JsonSchema`, through rmcp's own schemars, so
/// no `schemars` dependency of your own).
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

/// The arguments of `export_ledger`.
#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct ExportLedger {
    /// The month to export, e.g. "2026-10".
    month: String,
}

/// The billing service: a store for idempotency keys, the invoices it sent and the
/// ledger exports it made.
#[derive(Clone)]
struct Billing {
    store: Arc<SqliteStore>,
    sent: Arc<Mutex<Vec<String>>>,
    exports: Arc<Mutex<Vec<String>>>,
}

#[idem::status_tools]
#[tool_router]
impl Billing {
    /// Create and send the invoice for one customer and billing period.
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

    /// Export one month of the ledger; takes a few seconds. A client that takes MCP tasks
    /// gets one task per month however often it calls.
    #[idempotent(key = "ledger:<req.month>", timeout = "1s", store = self.store)]
    #[tool(annotations(title = "Export ledger", read_only_hint = false, destructive_hint = false))]
    async fn export_ledger(&self, Parameters(req): Parameters<ExportLedger>) -> Result<CallToolResult, ErrorData> {
        for page in 1..=3 {
            if idem::cancel_requested() {
                return Err(ErrorData::internal_error("the export was cancelled before it finished", None));
            }
            idem::progress(format!("exporting page {page} of 3"));
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        }
        self.exports.lock().expect("the exports are not poisoned").push(req.month.clone());
        eprintln!("[billing] exported the ledger of {}", req.month);
        Ok(CallToolResult::structured(json!({"month": req.month, "rows": 3})))
    }
}

// `name` is what clients show for this server (`serverInfo`; its version is this crate's,
// or `version = "..."`). Without it rmcp reports itself: "rmcp" and rmcp's version.
#[tool_handler(
    name = "idem-billing",
    instructions = "Billing tools: invoices and ledger exports. Each tool's description says what a retry does."
)]
#[idem::tasks]
impl ServerHandler for Billing {}

impl Billing {
    fn open(path: &Path) -> Result<Billing, String> {
        let store = SqliteStore::open(path).map_err(|error| format!("cannot open the key store (IDEM_DB): {error}"))?;
        Ok(Billing { store: Arc::new(store), sent: Arc::default(), exports: Arc::default() })
    }
}

/// Serves MCP on stdin and stdout, with its keys in `IDEM_DB`, else the default store's file.
async fn serve() -> Result<(), Box<dyn std::error::Error>> {
    let path = match std::env::var_os("IDEM_DB") {
        Some(path) => PathBuf::from(path),
        None => idem::store::default_store_path()?,
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

/// Errors end the process with one line on stderr, never a panic's backtrace: an MCP
/// client shows that line to the person who configured the server.
#[tokio::main]
async fn main() -> std::process::ExitCode {
    let run = if std::env::args().any(|arg| arg == "--demo") { demo::run().await } else { serve().await };
    match run {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("mcp_server: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// What a model's client sees when it retries: the server and rmcp's client in one
/// process, over an in-memory pipe, with a fresh key store.
mod demo {
    use rmcp::ServiceExt;
    use rmcp::model::{
        CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, GetTaskParams, Implementation,
        TaskStatus,
    };
    use serde_json::{Value, json};

    use super::Billing;

    pub async fn run() -> Result<(), Box<dyn std::error::Error>> {
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
            println!("  {}", tool.description.as_deref().unwrap_or_default().replace('\n', "\n  "));
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

        slow_calls(&billing).await?;
        let exports = billing.exports.lock().expect("the exports are not poisoned").len();
        println!("\nledger exports made: {exports} (one per month)");
        std::fs::remove_dir_all(&dir)?;
        if sent != 1 || exports != 2 {
            return Err(format!("{sent} invoices and {exports} exports for one invoice and two months").into());
        }
        Ok(())
    }

    /// A slow tool, through a client that takes MCP tasks and through one that does not.
    async fn slow_calls(billing: &Billing) -> Result<(), Box<dyn std::error::Error>> {
        let connect = |tasks: bool| {
            let (server_io, client_io) = tokio::io::duplex(64 * 1024);
            let server_billing = billing.clone();
            tokio::spawn(async move {
                if let Ok(server) = server_billing.serve(server_io).await {
                    let _ = server.waiting().await;
                }
            });
            let capabilities = if tasks {
                ClientCapabilities::builder().enable_tasks().build()
            } else {
                ClientCapabilities::default()
            };
            ClientConfig::new(capabilities, Implementation::new("idem-demo", "0")).serve(client_io)
        };
        let export = |month: &str| {
            let args = json!({"month": month}).as_object().expect("an object").clone();
            CallToolRequestParams::new("export_ledger").with_arguments(args)
        };

        println!("\na client that takes MCP tasks exports October's ledger (a few seconds), twice:");
        let client = connect(true).await?;
        let mut task_ids = Vec::new();
        for _ in 0..2 {
            match client.call_tool_once(export("2026-10")).await? {
                CallToolResponse::Task(created) => {
                    println!("  task {} ({:?})", created.task.task_id, created.task.status);
                    task_ids.push(created.task.task_id);
                }
                other => return Err(format!("expected a task, got {other:?}").into()),
            }
        }
        if task_ids[0] != task_ids[1] {
            return Err("a retry got a second task".into());
        }
        loop {
            let state = client.get_task(GetTaskParams::new(&task_ids[0])).await?;
            let message = state.task.task.status_message.clone().unwrap_or_default();
            println!("  tasks/get: {:?} {message}", state.task.status());
            if state.task.status() != TaskStatus::Working {
                println!("  {}", serde_json::to_string(&state)?);
                break;
            }
            let wait = state.task.task.poll_interval_ms.unwrap_or(1000);
            tokio::time::sleep(std::time::Duration::from_millis(wait)).await;
        }
        client.cancel().await?;

        println!("\na client without tasks exports November's ledger:");
        let client = connect(false).await?;
        let timed_out = client.call_tool(export("2026-11")).await?;
        println!(
            "  isError: {}\n  {}",
            timed_out.is_error.unwrap_or(false),
            timed_out.structured_content.unwrap_or(Value::Null)
        );
        let status = CallToolRequestParams::new("export_ledger_status")
            .with_arguments(json!({"month": "2026-11"}).as_object().expect("an object").clone());
        loop {
            let read = client.call_tool(status.clone()).await?.structured_content.unwrap_or(Value::Null);
            if read["status"] != "in_progress" {
                println!("  export_ledger_status: {read}");
                break;
            }
            let wait = read["retry_after_ms"].as_u64().unwrap_or(1000);
            println!("  export_ledger_status: in_progress ({}), asking again in {wait} ms", read["progress"]);
            tokio::time::sleep(std::time::Duration::from_millis(wait)).await;
        }
        client.cancel().await?;
        Ok(())
    }
}
