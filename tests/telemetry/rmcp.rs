//! The spans of an rmcp server's idempotent tool, called by rmcp's own client: one
//! `execute_tool <tool>` span per `tools/call`, and `error.type = "tool_error"` for a
//! result the tool marks `isError`, as MCP instrumentation does.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use idem::{MemoryStore, idempotent};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock};
use rmcp::service::{RoleClient, RunningService};
use rmcp::{ErrorData, ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};

use super::capture::Capture;
use crate::mcp::served;

#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct Charge {
    order: String,
    cents: u64,
}

#[derive(Clone)]
struct Payments {
    store: Arc<MemoryStore>,
    charges: Arc<AtomicUsize>,
}

#[idem::status_tools]
#[tool_router]
impl Payments {
    /// Charge one order. Safe to retry: a second call for the order charges nothing.
    #[idempotent(key = "charge:<req.order>", compare = [req.cents], store = self.store)]
    #[tool]
    async fn charge(&self, Parameters(req): Parameters<Charge>) -> Result<CallToolResult, ErrorData> {
        if req.cents == 0 {
            return Ok(CallToolResult::error(vec![ContentBlock::text("nothing to charge")]));
        }
        self.charges.fetch_add(1, Ordering::SeqCst);
        Ok(CallToolResult::structured(json!({ "order": req.order, "cents": req.cents })))
    }
}

#[tool_handler(router = Self::tool_router())]
impl ServerHandler for Payments {}

async fn connect(payments: Payments) -> RunningService<RoleClient, ()> {
    let client_io = served(payments);
    ().serve(client_io).await.expect("the client connects")
}

async fn call(client: &RunningService<RoleClient, ()>, args: Value) -> CallToolResult {
    let args = args.as_object().expect("an object").clone();
    client.call_tool(CallToolRequestParams::new("charge").with_arguments(args)).await.expect("a tool result")
}

#[test]
fn each_tools_call_is_one_execute_tool_span_with_the_mcp_error_type() {
    let capture = Capture::default();
    let payments = Payments { store: Arc::new(MemoryStore::new()), charges: Arc::default() };
    let charges = Arc::clone(&payments.charges);
    // One thread: rmcp's tasks run where the capture is.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    capture.run(|| {
        runtime.block_on(async {
            let client = connect(payments).await;
            assert_ne!(call(&client, json!({"order": "o-1", "cents": 500})).await.is_error, Some(true));
            assert_ne!(call(&client, json!({"order": "o-1", "cents": 500})).await.is_error, Some(true));
            assert_eq!(call(&client, json!({"order": "o-1", "cents": 900})).await.is_error, Some(true));
            assert_eq!(call(&client, json!({"order": "o-2", "cents": 0})).await.is_error, Some(true));
            client.cancel().await.unwrap();
        })
    });
    assert_eq!(charges.load(Ordering::SeqCst), 1, "one charge for o-1");
    let seen = capture.seen();
    let spans: Vec<_> = seen.spans_named("execute_tool charge").map(|(_, span)| span).collect();
    let answers: Vec<_> = spans.iter().map(|span| (span.field("idem.outcome"), span.field("error.type"))).collect();
    assert_eq!(
        answers,
        [
            (Some("fresh"), None),
            (Some("replayed"), None),
            (Some("conflict"), Some("CONFLICT")),
            (Some("released"), Some("tool_error")),
        ],
        "one span per tools/call, in order"
    );
    assert!(spans.iter().all(|span| span.closed && span.field("gen_ai.tool.name") == Some("charge")));
}
