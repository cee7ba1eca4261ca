use idem::idempotent;

#[idempotent(key = "payment:<invoice>", compare = [amount], approval = amount > 1000.0)]
fn pay(invoice: String, amount: f64) -> Result<(), idem::Error> {
    let _ = (invoice, amount);
    Ok(())
}

fn main() {}
