use idem::{MemoryStore, Status, idempotent};
use serde::{Deserialize, Serialize};
use std::sync::LazyLock;

static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);

#[derive(Serialize, Deserialize)]
pub struct Period {
    pub month: String,
}

#[derive(Serialize, Deserialize)]
pub struct Req {
    pub customer: String,
    pub period: Period,
    pub amount: f64,
}

#[idempotent(key = "invoice:<req.customer>:<req.period.month>", compare = [req.amount], store = *STORE)]
fn send_invoice(req: Req) -> Result<String, idem::Error> {
    Ok(format!("{} {} {}", req.customer, req.period.month, req.amount))
}

pub fn main() {
    let req = || Req { customer: "acme".into(), period: Period { month: "2026-10".into() }, amount: 1.5 };
    send_invoice(req()).unwrap();
    let status: Result<Status<String>, idem::Error> = send_invoice_status(req());
    assert!(matches!(status, Ok(Status::Completed { .. })), "{status:?}");
}
