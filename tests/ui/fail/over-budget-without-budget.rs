use idem::idempotent;

#[idempotent(key = "refund:<order>", approval(always, over_budget))]
fn refund(order: String) -> Result<(), idem::Error> {
    let _ = order;
    Ok(())
}

fn main() {}
