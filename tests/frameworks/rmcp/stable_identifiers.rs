//! Stable identifiers through rmcp's client: a request type whose key fields are `Customer`
//! and `Period` (`tests/support/stable_identifiers.rs`). A retry that words the action
//! differently replays the first call; an identifier that names nothing is a tool error
//! the model reads, from rmcp's parsing of `Parameters`, before idem reserves anything.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use idem::store::Admin;
use idem::{MemoryStore, idempotent};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::{RoleClient, RunningService};
use rmcp::{ErrorData, ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};

use super::identifiers::{Customer, Period};
use super::{call, structured};
use crate::support::mcp::served;

#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct SendInvoice {
    /// The customer's name or id, e.g. "Acme Corp".
    #[schemars(with = "String")]
    customer: Customer,
    /// The billing period, e.g. "2026-10" or "October 2026".
    #[schemars(with = "String")]
    period: Period,
    amount: f64,
}

#[derive(Clone, Default)]
struct Invoicing {
    store: Arc<MemoryStore>,
    sent: Arc<AtomicUsize>,
}

#[idem::status_tools]
#[tool_router]
impl Invoicing {
    /// Send the invoice for one customer and billing period.
    #[idempotent(key = "invoice:<req.customer>:<req.period>", compare = [req.amount], store = self.store)]
    #[tool]
    async fn send_invoice(&self, Parameters(req): Parameters<SendInvoice>) -> Result<CallToolResult, ErrorData> {
        let n = self.sent.fetch_add(1, Ordering::SeqCst) + 1;
        let key = idem::current_key().expect("the body runs under a key");
        Ok(CallToolResult::structured(json!({
            "invoice": format!("inv_{n}"),
            "customer": req.customer.to_string(),
            "period": req.period.to_string(),
            "idempotency_key": key.as_str(),
        })))
    }
}

#[tool_handler]
impl ServerHandler for Invoicing {}

async fn connect(invoicing: Invoicing) -> RunningService<RoleClient, ()> {
    let client_io = served(invoicing);
    ().serve(client_io).await.expect("the client connects")
}

fn text(result: &CallToolResult) -> &str {
    &result.content[0].as_text().expect("a text content").text
}

fn records(store: &MemoryStore) -> u64 {
    store.count().unwrap().iter().map(|count| count.records).sum()
}

#[tokio::test]
async fn a_reworded_retry_lands_on_the_same_key_and_replays() {
    let invoicing = Invoicing::default();
    let client = connect(invoicing.clone()).await;
    let first =
        call(&client, "send_invoice", json!({"customer": "Acme Corp", "period": "October 2026", "amount": 120.0}))
            .await;
    assert_eq!(first.is_error, Some(false), "{first:?}");
    assert_eq!(structured(&first)["idempotency_key"], "invoice:cus_7:2026-10");

    for (customer, period) in [("acme", "2026-10"), (" ACME CORP ", "oct 2026"), ("cus_7", "Oct 2026")] {
        let retry = json!({"customer": customer, "period": period, "amount": 120.0});
        let again = call(&client, "send_invoice", retry).await;
        assert_eq!(again.is_error, Some(false), "{customer}, {period}: {again:?}");
        assert_eq!(structured(&again)["invoice"], "inv_1", "{customer}, {period}: the first invoice");
        assert_eq!(structured(&again)["replayed"], true, "{customer}, {period}");
    }
    // The status tool reads the key fields through the same types.
    let status = call(&client, "send_invoice_status", json!({"customer": "ACME", "period": "oct 2026"})).await;
    assert_eq!(structured(&status)["status"], "completed", "{status:?}");
    assert_eq!(structured(&status)["result"]["invoice"], "inv_1");

    assert_eq!(invoicing.sent.load(Ordering::SeqCst), 1, "exactly one invoice");
    assert_eq!(records(&invoicing.store), 1, "one record for four wordings");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn an_unknown_identifier_is_a_tool_error_and_nothing_is_reserved() {
    let invoicing = Invoicing::default();
    let client = connect(invoicing.clone()).await;
    let refused: [(Value, &str); 3] = [
        (json!({"customer": "Globex", "period": "2026-10", "amount": 120.0}), r#"unknown customer "Globex""#),
        (
            json!({"customer": "acme", "period": "Octember 2026", "amount": 120.0}),
            r#"unknown billing period "Octember 2026": write it as 2026-10 or October 2026"#,
        ),
        (json!({"customer": "acme", "period": "2026-13", "amount": 120.0}), r#"unknown billing period "2026-13""#),
    ];
    for (arguments, says) in refused {
        // A tool result the model reads and can correct, not a protocol error.
        let answer = call(&client, "send_invoice", arguments.clone()).await;
        assert_eq!(answer.is_error, Some(true), "{arguments}: {answer:?}");
        assert!(text(&answer).contains(says), "{arguments}: {}", text(&answer));
    }
    let status = call(&client, "send_invoice_status", json!({"customer": "acme", "period": "Octember 2026"})).await;
    let error = &structured(&status)["error"];
    assert_eq!(error["code"], "INVALID_KEY", "{status:?}");
    assert!(
        error["message"].as_str().unwrap().contains(r#"period is not valid (unknown billing period "Octember 2026""#),
        "{error}"
    );

    assert_eq!(invoicing.sent.load(Ordering::SeqCst), 0, "nothing was sent");
    assert_eq!(records(&invoicing.store), 0, "nothing was reserved");
    client.cancel().await.unwrap();
}
