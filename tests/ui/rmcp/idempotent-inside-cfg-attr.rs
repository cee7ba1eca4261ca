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

// rmcp's #[tool_router] serves every #[tool] whatever its cfg, so the status tool of a
// conditional #[idempotent] cannot follow the condition: refused, not silently left out
// while the other tool's status tool is served.
#[idem::status_tools]
#[tool_router]
impl Billing {
    /// Send the invoice.
    #[cfg_attr(not(test), idempotent(key = "invoice:<req.customer>:<req.period>"))]
    #[tool]
    async fn send_invoice(&self, Parameters(req): Parameters<SendInvoice>) -> Result<CallToolResult, ErrorData> {
        let _ = (req.customer, req.period);
        Ok(CallToolResult::success(vec![]))
    }

    /// Send a reminder.
    #[idempotent(key = "reminder:<req.customer>:<req.period>")]
    #[tool]
    async fn send_reminder(&self, Parameters(req): Parameters<SendInvoice>) -> Result<CallToolResult, ErrorData> {
        let _ = (req.customer, req.period);
        Ok(CallToolResult::success(vec![]))
    }
}

fn main() {}
