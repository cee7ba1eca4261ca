use idem::idempotent;

pub struct CustomerId(pub String);

// `CustomerId` does not implement `idem::KeyPart`.
#[idempotent(key = "invoice:<customer>:<period>")]
fn send_invoice(customer: CustomerId, period: String) -> Result<String, idem::Error> {
    Ok(format!("{}:{period}", customer.0))
}

fn main() {}
