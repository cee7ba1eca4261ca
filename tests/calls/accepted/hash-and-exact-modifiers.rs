use idem::{MemoryStore, Status, idempotent};
use std::sync::LazyLock;

static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);

#[idempotent(key = "welcome:<email:hash>/<sku:exact>", store = *STORE)]
fn send_welcome(email: String, sku: String) -> Result<String, idem::Error> {
    let key = idem::current_key().expect("inside an idempotent tool");
    assert!(!key.as_str().contains("ann"), "{key}");
    Ok(format!("{email} {sku}"))
}

pub fn main() {
    send_welcome("Ann@Example.com".into(), "SKU-1".into()).unwrap();
    let status: Result<Status<String>, idem::Error> = send_welcome_status("ann@example.com".into(), "SKU-1".into());
    assert!(matches!(status, Ok(Status::Completed { .. })), "{status:?}");
    // `:exact` keeps case: another key, nothing stored yet.
    let status: Result<Status<String>, idem::Error> = send_welcome_status("ann@example.com".into(), "sku-1".into());
    assert!(matches!(status, Ok(Status::NotFound)), "{status:?}");
}
