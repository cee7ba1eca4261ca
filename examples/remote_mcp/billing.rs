//! The billing MCP server of `remote_mcp`: three tools whose records are per tenant, served
//! over streamable HTTP behind an authentication layer. (`tests/remote_mcp.rs` uses this
//! file too.)

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use idem::frameworks::rmcp::Authenticated;
use idem::idempotent;
use idem::store::DynStore;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::json;

/// Who a request comes from: what the authentication layer established.
#[derive(Clone, Debug)]
pub struct Principal {
    pub tenant: String,
}

/// The bearer tokens this server accepts and the tenant each one authenticates. A real
/// server checks a signed token or asks its identity provider.
pub const TOKENS: [(&str, &str); 2] = [("acme-token", "acme"), ("beta-token", "beta")];

/// The authentication layer: a request with a known bearer token gets its `Principal` in
/// its extensions, where `Authenticated<Principal>` finds it; any other is 401.
pub async fn authenticate(mut request: Request, next: Next) -> Response {
    let token = request.headers().get(header::AUTHORIZATION).and_then(|value| value.to_str().ok());
    let tenant = token
        .and_then(|value| value.strip_prefix("Bearer "))
        .and_then(|token| TOKENS.iter().find(|(known, _)| *known == token))
        .map(|(_, tenant)| tenant.to_string());
    match tenant {
        Some(tenant) => {
            request.extensions_mut().insert(Principal { tenant });
            next.run(request).await
        }
        None => (StatusCode::UNAUTHORIZED, "a bearer token is required").into_response(),
    }
}

/// The arguments of `send_invoice`.
#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct SendInvoice {
    /// The customer to bill, e.g. "c1".
    pub customer: String,
    /// The billing period, e.g. "2026-10".
    pub period: String,
    /// The amount to bill, in euros.
    pub amount: f64,
}

/// The arguments of `export_ledger`.
#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct ExportLedger {
    /// The month to export, e.g. "2026-10".
    pub month: String,
}

/// The arguments of `refund`.
#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct Refund {
    /// The invoice to refund, e.g. "inv-acme-c1-2026-10".
    pub invoice: String,
    /// The amount to refund, in euros.
    pub amount: f64,
}

/// The outside world the tools change: a file with one line per effect, appended by
/// whichever worker does it, so that effects are counted across processes.
#[derive(Clone, Debug)]
pub struct Effects {
    pub path: PathBuf,
}

impl Effects {
    fn happened(&self, line: &str) {
        let mut file =
            std::fs::OpenOptions::new().create(true).append(true).open(&self.path).expect("the effects file");
        // One write per line, in append mode: lines of concurrent workers never interleave.
        file.write_all(format!("{line}\n").as_bytes()).expect("an effect is written");
    }

    /// The effects so far, one per line.
    pub fn lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.path).unwrap_or_default().lines().map(str::to_owned).collect()
    }
}

/// The billing server: the store every worker shares, and the outside world.
#[derive(Clone)]
pub struct Billing {
    pub store: Arc<dyn DynStore>,
    pub effects: Effects,
    /// How long the billing provider takes to send an invoice.
    pub invoice: Duration,
    /// How long each of the export's three pages takes.
    pub page: Duration,
}

#[idem::status_tools]
#[tool_router]
impl Billing {
    /// Create and send the invoice for one customer and billing period.
    #[idempotent(
        key = "invoice:<req.customer>:<req.period>",
        compare = [req.amount],
        scope = principal.tenant,
        store = *self.store
    )]
    #[tool]
    async fn send_invoice(
        &self,
        Authenticated(principal): Authenticated<Principal>,
        Parameters(req): Parameters<SendInvoice>,
    ) -> Result<CallToolResult, ErrorData> {
        tokio::time::sleep(self.invoice).await; // the provider at work
        let invoice = format!("inv-{}-{}-{}", principal.tenant, req.customer, req.period);
        self.effects.happened(&format!("invoice {invoice} {:.2} by worker {}", req.amount, std::process::id()));
        Ok(CallToolResult::structured(json!({"invoice": invoice, "amount": req.amount})))
    }

    /// Export one month of the tenant's ledger; takes a few seconds. A client that takes MCP
    /// tasks gets one task per month however often it calls.
    #[idempotent(key = "export:<req.month>", scope = principal.tenant, timeout = "1s", lease = "3s", store = *self.store)]
    #[tool]
    async fn export_ledger(
        &self,
        Authenticated(principal): Authenticated<Principal>,
        Parameters(req): Parameters<ExportLedger>,
    ) -> Result<CallToolResult, ErrorData> {
        for page in 1..=3 {
            if idem::cancel_requested() {
                return Err(ErrorData::internal_error("the export was cancelled before it finished", None));
            }
            idem::progress(format!("exporting page {page} of 3"));
            tokio::time::sleep(self.page).await;
        }
        let export = format!("export-{}-{}", principal.tenant, req.month);
        self.effects.happened(&format!("export {export} by worker {}", std::process::id()));
        Ok(CallToolResult::structured(json!({"export": export, "rows": 3})))
    }

    /// Refund (part of) an invoice. Above 500 EUR a person approves first: the call waits
    /// for the decision (a client that takes MCP tasks gets a task that asks its user). One
    /// refund per invoice, however often it is called.
    #[idempotent(
        key = "refund:<req.invoice>",
        compare = [req.amount],
        scope = principal.tenant,
        approval(when = req.amount > 500.0, text = "refund <req.amount> EUR of <req.invoice>"),
        store = *self.store
    )]
    #[tool]
    async fn refund(
        &self,
        Authenticated(principal): Authenticated<Principal>,
        Parameters(req): Parameters<Refund>,
    ) -> Result<CallToolResult, ErrorData> {
        let refund = format!("refund-{}-{}", principal.tenant, req.invoice);
        self.effects.happened(&format!("refund {refund} {:.2} by worker {}", req.amount, std::process::id()));
        Ok(CallToolResult::structured(json!({"refund": refund, "amount": req.amount})))
    }
}

#[tool_handler(name = "idem-remote-billing")]
#[idem::tasks]
impl ServerHandler for Billing {}

/// The MCP endpoint: rmcp's streamable HTTP service in stateless mode (every request
/// stands alone, so any worker serves any request), behind the authentication layer.
pub fn app(billing: Billing) -> axum::Router {
    let config = StreamableHttpServerConfig::default().with_legacy_session_mode(false).disable_allowed_hosts();
    let mcp = StreamableHttpService::new(move || Ok(billing.clone()), Arc::new(NeverSessionManager::default()), config);
    axum::Router::new().route_service("/mcp", mcp).layer(axum::middleware::from_fn(authenticate))
}
