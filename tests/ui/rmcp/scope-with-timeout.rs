use idem::idempotent;
use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{ErrorData, schemars, tool, tool_router};

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct Export {
    month: String,
}

#[derive(Clone)]
struct Principal {
    tenant: String,
}

struct Ledger;

#[tool_router]
impl Ledger {
    /// Export a month.
    #[idempotent(key = "export:<req.month>", scope = principal.tenant, timeout = "1s")]
    #[tool]
    async fn export(
        &self,
        Extension(principal): Extension<Principal>,
        Parameters(req): Parameters<Export>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::success(vec![]))
    }
}

fn main() {}
