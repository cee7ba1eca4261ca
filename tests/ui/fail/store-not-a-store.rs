use idem::idempotent;

static STORE: &str = "memory";

#[idempotent(key = "invoice:<customer>", store = STORE)]
fn send_invoice(customer: String) -> Result<String, idem::Error> {
    Ok(customer)
}

fn main() {}
