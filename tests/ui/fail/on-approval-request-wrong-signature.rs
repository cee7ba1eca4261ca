use idem::idempotent;

fn tell(_: &str) {}

#[idempotent(key = "payment:<invoice>", approval = required, on_approval_request = tell)]
fn pay(invoice: String) -> Result<(), idem::Error> {
    Ok(())
}

fn main() {}
