use idem::idempotent;

// `<cust>` names no parameter: the parameter is `customer`.
#[idempotent(key = "invoice:<cust>:<period>")]
fn send_invoice(customer: String, period: String) -> Result<String, idem::Error> {
    Ok(format!("{customer}:{period}"))
}

fn main() {}
