//! `#[idem::tasks]` written by a `macro_rules!` on a `ServerHandler` impl whose methods come
//! from the macro's call site. `self` is hygienic: the wrapped `call_tool` must use the `self`
//! of its own receiver, from the call site, not one made at the attribute.

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

/// Writes the attribute and the impl's header; the methods come from the call site, another
/// hygiene context.
macro_rules! handler {
    ($server:ty; $($methods:tt)*) => {
        #[idem::tasks]
        impl ServerHandler for $server {
            $($methods)*
        }
    };
}

handler! {
    Ledger;

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Self::tool_router().call(ToolCallContext::new(self, request, context)).await
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::default()
    }
}

pub fn main() {
    let _ = Ledger::default();
}
