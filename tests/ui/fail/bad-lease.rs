use idem::idempotent;

#[idempotent(key = "invoice:<customer>", lease = "5 minutes")]
fn send_invoice(customer: String) -> Result<String, idem::Error> {
    Ok(customer)
}

fn main() {}
