//! rmcp: an MCP server whose tools carry `#[idempotent]` above `#[tool]`, driven by rmcp's
//! own client over an in-process transport, as a model's MCP client would drive it. No LLM:
//! the test reads what the client hands to a model (the tool list and the tool results).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use idem::store::block_on;
use idem::{MemoryStore, idempotent};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::{RoleClient, RunningService};
use rmcp::{ErrorData, ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct SendInvoice {
    /// The customer to bill.
    customer: String,
    /// The billing period, e.g. 2026-10.
    period: String,
    amount: f64,
    memo: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct AddNote {
    customer: String,
    text: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct ExportLedger {
    month: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct Customer {
    id: String,
    name: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct Refund {
    /// Who is refunded.
    customer: Customer,
    order: u32,
    reason: Option<String>,
}

#[derive(Clone)]
struct Billing {
    store: Arc<MemoryStore>,
    invoices: Arc<AtomicUsize>,
    notes: Arc<AtomicUsize>,
    exports: Arc<AtomicUsize>,
    refunds: Arc<AtomicUsize>,
    gate: Arc<Semaphore>,
}

#[idem::status_tools]
#[tool_router]
impl Billing {
    /// Create and send the invoice for one customer and billing period. Safe to retry: a
    /// second call for the same customer and period sends nothing.
    ///
    /// It answers with:
    /// - a new invoice, or
    /// - the first one again, marked replayed.
    #[idempotent(key = "invoice:<req.customer>:<req.period>", compare = [req.amount], store = self.store)]
    #[tool(annotations(title = "Send invoice"))]
    async fn send_invoice(&self, Parameters(req): Parameters<SendInvoice>) -> Result<CallToolResult, ErrorData> {
        let n = self.invoices.fetch_add(1, Ordering::SeqCst) + 1;
        let key = idem::current_key().expect("the body runs under a key");
        Ok(CallToolResult::structured(json!({
            "invoice": format!("inv_{n}"),
            "amount": req.amount,
            "memo": req.memo,
            "idempotency_key": key.as_str(),
        })))
    }

    /// Add a note to a customer's file (one per customer).
    #[idempotent(key = "note:<who>", compare = [text], store = self.store)]
    #[tool]
    async fn add_note(
        &self,
        Parameters(AddNote { customer: who, text }): Parameters<AddNote>,
    ) -> Result<String, idem::Error> {
        self.notes.fetch_add(1, Ordering::SeqCst);
        Ok(format!("noted for {who}: {text}"))
    }

    /// Refund one order of a customer.
    #[idempotent(key = "refund:<req.customer.id>:<req.order>", store = self.store)]
    #[tool]
    fn refund(&self, Parameters(req): Parameters<Refund>) -> Result<CallToolResult, ErrorData> {
        self.refunds.fetch_add(1, Ordering::SeqCst);
        let reason = req.reason.unwrap_or_default();
        Ok(CallToolResult::structured(json!({"refunded": req.order, "to": req.customer.name, "reason": reason})))
    }

    /// Export one month of the ledger (slow: waits for the test to let it finish).
    #[idempotent(key = "export:<req.month>", store = self.store)]
    #[tool(annotations(idempotent_hint = false))]
    async fn export_ledger(&self, Parameters(req): Parameters<ExportLedger>) -> Result<CallToolResult, ErrorData> {
        let _permit = self.gate.acquire().await.expect("the gate stays open");
        self.exports.fetch_add(1, Ordering::SeqCst);
        Ok(CallToolResult::structured(json!({"month": req.month, "rows": 3})))
    }
}

#[tool_handler]
impl ServerHandler for Billing {}

impl Billing {
    fn new() -> Self {
        Billing {
            store: Arc::new(MemoryStore::new()),
            invoices: Arc::default(),
            notes: Arc::default(),
            exports: Arc::default(),
            refunds: Arc::default(),
            gate: Arc::new(Semaphore::new(0)),
        }
    }
}

/// Serves `billing` over an in-process duplex pipe and connects rmcp's client to it.
async fn connect(billing: Billing) -> RunningService<RoleClient, ()> {
    let client_io = served(billing);
    ().serve(client_io).await.expect("the client connects")
}

/// Calls a tool as a model's client does. A protocol error fails the test: every idem
/// answer must reach the model as a tool result.
async fn call(client: &RunningService<RoleClient, ()>, tool: &'static str, args: Value) -> CallToolResult {
    let args = args.as_object().expect("arguments are an object").clone();
    client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(args))
        .await
        .expect("a tool result, not a protocol error")
}

fn structured(result: &CallToolResult) -> &Value {
    result.structured_content.as_ref().expect("structured content")
}

fn find<'a>(tools: &'a [Tool], name: &str) -> &'a Tool {
    tools.iter().find(|tool| tool.name == name).unwrap_or_else(|| panic!("no tool {name}"))
}

#[tokio::test]
async fn the_model_sees_hints_status_tools_and_their_inputs() {
    let client = connect(Billing::new()).await;
    let tools = client.list_all_tools().await.unwrap();
    let wire = |name: &str| serde_json::to_value(find(&tools, name)).unwrap();

    let send = wire("send_invoice");
    assert_eq!(send["annotations"]["idempotentHint"], true, "{send}");
    assert_eq!(send["annotations"]["title"], "Send invoice", "the user's annotations stay");
    assert_eq!(
        send["description"],
        "Create and send the invoice for one customer and billing period. Safe to retry: a second call for \
         the same customer and period sends nothing.\n\nIt answers with:\n- a new invoice, or\n- the first one \
         again, marked replayed.\n\nSafe to retry: a repeat for the same customer and period never runs it twice; \
         it gets the first call's result, or IN_PROGRESS while that call runs. A repeat with a different amount \
         is refused with CONFLICT: ask the user. After a TIMEOUT or IN_PROGRESS, call send_invoice_status with \
         the same customer and period instead of calling again.",
        "the doc comment as paragraphs, its list kept, then idem's paragraph"
    );
    assert_eq!(send["description"], Billing::send_invoice_description(), "the function gives what rmcp lists");
    assert_eq!(wire("add_note")["annotations"]["idempotentHint"], true);
    assert_eq!(wire("export_ledger")["annotations"]["idempotentHint"], false, "a hint the user set stays");

    let status = wire("send_invoice_status");
    assert_eq!(status["annotations"]["readOnlyHint"], true, "{status}");
    assert_eq!(status["annotations"]["destructiveHint"], false);
    let description = status["description"].as_str().unwrap();
    assert!(description.contains("key fields: customer, period."), "{description}");
    assert!(!description.contains("req.") && !description.contains('\n'), "{description}");
    let schema = &status["inputSchema"];
    assert_eq!(schema["type"], "object", "{schema}");
    let properties = schema["properties"].as_object().unwrap();
    assert_eq!(properties.keys().collect::<Vec<_>>(), ["customer", "period"], "only the key's fields: {schema}");
    assert_eq!(properties["customer"], json!({"type": "string", "description": "The customer to bill."}));
    assert_eq!(properties["period"]["description"], "The billing period, e.g. 2026-10.");
    assert_eq!(schema["required"], json!(["customer", "period"]));

    let note = wire("add_note_status");
    assert_eq!(note["inputSchema"]["properties"].as_object().unwrap().keys().collect::<Vec<_>>(), ["customer"]);
    assert!(note["description"].as_str().unwrap().contains("key fields: customer."), "the JSON name, not `who`");

    // A nested key field is its top-level property, whole, with the type it refers to.
    let refund = wire("refund_status")["inputSchema"].clone();
    assert_eq!(refund["properties"].as_object().unwrap().keys().collect::<Vec<_>>(), ["customer", "order"]);
    assert_eq!(refund["properties"]["customer"]["description"], "Who is refunded.");
    let reference = refund["properties"]["customer"]["$ref"].as_str().expect("a $ref to Customer");
    let name = reference.strip_prefix("#/$defs/").unwrap();
    assert!(refund["$defs"][name]["properties"]["id"].is_object(), "the $ref resolves: {refund}");
    assert_eq!(refund["required"], json!(["customer", "order"]));

    // A vowel-initial tool name reads as well as any other (no "a export_ledger call").
    let export = wire("export_ledger_status");
    let export = export["description"].as_str().unwrap();
    assert!(export.contains("Call it when the outcome of a call to export_ledger is unknown"), "{export}");

    for name in ["add_note_status", "export_ledger_status", "refund_status"] {
        assert_eq!(wire(name)["annotations"]["readOnlyHint"], true, "{name}");
    }
    assert_eq!(tools.len(), 8);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn repeats_replay_and_conflicts_are_tool_errors_the_model_can_act_on() {
    let billing = Billing::new();
    let client = connect(billing.clone()).await;
    let args = json!({"customer": "acme", "period": "2026-10", "amount": 120.0, "memo": "October support"});

    let first = call(&client, "send_invoice", args.clone()).await;
    assert_eq!(first.is_error, Some(false));
    assert_eq!(structured(&first)["invoice"], "inv_1");
    assert_eq!(structured(&first)["idempotency_key"], "invoice:acme:2026-10");

    // The model retries with a reworded memo and another spelling of the customer.
    let reworded = json!({"customer": " ACME ", "period": "2026-10", "amount": 120.0, "memo": "Support, Oct."});
    let again = call(&client, "send_invoice", reworded).await;
    assert_eq!(again.is_error, Some(false));
    assert_eq!(structured(&again)["invoice"], "inv_1");
    assert_eq!(structured(&again)["replayed"], true);
    let text = &again.content[0].as_text().unwrap().text;
    assert!(text.contains(r#""replayed":true"#), "a model reading the text sees the replay: {text}");

    // Another amount for the same invoice: a CONFLICT tool result, never a protocol error.
    let changed = json!({"customer": "acme", "period": "2026-10", "amount": 150.0, "memo": "October support"});
    let conflict = call(&client, "send_invoice", changed).await;
    assert_eq!(conflict.is_error, Some(true));
    let error = &structured(&conflict)["error"];
    assert_eq!(error["code"], "CONFLICT");
    assert_eq!(error["retryable"], false);
    assert!(error["message"].as_str().unwrap().contains("amount was 120.0, now 150.0"), "{error}");
    assert!(!error["message"].as_str().unwrap().contains("req."), "the model's names, not Rust's: {error}");
    assert!(error["suggestion"].as_str().unwrap().contains("ask the user"), "{error}");
    assert!(conflict.content[0].as_text().unwrap().text.contains("CONFLICT"));

    // The status tool takes the key's fields only, normalized as the tool normalizes them.
    let status = call(&client, "send_invoice_status", json!({"customer": "Acme ", "period": "2026-10"})).await;
    assert_eq!(status.is_error, Some(false));
    assert_eq!(structured(&status)["status"], "completed");
    assert_eq!(structured(&status)["result"]["invoice"], "inv_1");
    // Other arguments are ignored: the tool's own arguments work too.
    let same = call(&client, "send_invoice_status", args).await;
    assert_eq!(structured(&same)["result"]["invoice"], "inv_1");
    let other = json!({"customer": "globex", "period": "2026-10"});
    assert_eq!(structured(&call(&client, "send_invoice_status", other).await)["status"], "not_found");

    // A missing or ill-typed key field is a tool error the model reads, naming the field.
    let missing = call(&client, "send_invoice_status", json!({"customer": "acme", "amount": 120.0})).await;
    assert_eq!(missing.is_error, Some(true));
    let error = &structured(&missing)["error"];
    assert_eq!(error["code"], "INVALID_KEY", "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("key fields of send_invoice (customer, period)"), "{message}");
    assert!(message.contains("period is missing (expected a string)"), "{message}");
    assert!(!message.contains("customer is"), "customer was given: {message}");
    assert!(error["suggestion"].as_str().unwrap().contains("customer, period"), "{error}");
    let ill_typed = call(&client, "send_invoice_status", json!({"customer": 7, "period": "2026-10"})).await;
    let message = structured(&ill_typed)["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("customer is not valid (invalid type: integer `7`, expected a string)"), "{message}");

    assert_eq!(billing.invoices.load(Ordering::SeqCst), 1, "exactly one invoice");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn pattern_bound_keys_and_idem_errors_as_content() {
    let billing = Billing::new();
    let client = connect(billing.clone()).await;
    let first = call(&client, "add_note", json!({"customer": "acme", "text": "prefers e-mail"})).await;
    assert_eq!(first.is_error, Some(false));
    let replay = call(&client, "add_note", json!({"customer": "Acme", "text": "prefers e-mail"})).await;
    assert_eq!(replay.is_error, Some(false));
    assert_eq!(replay.content[0].as_text().unwrap().text, "noted for acme: prefers e-mail");

    let conflict = call(&client, "add_note", json!({"customer": "acme", "text": "prefers post"})).await;
    assert_eq!(conflict.is_error, Some(true), "rmcp marks an Err(idem::Error) as a tool error");
    let error: Value = serde_json::from_str(&conflict.content[0].as_text().unwrap().text).unwrap();
    assert_eq!(error["error"]["code"], "CONFLICT");

    // The status tool takes the field's JSON name, whatever the pattern binds it to.
    let status = call(&client, "add_note_status", json!({"customer": "ACME"})).await;
    assert_eq!(structured(&status)["status"], "completed", "{status:?}");
    assert_eq!(structured(&status)["result"], "noted for acme: prefers e-mail");
    assert_eq!(billing.notes.load(Ordering::SeqCst), 1);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_nested_key_field_is_read_from_its_top_level_argument() {
    let billing = Billing::new();
    let client = connect(billing.clone()).await;
    let args = json!({"customer": {"id": "c-1", "name": "Acme"}, "order": 42, "reason": "damaged"});
    let first = call(&client, "refund", args).await;
    assert_eq!(first.is_error, Some(false), "{first:?}");
    let again = call(&client, "refund", json!({"customer": {"id": "C-1", "name": "ACME Inc."}, "order": 42})).await;
    assert_eq!(structured(&again)["replayed"], true, "the key reads customer.id only");

    let status = call(&client, "refund_status", json!({"customer": {"id": "c-1", "name": "?"}, "order": 42})).await;
    assert_eq!(structured(&status)["status"], "completed", "{status:?}");
    assert_eq!(structured(&status)["result"]["refunded"], 42);
    let other = call(&client, "refund_status", json!({"customer": {"id": "c-1", "name": "?"}, "order": 43})).await;
    assert_eq!(structured(&other)["status"], "not_found");
    let partial = call(&client, "refund_status", json!({"customer": {"id": "c-1"}, "order": 42})).await;
    let error = &structured(&partial)["error"];
    assert_eq!(error["code"], "INVALID_KEY");
    assert!(error["message"].as_str().unwrap().contains("customer is not valid (missing field `name`"), "{error}");
    assert_eq!(billing.refunds.load(Ordering::SeqCst), 1);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_repeat_while_the_first_call_runs_is_told_to_check_the_status_tool() {
    let billing = Billing::new();
    let client = connect(billing.clone()).await;
    let peer = client.peer().clone();
    let first = tokio::spawn(async move {
        let args = json!({"month": "2026-10"}).as_object().unwrap().clone();
        peer.call_tool(CallToolRequestParams::new("export_ledger").with_arguments(args)).await.unwrap()
    });
    let mut status = Value::Null;
    for _ in 0..200 {
        status = structured(&call(&client, "export_ledger_status", json!({"month": "2026-10"})).await).clone();
        if status["status"] == "in_progress" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(status["status"], "in_progress", "{status}");

    let repeat = call(&client, "export_ledger", json!({"month": "2026-10"})).await;
    assert_eq!(repeat.is_error, Some(true));
    let error = &structured(&repeat)["error"];
    assert_eq!(error["code"], "IN_PROGRESS");
    assert_eq!(error["retryable"], false);
    assert!(error["suggestion"].as_str().unwrap().contains("export_ledger_status"), "{error}");

    billing.gate.add_permits(1);
    let first = first.await.unwrap();
    assert_eq!(first.is_error, Some(false));
    assert_eq!(structured(&first)["rows"], 3);
    assert_eq!(billing.exports.load(Ordering::SeqCst), 1);
    client.cancel().await.unwrap();
}

/// Before fields were named as the model sends them, the record of `compare = [req.amount]`
/// stored `{"req.amount": 120.0}`. After an upgrade such a record still matches a repeat
/// with the same amount, and a different amount is a CONFLICT naming `amount`.
#[tokio::test]
async fn records_written_under_rust_field_names_keep_matching() {
    use idem::store::{Completion, Reservation, Reserve, Store};
    let billing = Billing::new();
    let request = SendInvoice { customer: "acme".into(), period: "2026-10".into(), amount: 120.0, memo: String::new() };
    let id = Billing::send_invoice_record_id(Parameters(request)).unwrap();
    let reserve = Reserve { id: id.as_record_id(), request: r#"{"req.amount":120.0}"#, lease: Duration::from_secs(30) };
    let Reservation::Acquired { token } = block_on(billing.store.reserve(reserve)).unwrap() else {
        panic!("a fresh store")
    };
    let result = serde_json::to_string(&CallToolResult::structured(json!({"invoice": "inv_old"}))).unwrap();
    let completion = Completion::Success(&result);
    block_on(billing.store.complete(id.as_record_id(), token, completion, Duration::from_secs(3600))).unwrap();

    let client = connect(billing.clone()).await;
    let args = json!({"customer": "acme", "period": "2026-10", "amount": 120.0, "memo": "October support"});
    let replay = call(&client, "send_invoice", args).await;
    assert_eq!(replay.is_error, Some(false), "{replay:?}");
    assert_eq!(structured(&replay)["invoice"], "inv_old");
    let changed = json!({"customer": "acme", "period": "2026-10", "amount": 150.0, "memo": "October support"});
    let conflict = call(&client, "send_invoice", changed).await;
    let message = structured(&conflict)["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("amount was 120.0, now 150.0") && !message.contains("req."), "{message}");
    assert_eq!(billing.invoices.load(Ordering::SeqCst), 0, "the old record's invoice is the only one");
    client.cancel().await.unwrap();
}

#[path = "rmcp/answers.rs"]
mod answers;
#[path = "rmcp/approvals.rs"]
mod approvals;
use crate::support::mcp::served;
use crate::support::stable_identifiers as identifiers;
#[path = "rmcp/json_names.rs"]
mod json_names;
#[path = "rmcp/questions.rs"]
mod questions;
#[path = "rmcp/stable_identifiers.rs"]
mod stable_identifiers;
#[path = "rmcp/tasks.rs"]
mod tasks;
#[path = "rmcp/tenants.rs"]
mod tenants;
#[path = "rmcp/wire.rs"]
mod wire;
