//! rig: tools with `#[idempotent]` and `#[rig_tool]` (in either order), called through the
//! `PortableTool` implementation `#[rig_tool]` generates, as rig's agent loop calls them.
//! No LLM: the test reads what rig hands to a model (the tool result or the error's
//! model-visible output).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{LazyLock, Mutex};

use idem::{MemoryStore, Status, idempotent};
use rig_core::rig_tool;
use rig_core::tool::{PortableTool, ToolErrorKind, ToolExecutionError};
use serde::{Deserialize, Serialize};

static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);
/// The key of every invoice sent, for counting effects per action (tests run in parallel).
static INVOICES: Mutex<Vec<String>> = Mutex::new(Vec::new());
static NOTES: AtomicUsize = AtomicUsize::new(0);

#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Invoice {
    id: String,
    amount: f64,
    idempotency_key: String,
    #[serde(default)]
    replayed: bool,
}

/// Create and send the invoice for one customer and billing period. Safe to retry: a
/// second call for the same customer and period sends nothing.
#[idempotent(key = "invoice:<customer>:<period>", compare = [amount], store = *STORE)]
#[rig_tool(params(customer = "The customer to bill", period = "The billing period, e.g. 2026-10"))]
async fn send_invoice(
    customer: String,
    period: String,
    amount: f64,
    memo: String,
) -> Result<Invoice, ToolExecutionError> {
    let _ = memo;
    let key = idem::current_key().expect("the body runs under a key");
    let n = {
        let mut sent = INVOICES.lock().unwrap();
        sent.push(key.to_string());
        sent.len()
    };
    Ok(Invoice { id: format!("inv_{n}"), amount, idempotency_key: key.to_string(), replayed: false })
}

/// Add a note to a customer's file (one per customer).
#[rig_tool]
#[idempotent(key = "note:<customer>", compare = [text], store = *STORE)]
fn add_note(customer: String, text: String) -> Result<String, ToolExecutionError> {
    NOTES.fetch_add(1, Ordering::SeqCst);
    Ok(format!("noted for {customer}: {text}"))
}

fn invoice_args(customer: &str, period: &str, amount: f64, memo: &str) -> SendInvoiceParameters {
    SendInvoiceParameters { customer: customer.into(), period: period.into(), amount, memo: memo.into() }
}

/// What rig shows the model for a failed call: the error after the tool's `map_error`.
fn model_view(error: ToolExecutionError) -> ToolExecutionError {
    SendInvoice.map_error(error)
}

#[tokio::test]
async fn repeats_replay_and_conflicts_reach_the_model_with_code_and_suggestion() {
    let first = SendInvoice.call(invoice_args("acme", "2026-10", 120.0, "October support")).await.unwrap();
    assert_eq!(first.idempotency_key, "invoice:acme:2026-10");
    assert!(!first.replayed);

    let again = SendInvoice.call(invoice_args(" ACME ", "2026-10", 120.0, "Support, Oct.")).await.unwrap();
    assert_eq!((again.id.as_str(), again.replayed), (first.id.as_str(), true));

    let error = model_view(SendInvoice.call(invoice_args("acme", "2026-10", 150.0, "October")).await.unwrap_err());
    assert_eq!(error.code(), Some("CONFLICT"));
    assert_eq!(error.retryable(), Some(false));
    assert_eq!(error.kind(), ToolErrorKind::Other);
    let shown = error.model_output().as_json().expect("the structured error is the model's feedback");
    assert_eq!(shown["error"]["code"], "CONFLICT");
    assert!(shown["error"]["message"].as_str().unwrap().contains("amount was 120.0, now 150.0"), "{shown}");
    assert!(shown["error"]["suggestion"].as_str().unwrap().contains("ask the user"), "{shown}");
    assert!(error.model_output().render().contains("CONFLICT"), "not redacted");
    assert_eq!(error.downcast_ref::<idem::Error>().unwrap().code(), idem::ErrorCode::Conflict);

    let status = SendInvoiceStatus
        .call(SendInvoiceStatusParameters { customer: "acme".into(), period: "2026-10".into() })
        .await
        .unwrap();
    let Status::Completed(recorded) = status else { panic!("{status:?}") };
    assert_eq!(recorded.id, first.id);
    assert_eq!(invoices_sent("invoice:acme:2026-10"), 1);
}

#[tokio::test]
async fn the_status_function_is_a_rig_tool_taking_only_the_key_fields() {
    assert_eq!(SendInvoice::NAME, "send_invoice");
    assert_eq!(SendInvoiceStatus::NAME, "send_invoice_status");
    let schema = SendInvoiceStatus.parameters();
    let properties = schema["properties"].as_object().unwrap();
    assert_eq!(properties.keys().collect::<Vec<_>>(), ["customer", "period"], "{schema}");
    assert!(SendInvoiceStatus.description().contains("Read-only status of `send_invoice`"));
    assert!(!SendInvoiceStatus.description().contains('\n'), "{}", SendInvoiceStatus.description());
    assert_eq!(
        SendInvoice.description(),
        "Create and send the invoice for one customer and billing period. Safe to retry: a second call for the \
         same customer and period sends nothing.\n\nSafe to retry: a repeat for the same customer and period never \
         runs it twice; it gets the first call's result, or IN_PROGRESS while that call runs. A repeat with a \
         different amount is refused with CONFLICT: ask the user. After a TIMEOUT or IN_PROGRESS, call \
         send_invoice_status with the same customer and period instead of calling again.",
        "the doc comment as one paragraph, then idem's"
    );
    assert_eq!(SendInvoice.description(), send_invoice_description());
    let definition = rig_core::tool::tool_definition(&SendInvoice);
    assert_eq!(definition.description, SendInvoice.description(), "the definition rig gives the model");

    let missing = SendInvoiceStatus
        .call(SendInvoiceStatusParameters { customer: "globex".into(), period: "1999-01".into() })
        .await
        .unwrap();
    assert_eq!(missing, Status::NotFound);
    let json = serde_json::to_value(&missing).unwrap();
    assert_eq!(json["status"], "not_found");

    let invalid = SendInvoiceStatus
        .call(SendInvoiceStatusParameters { customer: "  ".into(), period: "2026-10".into() })
        .await
        .unwrap_err();
    assert_eq!(SendInvoiceStatus.map_error(invalid).code(), Some("INVALID_KEY"));
}

fn invoices_sent(key: &str) -> usize {
    INVOICES.lock().unwrap().iter().filter(|sent| *sent == key).count()
}

#[tokio::test]
async fn exactly_one_invoice_per_action() {
    for memo in ["first", "second", "third"] {
        SendInvoice.call(invoice_args("initech", "2026-11", 80.0, memo)).await.unwrap();
    }
    let error = SendInvoice.call(invoice_args("initech", "2026-11", 81.0, "changed")).await.unwrap_err();
    assert_eq!(error.code(), Some("CONFLICT"));
    assert_eq!(invoices_sent("invoice:initech:2026-11"), 1);
}

#[tokio::test]
async fn rig_tool_above_idempotent_works_too() {
    let first = AddNote.call(AddNoteParameters { customer: "hooli".into(), text: "prefers e-mail".into() }).await;
    assert_eq!(first.unwrap(), "noted for hooli: prefers e-mail");
    let again = AddNote.call(AddNoteParameters { customer: "Hooli".into(), text: "prefers e-mail".into() }).await;
    assert_eq!(again.unwrap(), "noted for hooli: prefers e-mail");
    let error = AddNote.call(AddNoteParameters { customer: "hooli".into(), text: "prefers post".into() }).await;
    let error = AddNote.map_error(error.unwrap_err());
    assert_eq!((error.code(), error.retryable()), (Some("CONFLICT"), Some(false)));
    assert_eq!(NOTES.load(Ordering::SeqCst), 1);
    // Below #[rig_tool], #[idempotent] cannot see it: the status function is plain Rust.
    assert!(matches!(add_note_status("hooli".into()), Ok(Status::Completed(_))));
}

thread_local! {
    /// The tenant of the request this thread serves, as an agent backend's request
    /// context would hold it: never one of the tool's arguments, which the model fills.
    static TENANT: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

fn tenant() -> String {
    TENANT.with(|tenant| tenant.borrow().clone())
}

static REFUNDS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Refund one order.
#[idempotent(key = "refund:<order>", scope = tenant(), store = *STORE)]
#[rig_tool]
fn refund(order: String) -> Result<String, ToolExecutionError> {
    REFUNDS.lock().unwrap().push(format!("{}:{order}", tenant()));
    Ok(format!("refunded {order} for {}", tenant()))
}

#[tokio::test]
async fn a_scoped_rig_tool_and_its_status_tool_keep_each_tenant_apart() {
    TENANT.with(|tenant| *tenant.borrow_mut() = "acme".into());
    assert_eq!(Refund.call(RefundParameters { order: "o-1".into() }).await.unwrap(), "refunded o-1 for acme");
    TENANT.with(|tenant| *tenant.borrow_mut() = "beta".into());
    let missing = RefundStatus.call(RefundStatusParameters { order: "o-1".into() }).await.unwrap();
    assert_eq!(missing, Status::NotFound, "beta does not see acme's refund");
    assert_eq!(Refund.call(RefundParameters { order: "o-1".into() }).await.unwrap(), "refunded o-1 for beta");
    assert_eq!(Refund.call(RefundParameters { order: "o-1".into() }).await.unwrap(), "refunded o-1 for beta");
    let refunds = REFUNDS.lock().unwrap().clone();
    assert_eq!(refunds, ["acme:o-1", "beta:o-1"], "one refund per tenant");
}
