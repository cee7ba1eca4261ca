use idem::idempotent;

/// Pay an invoice.
#[idempotent(key = "payment:<invoice>", compare = [amount], approval(when = amount))]
fn pay(invoice: String, amount: f64) -> Result<(), idem::Error> {
    Ok(())
}

fn main() {}
