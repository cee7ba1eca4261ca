use idem::idempotent;

pub struct Parameters<T>(pub T);

pub struct Req {
    pub customer: String,
    pub period: String,
}

// The pattern binds `customer` only; `period` stays inside `..`.
#[idempotent(key = "invoice:<customer>:<period>")]
fn send_invoice(Parameters(Req { customer, .. }): Parameters<Req>) -> Result<String, idem::Error> {
    Ok(customer)
}

fn main() {}
