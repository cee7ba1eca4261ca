use idem::idempotent;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{ErrorData, ServerHandler, schemars, tool, tool_handler, tool_router};

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct Export {
    month: String,
}

#[derive(Clone)]
struct Ledger;

#[idem::status_tools]
#[tool_router]
impl Ledger {
    /// Export a month.
    #[idempotent(key = "export:<req.month>", timeout = "1s")]
    #[tool]
    async fn export(&self, Parameters(req): Parameters<Export>) -> Result<CallToolResult, ErrorData> {
        let _ = req.month;
        Ok(CallToolResult::success(vec![]))
    }
}

// This crate depends on idem as `idem`: no crate is called `my_idem`, for #[idem::tasks] as
// for #[idempotent].
#[tool_handler]
#[idem::tasks(crate = "my_idem")]
impl ServerHandler for Ledger {}

fn main() {}
