use idem::idempotent;
use std::time::Instant;

// An `Instant` is a clock reading, whatever the parameter is called.
#[idempotent(key = "job:<name>:<started>")]
fn start_job(name: String, started: Instant) -> Result<String, idem::Error> {
    Ok(format!("{name}:{started:?}"))
}

fn main() {}
