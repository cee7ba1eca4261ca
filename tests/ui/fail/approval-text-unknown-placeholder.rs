use idem::idempotent;

#[idempotent(key = "payment:<invoice>", compare = [amount], approval = required, approval_text = "Pay <amunt> EUR")]
fn pay(invoice: String, amount: f64) -> Result<(), idem::Error> {
    Ok(())
}

fn main() {}
