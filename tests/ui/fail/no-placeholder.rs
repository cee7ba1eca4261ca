use idem::idempotent;

// Without a placeholder every call shares one key.
#[idempotent(key = "invoice")]
fn send_invoice(customer: String, period: String) -> Result<String, idem::Error> {
    Ok(format!("{customer}:{period}"))
}

fn main() {}
