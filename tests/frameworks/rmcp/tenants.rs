//! Two tenants through rmcp's client: the scope comes from the authenticated request (an
//! `Authenticated<Principal>`, which a transport puts on every request here, and an
//! authentication layer in the HTTP request over streamable HTTP: see
//! tests/remote_mcp.rs), never from the tool's arguments. The same
//! business key gives one effect per tenant, with no replay or conflict across tenants, and
//! each tenant's status tool sees only its own record.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use idem::frameworks::rmcp::Authenticated;
use idem::{MemoryStore, idempotent};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolRequestParams, CallToolResult, GetExtensions, JsonRpcMessage};
use rmcp::service::{RoleClient, RoleServer, RunningService, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{ErrorData, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde_json::{Value, json};

use super::SendInvoice;

/// Who the request comes from, as the server's authentication established it.
#[derive(Clone)]
struct Principal {
    tenant: String,
}

/// Invoices sent per (tenant, customer, period).
type Sent = HashMap<(String, String, String), usize>;

#[derive(Clone, Default)]
struct TenantBilling {
    store: Arc<MemoryStore>,
    sent: Arc<Mutex<Sent>>,
}

#[idem::status_tools]
#[tool_router]
impl TenantBilling {
    #[idempotent(key = "invoice:<req.customer>:<req.period>", compare = [req.amount], scope = principal.tenant, store = *self.store)]
    #[tool(description = "Send an invoice")]
    async fn send_invoice(
        &self,
        Authenticated(principal): Authenticated<Principal>,
        Parameters(req): Parameters<SendInvoice>,
    ) -> Result<CallToolResult, ErrorData> {
        let key = (principal.tenant.clone(), req.customer.clone(), req.period.clone());
        *self.sent.lock().unwrap().entry(key).or_default() += 1;
        let invoice = json!({ "invoice": format!("inv-{}-{}", principal.tenant, req.customer), "amount": req.amount });
        Ok(CallToolResult::structured(invoice))
    }
}

#[tool_handler]
impl ServerHandler for TenantBilling {}

/// A transport that puts the connection's principal on every request it receives.
struct Authenticating<T> {
    inner: T,
    principal: Principal,
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for Authenticating<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let mut message = self.inner.receive().await?;
        if let JsonRpcMessage::Request(request) = &mut message {
            request.request.extensions_mut().insert(self.principal.clone());
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// One tenant's MCP connection to the shared server state.
async fn connect_as(billing: TenantBilling, tenant: &str) -> RunningService<RoleClient, ()> {
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_io);
    let transport = Authenticating {
        inner: AsyncRwTransport::<RoleServer, _, _>::new_server(read, write),
        principal: Principal { tenant: tenant.into() },
    };
    tokio::spawn(async move {
        // Boxed, as `support::mcp::served` does: rmcp's serving code compiled once.
        let server = billing.into_dyn().serve(transport).await.expect("the server starts");
        let _ = server.waiting().await;
    });
    ().serve(client_io).await.expect("the client connects")
}

async fn call(client: &RunningService<RoleClient, ()>, tool: &str, arguments: Value) -> Value {
    let Value::Object(arguments) = arguments else { panic!("arguments are an object") };
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    let result = client.call_tool(params).await.expect("the call is answered");
    serde_json::to_value(result).unwrap()
}

#[tokio::test]
async fn two_tenants_get_one_effect_each_and_see_only_their_own_records() {
    let billing = TenantBilling::default();
    let acme = connect_as(billing.clone(), "acme").await;
    let beta = connect_as(billing.clone(), "beta").await;
    let invoice = json!({ "customer": "c1", "period": "2026-10", "amount": 120.0, "memo": "October" });
    let key = json!({ "customer": "c1", "period": "2026-10" });

    let first = call(&acme, "send_invoice", invoice.clone()).await;
    assert_eq!(first["structuredContent"]["invoice"], "inv-acme-c1", "{first}");
    // Beta's status does not see acme's record; beta's call is a first call of its own,
    // even with another amount (no CONFLICT across tenants).
    let status = call(&beta, "send_invoice_status", key.clone()).await;
    assert_eq!(status["structuredContent"]["status"], "not_found", "{status}");
    let other_amount = json!({ "customer": "c1", "period": "2026-10", "amount": 999.0, "memo": "October" });
    let beta_first = call(&beta, "send_invoice", other_amount.clone()).await;
    assert_eq!(beta_first["structuredContent"]["invoice"], "inv-beta-c1", "{beta_first}");

    // Repeats replay each tenant's own invoice.
    let again = call(&acme, "send_invoice", invoice.clone()).await;
    assert_eq!(again["structuredContent"]["invoice"], "inv-acme-c1", "{again}");
    assert_eq!(again["structuredContent"]["replayed"], true, "{again}");
    let beta_again = call(&beta, "send_invoice", other_amount).await;
    assert_eq!(beta_again["structuredContent"]["invoice"], "inv-beta-c1", "{beta_again}");

    let acme_status = call(&acme, "send_invoice_status", key.clone()).await;
    assert_eq!(acme_status["structuredContent"]["status"], "completed", "{acme_status}");
    assert_eq!(acme_status["structuredContent"]["result"]["invoice"], "inv-acme-c1", "{acme_status}");
    let sent = billing.sent.lock().unwrap().clone();
    assert_eq!(sent.len(), 2, "one invoice per tenant: {:?}", sent.keys());
    assert!(sent.values().all(|&runs| runs == 1), "each sent once");
    acme.cancel().await.unwrap();
    beta.cancel().await.unwrap();
}
