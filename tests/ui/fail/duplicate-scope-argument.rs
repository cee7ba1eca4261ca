use idem::idempotent;

#[idempotent(key = "refund:<order>", scope = tenant, scope = tenant)]
fn refund(tenant: &str, order: String) -> Result<String, idem::Error> {
    Ok(format!("{tenant} {order}"))
}

fn main() {}
