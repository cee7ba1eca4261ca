use idem::idempotent;

#[idempotent(key = "payment:<invoice>", approval, approval_ttl = "2h")]
fn pay(invoice: String) -> Result<(), idem::Error> {
    let _ = invoice;
    Ok(())
}

fn main() {}
