use idem::idempotent;

pub struct Req {
    pub customer: String,
    pub amount: f64,
}

// A float inside the request is still a float: the `KeyPart` trait rejects it.
#[idempotent(key = "charge:<req.customer>:<req.amount>")]
fn charge(req: Req) -> Result<String, idem::Error> {
    Ok(format!("{}:{}", req.customer, req.amount))
}

fn main() {}
