//! `#[idempotent]` on ADK-Rust tools, through ADK's own types: the tools ADK's `#[tool]` makes
//! are called by its `Tool::execute`, with a `ToolContext` per function call as its agent
//! makes one, and what the model reads is what ADK's agent hands it (`Ok` values as they
//! are, an `Err(AdkError)` as `{"error": error.to_string()}`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use adk_core::{AdkError, Tool, ToolContext};
use adk_tool::tool;
use idem::testing::adk::ToolCall;
use idem::{MemoryStore, idempotent};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::Notify;

static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);
/// The invoices sent, as `user/customer/period`: one per effect.
static SENT: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Holds the body of a call for customer "held" until released.
struct Gate {
    started: Notify,
    release: Notify,
}
static GATE: LazyLock<Gate> = LazyLock::new(|| Gate { started: Notify::new(), release: Notify::new() });

#[derive(Deserialize, JsonSchema)]
struct InvoiceArgs {
    /// The customer to bill.
    customer: String,
    /// The billing period.
    period: String,
    /// The amount, in euros.
    amount: f64,
    /// A note on the invoice.
    #[serde(default)]
    memo: String,
}

/// Send the invoice for one customer and period.
#[idempotent(key = "invoice:<args.customer>:<args.period>", compare = [args.amount], scope = ctx.user_id(), store = *STORE)]
#[tool]
async fn send_invoice(ctx: Arc<dyn ToolContext>, args: InvoiceArgs) -> Result<Value, AdkError> {
    if args.customer == "held" {
        GATE.started.notify_one();
        GATE.release.notified().await;
    }
    if args.customer == "stuck" {
        std::future::pending::<()>().await;
    }
    let mut sent = SENT.lock().unwrap();
    sent.push(format!("{}/{}/{}", ctx.user_id(), args.customer, args.period));
    Ok(json!({"invoice": format!("inv_{}", sent.len()), "amount": args.amount, "memo": args.memo}))
}

static EXPORTS: AtomicUsize = AtomicUsize::new(0);

#[derive(Deserialize, JsonSchema)]
struct ExportArgs {
    ledger: String,
}

/// Export a ledger (no context: its path says the attribute is ADK's).
#[idempotent(key = "export:<args.ledger>", store = *STORE)]
#[adk_tool::tool]
async fn export_ledger(args: ExportArgs) -> adk_tool::Result<Value> {
    Ok(json!({"export": EXPORTS.fetch_add(1, Ordering::SeqCst) + 1, "ledger": args.ledger}))
}

static NOTES: AtomicUsize = AtomicUsize::new(0);

#[derive(Deserialize, JsonSchema)]
struct NoteArgs {
    ticket: u64,
    text: String,
}

/// Add a note to a ticket, once per session (the pattern binds the key's field).
#[idempotent(key = "note:<ticket>", scope = ctx.session_id(), store = *STORE)]
#[tool]
async fn add_note(ctx: Arc<dyn ToolContext>, NoteArgs { ticket, text }: NoteArgs) -> Result<Value, AdkError> {
    Ok(json!({"note": NOTES.fetch_add(1, Ordering::SeqCst) + 1, "ticket": ticket, "text": text}))
}

/// The tool context ADK's agent makes for one function call of the model.
fn call(user: &str, call_id: &str) -> Arc<dyn ToolContext> {
    ToolCall::new(user, call_id).into_context()
}

/// What ADK's agent hands the model for a tool's answer (adk-agent's `llm_agent.rs`).
fn model_reads(answer: Result<Value, AdkError>) -> Value {
    answer.unwrap_or_else(|error| json!({ "error": error.to_string() }))
}

fn sent(prefix: &str) -> usize {
    SENT.lock().unwrap().iter().filter(|sent| sent.starts_with(prefix)).count()
}

#[tokio::test]
async fn a_retried_call_with_a_new_function_call_id_is_one_effect() {
    let args = json!({"customer": "acme", "period": "2026-10", "amount": 120.0, "memo": "October"});
    let first = SendInvoice.execute(call("alice", "call-1"), args).await.unwrap();
    // The model re-plans after a timeout: a new function call id, other wording.
    let again = json!({"customer": " ACME ", "period": "2026-10", "amount": 120.0, "memo": "Support, October"});
    let replayed = SendInvoice.execute(call("alice", "call-2"), again).await.unwrap();
    assert_eq!(replayed["invoice"], first["invoice"]);
    assert_eq!(replayed["memo"], "October", "the first call's result");
    assert_eq!(replayed["replayed"], true, "the model sees that nothing new happened");
    assert_eq!(sent("alice/acme/"), 1);

    let exported = export_ledger_twice().await;
    assert_eq!(exported, (json!(1), json!(1)));
}

#[tokio::test]
async fn key_fields_bound_by_the_arguments_pattern_are_read_by_their_json_names() {
    let first = AddNote.execute(call("alice", "call-1"), json!({"ticket": 7, "text": "a"})).await.unwrap();
    let again = AddNote.execute(call("alice", "call-2"), json!({"ticket": 7, "text": "b"})).await.unwrap();
    assert_eq!((first["note"].clone(), again["replayed"].clone()), (json!(1), json!(true)));
    let status = AddNoteStatus.execute(call("alice", "call-3"), json!({"ticket": 7})).await.unwrap();
    assert_eq!(status["result"]["text"], "a");
    let schema = AddNoteStatus.parameters_schema().unwrap();
    assert_eq!(schema["required"], json!(["ticket"]), "{schema}");
    let ill_typed = AddNoteStatus.execute(call("alice", "call-4"), json!({"ticket": "seven"})).await.unwrap_err();
    assert_eq!(ill_typed.code, "INVALID_KEY");
}

async fn export_ledger_twice() -> (Value, Value) {
    let first = ExportLedger.execute(call("alice", "call-1"), json!({"ledger": "2026"})).await.unwrap();
    let second = ExportLedger.execute(call("alice", "call-2"), json!({"ledger": "2026"})).await.unwrap();
    (first["export"].clone(), second["export"].clone())
}

#[tokio::test]
async fn a_changed_amount_is_a_conflict_the_model_reads() {
    let args = json!({"customer": "globex", "period": "2026-10", "amount": 120.0});
    SendInvoice.execute(call("alice", "call-1"), args).await.unwrap();
    let changed = json!({"customer": "globex", "period": "2026-10", "amount": 150.0});
    let answer = SendInvoice.execute(call("alice", "call-2"), changed).await;
    let error = answer.as_ref().unwrap_err();
    assert_eq!(error.code, "CONFLICT");
    assert!(!error.is_retryable());
    let read = model_reads(answer).to_string();
    for shown in ["CONFLICT", "amount", "120", "150", "retryable", "suggestion"] {
        assert!(read.contains(shown), "the model reads {shown}: {read}");
    }
    assert_eq!(sent("alice/globex/"), 1);
}

#[tokio::test]
async fn a_repeat_while_the_first_runs_is_in_progress() {
    let args = json!({"customer": "held", "period": "2026-10", "amount": 1.0});
    let first = tokio::spawn(SendInvoice.execute(call("alice", "call-1"), args.clone()));
    GATE.started.notified().await;

    let answer = SendInvoice.execute(call("alice", "call-2"), args.clone()).await;
    assert_eq!(answer.as_ref().unwrap_err().code, "IN_PROGRESS");
    assert!(model_reads(answer).to_string().contains("send_invoice_status"), "the model is told what to call");
    let status = SendInvoiceStatus.execute(call("alice", "call-3"), json!({"customer": "held", "period": "2026-10"}));
    assert_eq!(status.await.unwrap()["status"], "in_progress");

    GATE.release.notify_one();
    let first = first.await.unwrap().unwrap();
    let replayed = SendInvoice.execute(call("alice", "call-4"), args).await.unwrap();
    assert_eq!(replayed["invoice"], first["invoice"]);
    assert_eq!(sent("alice/held/"), 1);
}

#[tokio::test]
async fn a_call_the_agent_timed_out_and_dropped_is_never_run_again() {
    // ADK's agent drops a tool's future after its `tool_timeout`.
    let args = json!({"customer": "stuck", "period": "2026-10", "amount": 1.0});
    let dropped =
        tokio::time::timeout(Duration::from_millis(50), SendInvoice.execute(call("alice", "call-1"), args.clone()));
    assert!(dropped.await.is_err(), "the agent gave up");
    let again = SendInvoice.execute(call("alice", "call-2"), args).await;
    assert_eq!(again.unwrap_err().code, "IN_PROGRESS", "the outcome is unknown: not run again");
    let key = json!({"customer": "stuck", "period": "2026-10"});
    assert_eq!(SendInvoiceStatus.execute(call("alice", "call-3"), key).await.unwrap()["status"], "in_progress");
}

#[tokio::test]
async fn the_status_tool_takes_the_key_fields_and_reads_the_record() {
    let status = SendInvoiceStatus;
    assert_eq!(status.name(), "send_invoice_status");
    assert!(status.is_read_only() && status.is_concurrency_safe());
    let schema = status.parameters_schema().unwrap();
    let properties: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
    assert_eq!(properties, ["customer", "period"], "{schema}");
    assert_eq!(schema["properties"]["customer"]["description"], "The customer to bill.");

    let key = json!({"customer": "initech", "period": "2026-11"});
    let before = status.execute(call("alice", "call-1"), key.clone()).await.unwrap();
    assert_eq!(before, json!({"status": "not_found"}));
    let args = json!({"customer": "initech", "period": "2026-11", "amount": 9.0});
    let sent = SendInvoice.execute(call("alice", "call-2"), args).await.unwrap();
    let after = status.execute(call("alice", "call-3"), key).await.unwrap();
    assert_eq!(after["status"], "completed");
    assert_eq!(after["result"], sent);

    let missing = status.execute(call("alice", "call-4"), json!({"customer": "initech"})).await;
    let error = missing.unwrap_err();
    assert_eq!(error.code, "INVALID_KEY");
    assert!(error.message.contains("period is missing"), "{}", error.message);
}

#[tokio::test]
async fn scopes_come_from_the_context_never_from_the_arguments() {
    let args = json!({"customer": "umbrella", "period": "2026-10", "amount": 5.0});
    SendInvoice.execute(call("alice", "call-1"), args.clone()).await.unwrap();
    SendInvoice.execute(call("bob", "call-1"), args).await.unwrap();
    assert_eq!((sent("alice/umbrella/"), sent("bob/umbrella/")), (1, 1), "two users, two invoices");

    // Arguments that name another user change nothing: the scope is the context's user.
    let posing =
        json!({"customer": "umbrella", "period": "2026-10", "amount": 7.0, "user_id": "alice", "scope": "alice"});
    let answer = SendInvoice.execute(call("carol", "call-1"), posing).await.unwrap();
    assert!(answer.get("replayed").is_none(), "carol's first call: {answer}");
    let key = json!({"customer": "umbrella", "period": "2026-10", "user_id": "dave"});
    let dave = SendInvoiceStatus.execute(call("dave", "call-2"), key).await.unwrap();
    assert_eq!(dave, json!({"status": "not_found"}), "dave reads his own records only");
    assert_eq!(sent("carol/umbrella/"), 1);
}

#[derive(Deserialize, JsonSchema)]
struct PayArgs {
    supplier: String,
    amount: f64,
}

/// Pay a supplier; above 1,000 EUR a person approves first.
#[idempotent(key = "pay:<args.supplier>", compare = [args.amount], approval(when = args.amount > 1000.0), scope = ctx.user_id(), store = *STORE)]
#[tool]
async fn pay_supplier(ctx: Arc<dyn ToolContext>, args: PayArgs) -> Result<Value, AdkError> {
    Ok(json!({"paid": args.supplier, "amount": args.amount, "by": ctx.user_id()}))
}

#[tokio::test]
async fn the_status_tool_of_a_tool_with_approvals_says_the_approval_states() {
    let description = PaySupplierStatus.description();
    for state in ["awaiting_approval", "approved", "declined", "approval_expired", "APPROVAL_REQUIRED"] {
        assert!(description.contains(state), "{state}: {description}");
    }
    assert!(!SendInvoiceStatus.description().contains("approval"), "{}", SendInvoiceStatus.description());
    // And it reads them: APPROVAL_REQUIRED sends the model to it.
    let asked = PaySupplier.execute(call("alice", "call-1"), json!({"supplier": "acme", "amount": 2000.0})).await;
    assert!(asked.unwrap_err().message.contains("APPROVAL_REQUIRED"));
    let status = PaySupplierStatus.execute(call("alice", "call-2"), json!({"supplier": "acme"})).await.unwrap();
    assert_eq!(status["status"], "awaiting_approval", "{status}");
}

#[path = "adk/json_names.rs"]
mod json_names;

/// The declaration ADK-Rust gives the model: the doc comment, then idem's paragraph, its
/// approval sentence only on the tool that asks a person.
#[tokio::test]
async fn the_declaration_the_model_reads_carries_the_paragraph() {
    let send = SendInvoice.declaration();
    let send = send["description"].as_str().unwrap();
    assert_eq!(send, send_invoice_description(), "the function gives what ADK declares");
    for said in [
        "Safe to retry: a repeat for the same customer and period never runs it twice",
        "A repeat with a different amount is refused with CONFLICT",
        "call send_invoice_status with the same customer and period instead of calling again",
    ] {
        assert!(send.contains(said), "{said:?} in {send}");
    }
    assert!(!send.contains("approval") && !send.contains("budget"), "{send}");
    let pay = PaySupplier.declaration();
    let pay = pay["description"].as_str().unwrap();
    assert!(
        pay.ends_with(
            "It needs a person's approval when amount > 1000.0: it then answers APPROVAL_REQUIRED, and \
             pay_supplier_status shows the decision."
        ),
        "{pay}"
    );
}
