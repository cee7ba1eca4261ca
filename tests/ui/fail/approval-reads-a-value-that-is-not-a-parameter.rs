use idem::idempotent;

/// Pay an invoice.
#[idempotent(key = "payment:<invoice>", compare = [amount], approval(when = total > 1000.0))]
fn pay(invoice: String, amount: f64) -> Result<(), idem::Error> {
    let total = amount * 1.2;
    let _ = total;
    Ok(())
}

fn main() {}
