use idem::idempotent;

// Renewal stops at max_hold, so it must be at least one lease (30 s by default).
#[idempotent(key = "export:<report>", max_hold = "10s")]
fn export(report: String) -> Result<String, idem::Error> {
    Ok(report)
}

#[idempotent(key = "render:<report>", lease = "2m", max_hold = "1m")]
fn render(report: String) -> Result<String, idem::Error> {
    Ok(report)
}

fn main() {}
