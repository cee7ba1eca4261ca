use idem::idempotent;

#[idempotent(key = "payment:<invoice>", compare = [amount], approval(always, text = "Pay <amunt> EUR"))]
fn pay(invoice: String, amount: f64) -> Result<(), idem::Error> {
    Ok(())
}

fn main() {}
