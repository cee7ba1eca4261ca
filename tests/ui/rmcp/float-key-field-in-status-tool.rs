use idem::idempotent;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{ErrorData, schemars, tool, tool_router};

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct Charge {
    customer: String,
    amount: f64,
}

struct Billing;

// The status tool reads the key's fields too: a float among them is reported once, where
// the key names it, not again for the status tool.
#[idem::status_tools]
#[tool_router]
impl Billing {
    /// Charge the customer.
    #[idempotent(key = "charge:<req.customer>:<req.amount>")]
    #[tool]
    async fn charge(&self, Parameters(req): Parameters<Charge>) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::success(vec![rmcp::model::ContentBlock::text(req.customer)]))
    }
}

fn main() {}
