use idem::idempotent;

#[idempotent(key = "delete:<account>", approval(when = required))]
fn delete(account: String) -> Result<(), idem::Error> {
    let _ = account;
    Ok(())
}

fn main() {}
