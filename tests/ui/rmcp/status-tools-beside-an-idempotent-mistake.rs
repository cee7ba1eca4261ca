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

// One of two tools has a mistake in #[idempotent] (a placeholder the tool has no field
// for): #[idempotent] reports it, the other tool keeps its status tool, and nothing else
// refers to what the broken one would have generated.
#[idem::status_tools]
#[tool_router]
impl Billing {
    /// Send the invoice.
    #[idempotent(key = "invoice:<req.customer>:<req.period>")]
    #[tool]
    async fn send_invoice(&self, Parameters(req): Parameters<SendInvoice>) -> Result<CallToolResult, ErrorData> {
        let _ = (req.customer, req.period);
        Ok(CallToolResult::success(vec![]))
    }

    /// Send a reminder.
    #[idempotent(key = "reminder:<req.customer>:<month>")]
    #[tool]
    async fn send_reminder(&self, Parameters(req): Parameters<SendInvoice>) -> Result<CallToolResult, ErrorData> {
        let _ = (req.customer, req.period);
        Ok(CallToolResult::success(vec![]))
    }
}

fn main() {}
