//! A remote MCP server: rmcp's streamable HTTP transport in axum, behind an authentication
//! layer, several worker processes behind one address, one store they share. The tools'
//! records are per tenant (`scope = principal.tenant`, the principal read from the
//! authenticated HTTP request by `idem::frameworks::rmcp::Authenticated`), and the slow
//! tool answers as an MCP task that any worker can read and cancel.
//!
//! ```sh
//! cargo run --features rmcp --bin remote_mcp              # the demo: two workers, one address, two tenants
//! cargo run --features rmcp,postgres --bin remote_mcp -- --db postgres://user@host/db   # the same on PostgreSQL
//! cargo run --features rmcp --bin remote_mcp -- serve --db idem.db --effects effects.log --port 8001   # one worker
//! ```
//!
//! A worker (`serve`) listens on `127.0.0.1:PORT/mcp` (port 0: any free one; it prints the
//! address it got), keeps keys in `--db` (an SQLite file, or a PostgreSQL URL with the
//! `postgres` feature, in `--schema`, default `idem`: every worker runs the migrations at
//! start, which is safe, and keeps a pool of 8 connections) and appends one line per effect
//! to `--effects`. `--invoice-ms` and `--page-ms` set how long the billing provider takes
//! for an invoice (200) and for each of an export's three pages (1000). Clients send
//! `Authorization: Bearer acme-token` or `beta-token`. The workers are stateless (rmcp's
//! `legacy_session_mode = false`): every request stands alone and every answer comes from
//! the store, so a load balancer needs no sticky sessions.

mod billing;
mod cluster;
mod proxy;
mod worker;

use std::process::{Command, ExitCode};
use std::time::Duration;

use billing::Effects;
use cluster::{Worker, connect};
use rmcp::model::{CallToolRequestParams, CallToolResponse, GetTaskParams, TaskStatus};
use rmcp::service::{Peer, RoleClient};
use serde_json::{Value, json};
use worker::flag;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime");
    let result = match args.first().map(String::as_str) {
        Some("serve") => runtime.block_on(worker::serve(&args[1..])),
        _ => runtime.block_on(demo(&args)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("remote_mcp: {error}");
            ExitCode::FAILURE
        }
    }
}

type Result<T, E = Box<dyn std::error::Error + Send + Sync>> = std::result::Result<T, E>;

async fn call(client: &Peer<RoleClient>, tool: &str, arguments: Value) -> Result<CallToolResponse> {
    let Value::Object(arguments) = arguments else { return Err("arguments are an object".into()) };
    Ok(client.call_tool_once(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments)).await?)
}

/// What a model would read of an answer.
fn shown(response: &CallToolResponse) -> String {
    match response {
        CallToolResponse::Complete(result) => match &result.structured_content {
            Some(Value::Object(content)) if content.contains_key("error") => {
                format!("{} ({})", content["error"]["code"], content["error"]["message"])
            }
            Some(content) => content.to_string(),
            None => format!("{:?}", result.content),
        },
        CallToolResponse::Task(task) => format!("task {} ({:?})", task.task.task_id, task.task.status),
        other => format!("{other:?}"),
    }
}

/// Two workers on one store behind one address, two tenants, a model's retries.
async fn demo(args: &[String]) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let sqlite = dir.path().join("idem.db");
    let db = flag(args, "--db").map_or_else(|| sqlite.display().to_string(), str::to_owned);
    let effects = Effects { path: dir.path().join("effects.log") };
    let example = std::env::current_exe()?;
    let effects_path = effects.path.display().to_string();
    let args = ["--db", db.as_str(), "--effects", effects_path.as_str(), "--page-ms", "700"];
    let worker = || Worker::start(Command::new(&example).arg("serve").args(args));
    let workers = [worker()?, worker()?];
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(proxy::round_robin(listener, workers.iter().map(|worker| worker.address).collect()));
    println!("two workers on {db}, one address: {url}");

    let acme = connect(&url, "acme-token").await?;
    let beta = connect(&url, "beta-token").await?;
    let invoice = json!({"customer": "c1", "period": "2026-10", "amount": 120.0});
    println!("acme sends c1's October invoice:     {}", shown(&call(&acme, "send_invoice", invoice.clone()).await?));
    println!("acme retries (on the other worker):  {}", shown(&call(&acme, "send_invoice", invoice.clone()).await?));
    let other = json!({"customer": "c1", "period": "2026-10", "amount": 150.0});
    println!("acme asks for another amount:        {}", shown(&call(&acme, "send_invoice", other).await?));
    println!("beta sends its own c1's invoice:     {}", shown(&call(&beta, "send_invoice", invoice).await?));

    println!("8 racing calls for acme's c2, over both workers:");
    let c2 = json!({"customer": "c2", "period": "2026-10", "amount": 80.0});
    let racing: Vec<_> = (0..8)
        .map(|_| {
            let (peer, c2) = (acme.peer().clone(), c2.clone());
            tokio::spawn(async move { call(&peer, "send_invoice", c2).await })
        })
        .collect();
    for answer in racing {
        println!("  {}", shown(&answer.await??));
    }

    println!("acme exports October's ledger (a few seconds):");
    let first = call(&acme, "export_ledger", json!({"month": "2026-10"})).await?;
    println!("  {}", shown(&first));
    let CallToolResponse::Task(task) = first else { return Err("a slow export answers with a task".into()) };
    let id = task.task.task_id;
    println!(
        "  beta asks about acme's task: {}",
        match beta.get_task(GetTaskParams::new(&id)).await {
            Ok(state) => format!("{:?}", state.task.status()),
            Err(error) => format!("refused ({error})"),
        }
    );
    loop {
        let state = acme.get_task(GetTaskParams::new(&id)).await?;
        println!(
            "  tasks/get: {:?} {}",
            state.task.status(),
            state.task.task.status_message.as_deref().unwrap_or_default()
        );
        if state.task.status() != TaskStatus::Working {
            break;
        }
        tokio::time::sleep(Duration::from_millis(state.task.task.poll_interval_ms.unwrap_or(500))).await;
    }
    acme.cancel().await?;
    beta.cancel().await?;

    let lines = effects.lines();
    let invoices = lines.iter().filter(|line| line.starts_with("invoice ")).count();
    let exports = lines.iter().filter(|line| line.starts_with("export ")).count();
    println!("effects: {invoices} invoices (acme c1, acme c2, beta c1), {exports} export");
    Ok(())
}
