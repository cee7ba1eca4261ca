use idem::idempotent;

#[idempotent(key = "payment:<invoice>", approval, approval_text = "Pay <invoice>")]
fn pay(invoice: String) -> Result<(), idem::Error> {
    let _ = invoice;
    Ok(())
}

fn main() {}
