use idem::idempotent;

struct Tenant {
    id: u64,
}

#[idempotent(key = "refund:<order>", scope = tenant)]
fn refund(tenant: &Tenant, order: String) -> Result<String, idem::Error> {
    Ok(format!("{} {order}", tenant.id))
}

fn main() {}
