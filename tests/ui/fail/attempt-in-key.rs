use idem::idempotent;

// The attempt number changes on every retry.
#[idempotent(key = "invoice:<customer>/<attempt>")]
fn send_invoice(customer: String, attempt: u32) -> Result<String, idem::Error> {
    Ok(format!("{customer}:{attempt}"))
}

fn main() {}
