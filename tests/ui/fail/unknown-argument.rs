use idem::idempotent;

#[idempotent(key = "invoice:<customer>", ttl = "5m")]
fn send_invoice(customer: String) -> Result<String, idem::Error> {
    Ok(customer)
}

fn main() {}
