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

// One mistake in #[idempotent] (a placeholder the tool has no field for): #[idempotent]
// reports it, and #[idem::status_tools] adds no second error about where the attribute goes.
#[idem::status_tools]
#[tool_router]
impl Billing {
    /// Send the invoice.
    #[idempotent(key = "invoice:<req.customer>:<month>")]
    #[tool]
    async fn send_invoice(&self, Parameters(req): Parameters<SendInvoice>) -> Result<CallToolResult, ErrorData> {
        let _ = (req.customer, req.period);
        Ok(CallToolResult::success(vec![]))
    }
}

fn main() {}
