use idem::idempotent;

// A parameter named `timestamp` is a clock reading, whatever its type.
#[idempotent(key = "order:<customer>:<timestamp>")]
fn place_order(customer: String, timestamp: i64) -> Result<String, idem::Error> {
    Ok(format!("{customer}:{timestamp}"))
}

fn main() {}
