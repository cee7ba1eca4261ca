use idem::idempotent;

pub struct Invoice {
    pub id: String,
}

// The result is stored and replayed, so it must serialize and deserialize.
#[idempotent(key = "invoice:<customer>")]
fn send_invoice(customer: String) -> Result<Invoice, idem::Error> {
    Ok(Invoice { id: customer })
}

fn main() {}
