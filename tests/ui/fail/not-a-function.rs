use idem::idempotent;

#[idempotent(key = "invoice:<customer>")]
struct SendInvoice {
    customer: String,
}

fn main() {}
