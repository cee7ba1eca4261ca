//! `#[idem::tasks]` on a `ServerHandler` whose `call_tool` is written by hand, with a `mut`
//! context it changes (here: it puts the connection's principal on the request). The
//! wrapper keeps the signature as written and moves the body, which still mutates: no
//! "variable does not need to be mutable" warning, which `cargo fix` would turn into a
//! broken build (E0596). `deny` makes the warning an error here.

#![deny(unused_mut)]

use idem::{MemoryStore, idempotent};
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, schemars, tool, tool_router};

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct Export {
    month: String,
}

#[derive(Clone)]
pub struct Principal(pub String);

#[derive(Clone, Default)]
pub struct Ledger {
    store: std::sync::Arc<MemoryStore>,
}

#[idem::status_tools]
#[tool_router]
impl Ledger {
    /// Export a month.
    #[idempotent(key = "export:<req.month>", timeout = "1s", store = *self.store)]
    #[tool]
    async fn export(&self, Parameters(req): Parameters<Export>) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::success(vec![rmcp::model::ContentBlock::text(req.month)]))
    }
}

#[idem::tasks]
impl ServerHandler for Ledger {
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        context.extensions.insert(Principal("acme".into()));
        Self::tool_router().call(ToolCallContext::new(self, request, context)).await
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::default()
    }
}

pub fn main() {
    let _ = Ledger::default();
}
