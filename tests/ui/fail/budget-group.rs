use idem::budget::Budget;
use idem::{idempotent};

static REFUNDS: Budget = Budget::count("refunds", 20).per_day();

#[idempotent(key = "refund:<order>", budget(REFUNDS, over = approval))]
fn refund(order: String) -> Result<(), idem::Error> {
    let _ = order;
    Ok(())
}

fn main() {}
