use idem::idempotent;

// A sync body cannot be left running once its caller has an answer.
#[idempotent(key = "invoice:<customer>", timeout = "2s")]
fn send_invoice(customer: String) -> Result<String, idem::Error> {
    Ok(customer)
}

fn main() {}
