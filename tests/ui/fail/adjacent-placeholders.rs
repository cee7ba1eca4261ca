use idem::idempotent;

// ("ab", "c") and ("a", "bc") would give the same key.
#[idempotent(key = "invoice:<customer><period>")]
fn send_invoice(customer: String, period: String) -> Result<String, idem::Error> {
    Ok(format!("{customer}:{period}"))
}

fn main() {}
