use idem::{Status, idempotent};

// No `store = ...`: the default SQLite store. Not called here (it would create a file);
// type-checking is the test.
#[idempotent(key = "invoice:<customer>:<period>")]
pub fn send_invoice(customer: String, period: String, mut memo: String) -> Result<String, idem::Error> {
    memo.push('!');
    Ok(format!("{customer} {period} {memo}"))
}

#[idempotent(key = "invoice:<customer>")]
pub async fn send_invoice_async(customer: String) -> Result<(), idem::Error> {
    let _ = customer;
    Ok(())
}

#[allow(dead_code)]
async fn statuses() {
    let _: Result<Status<String>, idem::Error> = send_invoice_status("acme".into(), "2026-10".into());
    let _: Result<Status<()>, idem::Error> = send_invoice_async_status("acme".into()).await;
}

pub fn main() {}
