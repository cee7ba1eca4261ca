//! A model's retries meet one approval. `pay_invoice` needs a person's approval above
//! 1,000 EUR: the model calls it, is told APPROVAL_REQUIRED, and retries (as models do,
//! after a timeout or when the user nudges it) five more times. One request is made and
//! one notification sent, however often it retries; a person approves in the approver's
//! console (here: `idem::approval::blocking::approve`; an operator would run `idem approve
//! billing::pay_invoice payment:acme:inv-7 --by alice`); the next call pays once, and a
//! repeat replays. A second payment is declined, and stays declined.
//!
//! ```sh
//! cargo run -p idem-examples --bin approvals
//! ```

use std::sync::Mutex;

use idem::approval;
use idem::store::RecordId;
use idem::{MemoryStore, Status, idempotent};

/// What the bank did: one line per transfer.
static TRANSFERS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// The approvers' channel: one message per request.
fn notify_approvers(request: &approval::Request) {
    println!("  [approvers' channel] please approve: {} (billing::pay_invoice {})", request.text, request.key);
}

struct Billing {
    store: MemoryStore,
}

impl Billing {
    /// Pay a supplier's invoice. Needs a person's approval above 1,000 EUR.
    #[idempotent(
        key = "payment:<supplier>:<invoice>",
        compare = [amount, iban],
        approval(
            when = amount > 1000.0,
            text = "pay <supplier> <amount> EUR for <invoice> to <iban>",
            notify = notify_approvers
        ),
        namespace = "billing::pay_invoice",
        store = self.store
    )]
    fn pay_invoice(&self, supplier: String, invoice: String, amount: f64, iban: String) -> Result<String, idem::Error> {
        let mut transfers = TRANSFERS.lock().expect("the bank is not poisoned");
        transfers.push(format!("{amount:.2} EUR to {supplier} ({iban}) for {invoice}"));
        Ok(format!("transfer-{}", transfers.len()))
    }
}

/// What the model reads of an answer.
fn shown(answer: Result<String, idem::Error>) -> String {
    match answer {
        Ok(transfer) => format!("ok: {transfer}"),
        Err(error) => format!("{}: {}", error.code(), error.suggestion().unwrap_or(error.message())),
    }
}

fn main() {
    let billing = Billing { store: MemoryStore::new() };
    let pay = |supplier: &str, amount: f64| {
        billing.pay_invoice(supplier.into(), "inv-7".into(), amount, "DE02 1203 0000".into())
    };

    println!("the model pays acme 1,200 EUR, and retries five times:");
    println!("  attempt 1: {}", shown(pay("acme", 1200.0)));
    for attempt in 2..=6 {
        let again = pay("acme", 1200.0).map_err(|error| error.code());
        println!("  attempt {attempt}: {again:?}");
    }
    println!("  it asks for another amount instead: {}", shown(pay("acme", 1500.0)));
    if let Ok(Status::AwaitingApproval { text, .. }) = billing.pay_invoice_status("acme".into(), "inv-7".into()) {
        println!("  pay_invoice_status: awaiting approval: {text}");
    }

    let id = RecordId { namespace: "billing::pay_invoice", key: "payment:acme:inv-7" };
    let approved = approval::blocking::approve(&billing.store, id, "alice", Some("matches the PO")).unwrap();
    println!("alice approves \"{}\"", approved.text);
    println!("  the model calls again: {}", shown(pay("acme", 1200.0)));
    println!("  and once more: {}", shown(pay("acme", 1200.0)));

    println!("the model pays globex 5,000 EUR:");
    println!("  {}", shown(pay("globex", 5000.0)));
    let globex = RecordId { namespace: "billing::pay_invoice", key: "payment:globex:inv-7" };
    approval::blocking::decline(&billing.store, globex, "bob", Some("globex was paid by card")).unwrap();
    println!("bob declines");
    println!("  the model calls again: {}", shown(pay("globex", 5000.0)));

    println!("a payment under the threshold needs nobody: {}", shown(pay("initech", 80.0)));
    let transfers = TRANSFERS.lock().expect("the bank is not poisoned");
    println!("transfers: {}", transfers.len());
    for transfer in transfers.iter() {
        println!("  {transfer}");
    }
}
