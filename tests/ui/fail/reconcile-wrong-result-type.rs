use idem::{Abandoned, Reconciled, idempotent};

// The hook reports the tool's own result type: this tool returns u32, not String.
#[idempotent(key = "charge:<order>", reconcile = |_: Abandoned| Reconciled::Done(String::new()))]
fn charge(order: u32) -> Result<u32, idem::Error> {
    Ok(order)
}

fn main() {}
