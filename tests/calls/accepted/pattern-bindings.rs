use idem::{MemoryStore, Status, idempotent};
use std::sync::LazyLock;

static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);

/// The shape of rmcp's `Parameters<T>` extractor.
pub struct Wrapper<T>(pub T);

pub struct Req {
    pub customer: String,
    pub period: String,
    pub amount: u64,
}

#[idempotent(key = "invoice:<customer>:<period>", compare = [amount], store = *STORE)]
fn send_invoice(Wrapper(Req { customer, period, amount }): Wrapper<Req>) -> Result<String, idem::Error> {
    Ok(format!("{customer} {period} {amount}"))
}

#[idempotent(key = "note:<customer>", store = *STORE)]
fn add_note(Wrapper(Req { customer, .. }): Wrapper<Req>, note: String) -> Result<String, idem::Error> {
    Ok(format!("{customer}: {note}"))
}

fn req() -> Wrapper<Req> {
    Wrapper(Req { customer: "acme".into(), period: "2026-10".into(), amount: 7 })
}

pub fn main() {
    send_invoice(req()).unwrap();
    let status: Result<Status<String>, idem::Error> = send_invoice_status(req());
    assert!(matches!(status, Ok(Status::Completed { .. })), "{status:?}");
    add_note(req(), "hello".into()).unwrap();
    // `note` is not a key field, so the status function does not take it.
    let status: Result<Status<String>, idem::Error> = add_note_status(req());
    assert!(matches!(status, Ok(Status::Completed { .. })), "{status:?}");
}
