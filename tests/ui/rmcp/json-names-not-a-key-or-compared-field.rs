use idem::idempotent;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{ErrorData, schemars, tool, tool_router};

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "camelCase")]
struct SendInvoice {
    #[serde(rename = "cust")]
    customer_id: String,
    period: String,
    #[serde(rename = "note")]
    memo: String,
}

struct Billing;

#[tool_router]
impl Billing {
    /// Send the invoice. `memo` is neither a key nor a compared field: its JSON name is
    /// never shown, so listing it is a mistake.
    #[idempotent(key = "invoice:<req.customer_id>:<req.period>", json_names = [req.customer_id = "cust", req.memo = "note"])]
    #[tool]
    async fn send_invoice(&self, Parameters(req): Parameters<SendInvoice>) -> Result<CallToolResult, ErrorData> {
        let _ = req.memo;
        Ok(CallToolResult::success(vec![]))
    }
}

fn main() {}
