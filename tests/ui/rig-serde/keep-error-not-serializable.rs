use idem::idempotent;

#[derive(Debug)]
pub struct Declined;

impl From<idem::Error> for Declined {
    fn from(_: idem::Error) -> Self {
        Declined
    }
}

// A kept error is stored and replayed, so it must serialize and deserialize.
#[idempotent(key = "charge:<order>", on_error = keep)]
fn charge(order: u32) -> Result<u32, Declined> {
    Ok(order)
}

fn main() {}
