use idem::budget::Budget;
use idem::{idempotent};

static REFUNDED: Budget = Budget::sum_of("refunded", "amount", 5_000.0).per_day();

#[idempotent(key = "refund:<order>", budget = REFUNDED)]
fn refund(order: String, amount: f64) -> Result<f64, idem::Error> {
    let _ = order;
    Ok(amount)
}

fn main() {}
