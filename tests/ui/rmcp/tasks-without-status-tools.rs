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

// No #[idem::status_tools]: nothing serves the tools' task state.
#[tool_router]
impl Ledger {
    /// Export a month.
    #[idempotent(key = "export:<req.month>")]
    #[tool]
    async fn export(&self, Parameters(req): Parameters<Export>) -> Result<CallToolResult, ErrorData> {
        let _ = req.month;
        Ok(CallToolResult::success(vec![]))
    }
}

#[tool_handler]
#[idem::tasks]
impl ServerHandler for Ledger {}

fn main() {}
