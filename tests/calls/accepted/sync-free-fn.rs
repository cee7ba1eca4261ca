use idem::{MemoryStore, Status, idempotent};
use serde::{Deserialize, Serialize};
use std::sync::LazyLock;

static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);

#[derive(Debug, Serialize, Deserialize)]
pub struct Invoice {
    pub id: String,
    #[serde(default)]
    pub replayed: bool,
}

#[derive(Debug)]
pub enum ToolError {
    Idem(idem::Error),
}

impl From<idem::Error> for ToolError {
    fn from(error: idem::Error) -> Self {
        ToolError::Idem(error)
    }
}

/// A float is fine as a compared field; `memo` is neither key nor compared.
#[idempotent(key = "invoice:<customer>:<period>", compare = [amount], store = *STORE)]
pub fn send_invoice(customer: String, period: String, amount: f64, memo: String) -> Result<Invoice, ToolError> {
    let _ = (amount, memo);
    Ok(Invoice { id: format!("inv_{customer}_{period}"), replayed: false })
}

pub fn main() {
    let first = send_invoice("acme".into(), "2026-10".into(), 120.0, "x".into()).unwrap();
    assert!(!first.replayed);
    let again = send_invoice(" ACME ".into(), "2026-10".into(), 120.0, "y".into()).unwrap();
    assert!(again.replayed);
    // The status function takes the key fields only.
    let status: Result<Status<Invoice>, idem::Error> = send_invoice_status("acme".into(), "2026-10".into());
    assert!(matches!(status, Ok(Status::Completed { .. })), "{status:?}");
}
