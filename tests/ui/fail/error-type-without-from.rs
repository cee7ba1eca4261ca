use idem::idempotent;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct Invoice {
    pub id: String,
}

#[derive(Debug)]
pub struct MyError;

// `MyError` has no `From<idem::Error>`, so idem's answers cannot be returned in it.
#[idempotent(key = "invoice:<customer>")]
fn send_invoice(customer: String) -> Result<Invoice, MyError> {
    Ok(Invoice { id: customer })
}

fn main() {}
