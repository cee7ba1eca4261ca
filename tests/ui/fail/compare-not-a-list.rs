use idem::idempotent;

#[idempotent(key = "charge:<customer>", compare = amount)]
fn charge(customer: String, amount: u64) -> Result<String, idem::Error> {
    Ok(format!("{customer}:{amount}"))
}

fn main() {}
