use idem::idempotent;

fn tell(_: &str) {}

#[idempotent(key = "payment:<invoice>", approval(always, notify = tell))]
fn pay(invoice: String) -> Result<(), idem::Error> {
    Ok(())
}

fn main() {}
