use idem::idempotent;

// A key field never differs between calls with the same key.
#[idempotent(key = "invoice:<customer>:<period>", compare = [amount, period])]
fn send_invoice(customer: String, period: String, amount: u64) -> Result<String, idem::Error> {
    Ok(format!("{customer}:{period}:{amount}"))
}

fn main() {}
