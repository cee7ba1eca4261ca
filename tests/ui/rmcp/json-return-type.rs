use idem::idempotent;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::{Json, schemars, tool, tool_router};

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct SendInvoice {
    customer: String,
    period: String,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct Invoice {
    id: String,
}

struct Billing;

#[tool_router]
impl Billing {
    /// Send the invoice.
    #[idempotent(key = "invoice:<req.customer>:<req.period>")]
    #[tool]
    async fn send_invoice(&self, Parameters(req): Parameters<SendInvoice>) -> Result<Json<Invoice>, String> {
        Ok(Json(Invoice { id: req.customer }))
    }
}

fn main() {}
