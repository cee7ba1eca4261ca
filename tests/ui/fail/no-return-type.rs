use idem::idempotent;

// A tool without a return type has nowhere to put a replay or an IN_PROGRESS error.
#[idempotent(key = "invoice:<customer>")]
fn send_invoice(customer: String) {
    let _ = customer;
}

fn main() {}
