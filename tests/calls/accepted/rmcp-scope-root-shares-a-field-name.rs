//! The documented scope for rmcp, `scope = principal.tenant` from `Extension(principal)`, on a
//! tool whose `Parameters` pattern also binds a field named `tenant` (what the model says
//! the invoice is for). The scope reads `principal` only: the model's `tenant` never
//! chooses whose records these are.

use idem::{MemoryStore, Status, idempotent};
use rmcp::handler::server::common::Extension;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{ErrorData, schemars, tool, tool_router};

#[derive(Clone)]
pub struct Principal {
    pub tenant: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct SendInvoice {
    /// The tenant the model says the invoice is for: shown, never trusted.
    tenant: String,
    customer: String,
    period: String,
}

#[derive(Default)]
pub struct Billing {
    store: MemoryStore,
}

#[idem::status_tools]
#[tool_router]
impl Billing {
    #[idempotent(key = "invoice:<customer>:<period>", scope = principal.tenant, store = self.store)]
    #[tool(description = "Send an invoice")]
    async fn send_invoice(
        &self,
        Extension(principal): Extension<Principal>,
        Parameters(SendInvoice { tenant, customer, period }): Parameters<SendInvoice>,
    ) -> Result<CallToolResult, ErrorData> {
        let text = format!("{} billed {customer} for {period} (requested for {tenant})", principal.tenant);
        Ok(CallToolResult::success(vec![rmcp::model::ContentBlock::text(text)]))
    }
}

fn as_principal(tenant: &str) -> Extension<Principal> {
    Extension(Principal { tenant: tenant.into() })
}

fn request(tenant: &str) -> Parameters<SendInvoice> {
    Parameters(SendInvoice { tenant: tenant.into(), customer: "acme".into(), period: "2026-10".into() })
}

#[tokio::main(flavor = "current_thread")]
pub async fn main() {
    let billing = Billing::default();
    // The model names another tenant; the call is recorded under the principal's.
    billing.send_invoice(as_principal("north"), request("south")).await.unwrap();
    let north = billing.send_invoice_status(as_principal("north"), request("south")).await;
    assert!(matches!(north, Ok(Status::Completed { .. })), "{north:?}");
    let south = billing.send_invoice_status(as_principal("south"), request("south")).await;
    assert!(matches!(south, Ok(Status::NotFound)), "the model's tenant is not the scope: {south:?}");
}
