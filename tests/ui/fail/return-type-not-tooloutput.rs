use idem::idempotent;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct Invoice {
    pub id: String,
}

// A plain `Invoice` cannot carry a replay or an IN_PROGRESS error.
#[idempotent(key = "invoice:<customer>")]
fn send_invoice(customer: String) -> Invoice {
    Invoice { id: customer }
}

fn main() {}
