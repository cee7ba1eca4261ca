use idem::idempotent;

#[idempotent(key = "invoice:<customer name>")]
fn send_invoice(customer: String) -> Result<String, idem::Error> {
    Ok(customer)
}

fn main() {}
