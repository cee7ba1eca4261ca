use idem::idempotent;

#[idempotent(key = "invoice:customer>:<period>")]
fn send_invoice(customer: String, period: String) -> Result<String, idem::Error> {
    Ok(format!("{customer}:{period}"))
}

fn main() {}
