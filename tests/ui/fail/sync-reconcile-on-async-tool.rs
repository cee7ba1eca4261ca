use idem::{Abandoned, Reconciled, idempotent};

fn ask_provider(_: Abandoned) -> Reconciled<u32> {
    Reconciled::Unknown
}

// An async tool's hook returns a future of `Reconciled`: this one answers at once.
#[idempotent(key = "charge:<order>", reconcile = ask_provider)]
async fn charge(order: u32) -> Result<u32, idem::Error> {
    Ok(order)
}

fn main() {}
