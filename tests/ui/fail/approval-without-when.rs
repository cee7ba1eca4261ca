use idem::idempotent;

/// Delete an account.
#[idempotent(key = "delete:<account>", approval(text = "Delete <account>"))]
fn delete(account: String) -> Result<(), idem::Error> {
    let _ = account;
    Ok(())
}

fn main() {}
