use idem::idempotent;

#[idempotent(key = "charge:<customer>", json_names = "customer=cust")]
fn charge(customer: String, amount: u64) -> Result<String, idem::Error> {
    Ok(format!("{customer}:{amount}"))
}

fn main() {}
