use idem::idempotent;

// The model's retry is a new tool call with a new call id.
#[idempotent(key = "invoice:<call_id>")]
fn send_invoice(call_id: String, customer: String) -> Result<String, idem::Error> {
    Ok(format!("{call_id}:{customer}"))
}

fn main() {}
