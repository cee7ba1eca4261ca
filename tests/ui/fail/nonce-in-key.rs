use idem::idempotent;

// A nonce is random per call: every retry gets another key.
#[idempotent(key = "transfer:<account>:<nonce>")]
fn transfer(account: String, nonce: u64) -> Result<String, idem::Error> {
    Ok(format!("{account}:{nonce}"))
}

fn main() {}
