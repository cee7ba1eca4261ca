//! Stable identifiers, for plain functions: key fields typed `Customer` and `Period`
//! (`tests/support/stable_identifiers.rs`) make a retry that words the action differently
//! land on the first call's key and replay it, and refuse an identifier that names nothing
//! where the model's arguments are parsed, before anything is reserved. A `String` key
//! field, for contrast, gives the reworded retry a second key and a second effect.

use std::sync::atomic::{AtomicUsize, Ordering};

use idem::store::Admin;
use idem::telemetry::Outcome;
use idem::{MemoryStore, Status, idempotent};
use serde::Deserialize;
use serde_json::{Value, json};

use super::identifiers::{Customer, Period};

/// The arguments as a model sends them. Parsing them is where an unknown identifier stops.
#[derive(Deserialize)]
struct SendInvoice {
    customer: Customer,
    period: Period,
    amount: f64,
}

#[idempotent(key = "invoice:<customer>:<period>", compare = [amount], store = store)]
fn send_invoice(
    store: &MemoryStore,
    sent: &AtomicUsize,
    customer: Customer,
    period: Period,
    amount: f64,
) -> Result<String, idem::Error> {
    sent.fetch_add(1, Ordering::SeqCst);
    let key = idem::current_key().expect("the body runs under a key");
    Ok(format!("invoice {key} for {customer}, {period}: {amount}"))
}

/// A tool call as an agent loop makes it: the model's JSON parsed into the arguments,
/// then the tool. Either step's error is what the model is told.
fn call(store: &MemoryStore, sent: &AtomicUsize, arguments: Value) -> (Result<String, String>, Option<Outcome>) {
    let parsed = serde_json::from_value::<SendInvoice>(arguments).map_err(|error| error.to_string());
    let (answer, calls) = idem::telemetry::observe(|| {
        let SendInvoice { customer, period, amount } = parsed?;
        send_invoice(store, sent, customer, period, amount).map_err(|error| error.to_string())
    });
    (answer, calls.first().map(|call| call.outcome))
}

#[test]
fn a_reworded_retry_lands_on_the_same_key_and_replays() {
    let (store, sent) = (MemoryStore::new(), AtomicUsize::new(0));
    let first = json!({"customer": "Acme Corp", "period": "October 2026", "amount": 120.0});
    let (answer, outcome) = call(&store, &sent, first);
    let invoice = answer.unwrap();
    assert_eq!(invoice, "invoice invoice:cus_7:2026-10 for cus_7, 2026-10: 120");
    assert_eq!(outcome, Some(Outcome::Fresh));

    for (customer, period) in [("acme", "2026-10"), (" ACME CORP ", "oct 2026"), ("cus_7", "Oct 2026")] {
        let retry = json!({"customer": customer, "period": period, "amount": 120.0});
        let (answer, outcome) = call(&store, &sent, retry);
        assert_eq!(answer.as_ref(), Ok(&invoice), "{customer}, {period}: the first invoice again");
        assert_eq!(outcome, Some(Outcome::Replayed), "{customer}, {period}");
    }
    assert_eq!(sent.load(Ordering::SeqCst), 1, "exactly one invoice");
    let status = send_invoice_status(&store, "ACME".parse().unwrap(), "2026-10".parse().unwrap()).unwrap();
    assert_eq!(status, Status::Completed(invoice));
    let records: u64 = store.count().unwrap().iter().map(|count| count.records).sum();
    assert_eq!(records, 1, "one record for four wordings");
}

#[test]
fn an_unknown_identifier_is_refused_before_anything_is_reserved() {
    let (store, sent) = (MemoryStore::new(), AtomicUsize::new(0));
    let refused = [
        (json!({"customer": "Globex", "period": "2026-10", "amount": 120.0}), r#"unknown customer "Globex""#),
        (
            json!({"customer": "acme", "period": "Octember 2026", "amount": 120.0}),
            r#"unknown billing period "Octember 2026": write it as 2026-10 or October 2026"#,
        ),
        (json!({"customer": "acme", "period": "2026-13", "amount": 120.0}), r#"unknown billing period "2026-13""#),
        (json!({"customer": "acme", "period": "", "amount": 120.0}), r#"unknown billing period """#),
    ];
    for (arguments, says) in refused {
        let (answer, outcome) = call(&store, &sent, arguments.clone());
        let error = answer.expect_err("an identifier that names nothing is refused");
        assert!(error.contains(says), "{arguments}: {error}");
        assert_eq!(outcome, None, "{arguments}: the tool was never called");
    }
    assert_eq!(sent.load(Ordering::SeqCst), 0, "nothing was sent");
    assert!(store.count().unwrap().is_empty(), "nothing was reserved: {:?}", store.count());
}

/// Why the types: with the period as text, "October 2026" and "2026-10" are two keys, so a
/// reworded retry sends a second invoice.
#[test]
fn a_text_key_field_gives_a_reworded_retry_a_second_key() {
    #[idempotent(key = "invoice:<customer>:<period>", store = store)]
    fn send_invoice_text(
        store: &MemoryStore,
        sent: &AtomicUsize,
        customer: String,
        period: String,
    ) -> Result<(), idem::Error> {
        sent.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    let (store, sent) = (MemoryStore::new(), AtomicUsize::new(0));
    send_invoice_text(&store, &sent, "acme".into(), "October 2026".into()).unwrap();
    send_invoice_text(&store, &sent, "acme".into(), "2026-10".into()).unwrap();
    assert_eq!(sent.load(Ordering::SeqCst), 2, "two invoices for one action");
}
