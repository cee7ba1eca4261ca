use idem::idempotent;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{ErrorData, schemars, tool, tool_router};

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct SendInvoice {
    tenant: String,
    customer: String,
    period: String,
}

struct Billing;

#[tool_router]
impl Billing {
    /// Send the invoice.
    #[idempotent(key = "invoice:<req.customer>:<req.period>", scope = req.tenant)]
    #[tool]
    async fn send_invoice(&self, Parameters(req): Parameters<SendInvoice>) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::success(vec![]))
    }
}

fn main() {}
