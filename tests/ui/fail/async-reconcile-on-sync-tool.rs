use idem::{Abandoned, Reconciled, idempotent};

async fn ask_provider(_: Abandoned) -> Reconciled<u32> {
    Reconciled::Unknown
}

// A sync tool's hook answers at once: this one returns a future.
#[idempotent(key = "charge:<order>", reconcile = ask_provider)]
fn charge(order: u32) -> Result<u32, idem::Error> {
    Ok(order)
}

fn main() {}
