use idem::idempotent;

// `on_error` takes `release` or `keep`.
#[idempotent(key = "invoice:<customer>", on_error = retry)]
fn send_invoice(customer: String) -> Result<String, idem::Error> {
    Ok(customer)
}

fn main() {}
