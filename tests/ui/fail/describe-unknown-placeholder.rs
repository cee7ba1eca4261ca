use idem::idempotent;

/// Send the invoice.
#[idempotent(key = "invoice:<customer>:<period>", describe = "Safe to retry for the same <custmer> and <period>.")]
fn send_invoice(customer: String, period: String, amount: f64) -> Result<(), idem::Error> {
    let _ = amount;
    Ok(())
}

fn main() {}
