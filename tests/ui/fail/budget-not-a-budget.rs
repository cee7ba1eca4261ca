use idem::idempotent;

static REFUNDS: u32 = 20;

#[idempotent(key = "refund:<order>", budget = REFUNDS)]
fn refund(order: String) -> Result<(), idem::Error> {
    let _ = order;
    Ok(())
}

fn main() {}
