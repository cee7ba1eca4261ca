//! A billing service behind the layer, served by axum on 127.0.0.1, and a client that
//! speaks HTTP/1.1 to it through hyper.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use idem::http::IdempotencyLayer;
use idem::store::Store;
use serde_json::{Value, json};
use tokio::sync::Notify;

/// What the service did: invoices created, per `Idempotency-Key` they came with.
#[derive(Default)]
pub struct Billing {
    invoices: Mutex<HashMap<String, usize>>,
    pub handler_calls: AtomicUsize,
    pub listed: AtomicUsize,
    /// A status the next POST answers with before acting (0: none).
    pub fail_next: AtomicU16,
    /// Set for `/v1/slow`: the handler says it entered, then waits to be let go.
    pub entered: Notify,
    pub go: Notify,
}

impl Billing {
    /// Invoices created with this key (the key as the client sent it, unquoted).
    pub fn invoices(&self, key: &str) -> usize {
        self.invoices.lock().unwrap().get(key).copied().unwrap_or(0)
    }

    pub fn total_invoices(&self) -> usize {
        self.invoices.lock().unwrap().values().sum()
    }

    fn create(&self, headers: &HeaderMap, body: &Bytes) -> Response {
        self.handler_calls.fetch_add(1, Ordering::SeqCst);
        let fail = self.fail_next.swap(0, Ordering::SeqCst);
        if fail != 0 {
            return (StatusCode::from_u16(fail).unwrap(), "try again").into_response();
        }
        let key = headers.get("idempotency-key").map_or("", |v| v.to_str().unwrap()).trim_matches('"').to_owned();
        let request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let id = {
            let mut invoices = self.invoices.lock().unwrap();
            *invoices.entry(key).or_default() += 1;
            invoices.values().sum::<usize>()
        };
        let invoice = json!({"id": format!("inv_{id}"), "customer": request["customer"], "amount": request["amount"]});
        let mut response = (StatusCode::CREATED, axum::Json(invoice)).into_response();
        let headers = response.headers_mut();
        headers.insert("location", format!("/v1/invoices/inv_{id}").parse().unwrap());
        headers.insert("set-cookie", "session=first-caller; HttpOnly".parse().unwrap());
        headers.insert("authorization", "Bearer first-caller".parse().unwrap());
        headers.insert("x-request-id", format!("req_{id}").parse().unwrap());
        response
    }
}

async fn create_invoice(State(billing): State<Arc<Billing>>, headers: HeaderMap, body: Bytes) -> Response {
    billing.create(&headers, &body)
}

async fn slow_invoice(State(billing): State<Arc<Billing>>, headers: HeaderMap, body: Bytes) -> Response {
    billing.entered.notify_one();
    billing.go.notified().await;
    billing.create(&headers, &body)
}

async fn list_invoices(State(billing): State<Arc<Billing>>) -> Response {
    let n = billing.listed.fetch_add(1, Ordering::SeqCst) + 1;
    axum::Json(json!({"listed": n})).into_response()
}

async fn big_export(State(billing): State<Arc<Billing>>) -> Response {
    billing.handler_calls.fetch_add(1, Ordering::SeqCst);
    (StatusCode::OK, "x".repeat(4096)).into_response()
}

async fn no_content(State(billing): State<Arc<Billing>>) -> StatusCode {
    billing.handler_calls.fetch_add(1, Ordering::SeqCst);
    StatusCode::NO_CONTENT
}

/// The service's routes behind `layer`.
pub fn app<St: Store + 'static>(layer: IdempotencyLayer<St>) -> (Router, Arc<Billing>) {
    let billing = Arc::new(Billing::default());
    let router = Router::new()
        .route("/v1/invoices", post(create_invoice).get(list_invoices).patch(create_invoice).put(create_invoice))
        .route("/v1/other", post(create_invoice))
        .route("/v1/slow", post(slow_invoice))
        .route("/v1/export", post(big_export))
        .route("/v1/ping", post(no_content))
        .route("/v1/list", get(list_invoices))
        .layer(layer)
        .with_state(Arc::clone(&billing));
    (router, billing)
}

/// Serves `router` on 127.0.0.1, on the current runtime, until the runtime ends.
pub async fn serve(router: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    addr
}

/// A response as the client read it.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub body: String,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|value| value.to_str().unwrap())
    }

    pub fn replayed(&self) -> bool {
        self.header("idempotent-replayed") == Some("true")
    }

    /// The problem's `type` after the base, checking that this is a problem+json answer.
    pub fn problem(&self) -> String {
        assert_eq!(self.header("content-type"), Some("application/problem+json"), "{self:?}");
        let problem = self.json();
        assert_eq!(problem["status"], self.status, "{problem}");
        assert!(problem["title"].as_str().is_some_and(|t| !t.is_empty()), "{problem}");
        assert!(problem["detail"].as_str().is_some_and(|d| !d.is_empty()), "{problem}");
        let kind = problem["type"].as_str().unwrap();
        kind.strip_prefix(idem::http::PROBLEM_TYPE_BASE).unwrap_or_else(|| panic!("{kind}")).to_owned()
    }
}

/// Sends one request on a connection of its own: `headers` in order (a name may repeat).
pub async fn send(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
    tokio::spawn(connection);
    let mut request = hyper::Request::builder().method(method).uri(path).header("host", addr.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if !body.is_empty() {
        request = request.header("content-type", "application/json");
    }
    let request = request.body(Full::new(Bytes::from(body.to_owned()))).unwrap();
    let response = sender.send_request(request).await.unwrap();
    let (parts, body) = response.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    Reply { status: parts.status.as_u16(), headers: parts.headers, body: String::from_utf8(body.to_vec()).unwrap() }
}

/// A POST of an invoice with `key`.
pub async fn post_invoice(addr: SocketAddr, key: &str, body: &str) -> Reply {
    send(addr, "POST", "/v1/invoices", &[("idempotency-key", key)], body).await
}
