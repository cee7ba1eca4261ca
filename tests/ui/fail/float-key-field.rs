use idem::idempotent;

// A float cannot be a key field: 0.1 + 0.2 != 0.3.
#[idempotent(key = "charge:<customer>:<amount>")]
fn charge(customer: String, amount: f64) -> Result<String, idem::Error> {
    Ok(format!("{customer}:{amount}"))
}

fn main() {}
