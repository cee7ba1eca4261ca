use idem::idempotent;

#[idempotent(key = "welcome:<email:hash:hash>")]
fn send_welcome(email: String) -> Result<String, idem::Error> {
    Ok(email)
}

fn main() {}
