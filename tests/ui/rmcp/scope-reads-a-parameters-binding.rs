use idem::idempotent;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{ErrorData, schemars, tool, tool_router};

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct SendInvoice {
    customer: String,
    for_tenant: String,
    period: String,
}

struct Billing;

// The pattern binds `customer` first; the scope reads `for_tenant`, which the model fills in.
#[tool_router]
impl Billing {
    /// Send the invoice.
    #[idempotent(key = "invoice:<customer>:<period>", scope = for_tenant)]
    #[tool]
    async fn send_invoice(
        &self,
        Parameters(SendInvoice { customer, for_tenant, period }): Parameters<SendInvoice>,
    ) -> Result<CallToolResult, ErrorData> {
        let _ = (customer, for_tenant, period);
        Ok(CallToolResult::success(vec![]))
    }
}

fn main() {}
