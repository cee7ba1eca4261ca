#![deny(deprecated)]

use idem::idempotent;
use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{ErrorData, schemars, tool, tool_router};

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct SendInvoice {
    customer: String,
}

#[derive(Clone)]
struct Principal {
    tenant: String,
}

struct Billing;

#[tool_router]
impl Billing {
    /// Send the invoice.
    #[idempotent(key = "invoice:<req.customer>")]
    #[tool]
    async fn send_invoice(
        &self,
        Extension(principal): Extension<Principal>,
        Parameters(req): Parameters<SendInvoice>,
    ) -> Result<CallToolResult, ErrorData> {
        let _ = principal.tenant;
        Ok(CallToolResult::success(vec![]))
    }

    /// Shared on purpose: no warning.
    #[idempotent(key = "rate:<req.customer>", unscoped)]
    #[tool]
    async fn rate(
        &self,
        Extension(principal): Extension<Principal>,
        Parameters(req): Parameters<SendInvoice>,
    ) -> Result<CallToolResult, ErrorData> {
        let _ = principal.tenant;
        Ok(CallToolResult::success(vec![]))
    }
}

fn main() {}
