use idem::idempotent;

// A clock reading: a retry a moment later gets another key.
#[idempotent(key = "invoice:<customer>:<now>")]
fn send_invoice(customer: String, now: u64) -> Result<String, idem::Error> {
    Ok(format!("{customer}:{now}"))
}

fn main() {}
