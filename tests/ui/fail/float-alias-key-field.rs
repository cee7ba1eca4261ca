use idem::idempotent;

type Amount = f64;

// The name `Amount` says nothing; the `KeyPart` trait still rejects the float.
#[idempotent(key = "charge:<customer>:<amount>")]
fn charge(customer: String, amount: Amount) -> Result<String, idem::Error> {
    Ok(format!("{customer}:{amount}"))
}

fn main() {}
