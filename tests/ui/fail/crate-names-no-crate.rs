use idem::idempotent;

// This crate depends on idem as `idem`: no crate is called `my_idem`.
#[idempotent(crate = "my_idem", key = "invoice:<customer>")]
fn send_invoice(customer: String) -> Result<String, idem::Error> {
    Ok(customer)
}

fn main() {}
