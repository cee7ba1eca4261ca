use idem::idempotent;

#[idempotent(key = "refund:<order>", approval = required, over_budget = approval)]
fn refund(order: String) -> Result<(), idem::Error> {
    let _ = order;
    Ok(())
}

fn main() {}
