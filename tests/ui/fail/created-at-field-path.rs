use idem::idempotent;

pub struct Req {
    pub customer: String,
    pub created_at: String,
}

// A field path ending in a clock name is still a clock reading.
#[idempotent(key = "invoice:<req.customer>:<req.created_at>")]
fn send_invoice(req: Req) -> Result<String, idem::Error> {
    Ok(format!("{}:{}", req.customer, req.created_at))
}

fn main() {}
