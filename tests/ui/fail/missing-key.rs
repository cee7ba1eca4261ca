use idem::idempotent;

#[idempotent(compare = [amount])]
fn charge(customer: String, amount: u64) -> Result<String, idem::Error> {
    Ok(format!("{customer}:{amount}"))
}

fn main() {}
