use idem::idempotent;

pub struct Req {
    pub customer: String,
    pub tool_call_id: String,
}

// The tool call id is the attempt's, even inside the request.
#[idempotent(key = "invoice:<req.customer>:<req.tool_call_id>")]
fn send_invoice(req: Req) -> Result<String, idem::Error> {
    Ok(format!("{}:{}", req.customer, req.tool_call_id))
}

fn main() {}
