use idem::idempotent;

struct Billing;

impl Billing {
    // The body runs on after TIMEOUT, so it cannot borrow `self` from the caller.
    #[idempotent(key = "invoice:<customer>", timeout = "2s")]
    async fn send_invoice(&self, customer: String) -> Result<String, idem::Error> {
        Ok(customer)
    }
}

fn main() {}
