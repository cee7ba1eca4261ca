use idem::idempotent;

#[idempotent(key = "payment:<invoice>", approval_text = "Pay <invoice>")]
fn pay(invoice: String) -> Result<(), idem::Error> {
    Ok(())
}

fn main() {}
