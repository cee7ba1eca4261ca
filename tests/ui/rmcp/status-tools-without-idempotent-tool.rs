use rmcp::model::CallToolResult;
use rmcp::{ErrorData, tool, tool_router};

struct Billing;

#[idem::status_tools]
#[tool_router]
impl Billing {
    /// Say hello.
    #[tool]
    async fn hello(&self) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::success(vec![]))
    }
}

fn main() {}
