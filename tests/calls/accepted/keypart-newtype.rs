use idem::{KeyPart, MemoryStore, Status, idempotent};
use std::sync::LazyLock;

static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);

/// An identifier type with a stable text form can be a key field.
pub struct CustomerId(pub u64);

impl KeyPart for CustomerId {
    fn write_key_text(&self, out: &mut String) {
        out.push_str("cus_");
        out.push_str(&self.0.to_string());
    }
}

#[idempotent(key = "invoice:<customer>:<period>", store = *STORE)]
fn send_invoice(customer: CustomerId, period: String) -> Result<String, idem::Error> {
    let key = idem::current_key().expect("inside an idempotent tool");
    Ok(key.as_str().to_owned())
}

pub fn main() {
    assert_eq!(send_invoice(CustomerId(7), "2026-10".into()).unwrap(), "invoice:cus_7:2026-10");
    let status: Result<Status<String>, idem::Error> = send_invoice_status(CustomerId(7), "2026-10".into());
    assert!(matches!(status, Ok(Status::Completed { .. })), "{status:?}");
}
