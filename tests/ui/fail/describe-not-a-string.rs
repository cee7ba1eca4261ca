use idem::idempotent;

#[idempotent(key = "invoice:<customer>", describe = false)]
fn send_invoice(customer: String) -> Result<(), idem::Error> {
    Ok(())
}

fn main() {}
