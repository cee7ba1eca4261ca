use idem::idempotent;

// A `random_` name is a per-call value.
#[idempotent(key = "upload:<random_suffix>")]
fn upload(random_suffix: String, file: String) -> Result<String, idem::Error> {
    Ok(format!("{random_suffix}:{file}"))
}

fn main() {}
