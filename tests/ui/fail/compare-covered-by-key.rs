use idem::idempotent;

pub struct Req {
    pub customer: String,
    pub amount: u64,
}

// `<req>` is the whole request, so `req.amount` is already part of the key.
#[idempotent(key = "charge:<req>", compare = [req.amount])]
fn charge(req: Req) -> Result<String, idem::Error> {
    Ok(format!("{}:{}", req.customer, req.amount))
}

fn main() {}
