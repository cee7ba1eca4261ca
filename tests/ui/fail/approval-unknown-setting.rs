use idem::idempotent;

fn tell(_: &idem::approval::Request) {}

#[idempotent(key = "payment:<invoice>", compare = [amount], approval(when = amount > 1000.0, on_request = tell))]
fn pay(invoice: String, amount: f64) -> Result<(), idem::Error> {
    let _ = (invoice, amount);
    Ok(())
}

fn main() {}
