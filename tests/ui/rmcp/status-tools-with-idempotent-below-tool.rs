use idem::idempotent;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{ErrorData, schemars, tool, tool_router};

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct SendInvoice {
    customer: String,
    period: String,
}

struct Billing;

// #[idempotent] below #[tool]: #[idempotent] says to move it, and #[idem::status_tools]
// adds no second error.
#[idem::status_tools]
#[tool_router]
impl Billing {
    /// Send the invoice.
    #[tool]
    #[idempotent(key = "invoice:<req.customer>:<req.period>")]
    async fn send_invoice(&self, Parameters(req): Parameters<SendInvoice>) -> Result<CallToolResult, ErrorData> {
        let _ = (req.customer, req.period);
        Ok(CallToolResult::success(vec![]))
    }
}

fn main() {}
