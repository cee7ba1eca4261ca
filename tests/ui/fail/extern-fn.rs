use idem::idempotent;

#[idempotent(key = "invoice:<customer>")]
extern "C" fn send_invoice(customer: u64) -> u64 {
    customer
}

fn main() {}
