use idem::idempotent;

fn notify_approvers(_: &idem::approval::Request) {}

#[idempotent(key = "payment:<invoice>", approval, on_approval_request = notify_approvers)]
fn pay(invoice: String) -> Result<(), idem::Error> {
    let _ = invoice;
    Ok(())
}

fn main() {}
