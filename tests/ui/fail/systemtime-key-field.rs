use idem::idempotent;
use std::time::SystemTime;

// A `SystemTime` is a clock reading, whatever the parameter is called.
#[idempotent(key = "reminder:<customer>:<when>")]
fn send_reminder(customer: String, when: SystemTime) -> Result<String, idem::Error> {
    Ok(format!("{customer}:{when:?}"))
}

fn main() {}
