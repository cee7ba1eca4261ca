use idem::idempotent;

#[idempotent(key = "charge:<customer>", compare = [amount], compare = [memo])]
fn charge(customer: String, amount: u64, memo: String) -> Result<String, idem::Error> {
    Ok(format!("{customer}:{amount}:{memo}"))
}

fn main() {}
