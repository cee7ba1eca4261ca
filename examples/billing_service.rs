//! A billing service that agents call, safe to retry: an axum API whose `POST /v1/invoices`
//! honours `Idempotency-Key` with [`idem::http::IdempotencyLayer`] on an SQLite store, keys
//! scoped per caller.
//!
//! ```sh
//! cargo run --bin billing_service --features http              # an agent's retries, played out
//! cargo run --bin billing_service --features http -- --serve   # serve on 127.0.0.1:3000
//! ```
//!
//! With `--serve`, try it with curl:
//!
//! ```sh
//! curl -i -X POST localhost:3000/v1/invoices -H 'authorization: Bearer agent-a' \
//!      -H 'idempotency-key: "inv-acme-2026-10"' -d '{"customer":"acme","amount":120}'
//! ```

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Extension, Json, Router};
use http_body_util::{BodyExt, Full};
use idem::SqliteStore;
use idem::http::IdempotencyLayer;
use serde_json::{Value, json};

/// Who is calling, as the auth middleware found it.
#[derive(Clone)]
struct Caller(String);

/// The service's one effect: invoices, counted.
#[derive(Default)]
struct Invoices {
    created: AtomicUsize,
}

async fn create_invoice(
    State(invoices): State<Arc<Invoices>>,
    Extension(Caller(caller)): Extension<Caller>,
    Json(request): Json<Value>,
) -> Response {
    // Sending an invoice takes a while: longer than the agent's HTTP client waits.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let n = invoices.created.fetch_add(1, Ordering::SeqCst) + 1;
    let invoice = json!({"id": format!("inv_{n}"), "caller": caller, "customer": request["customer"], "amount": request["amount"]});
    (StatusCode::CREATED, [(header::LOCATION, format!("/v1/invoices/inv_{n}"))], Json(invoice)).into_response()
}

/// Every request needs a bearer token; its caller goes into the request's extensions.
async fn authenticate(mut request: Request, next: Next) -> Response {
    let token = request.headers().get(header::AUTHORIZATION).and_then(|value| value.to_str().ok());
    match token.and_then(|token| token.strip_prefix("Bearer ")) {
        Some(caller) => {
            let caller = Caller(caller.to_owned());
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        None => (StatusCode::UNAUTHORIZED, "a bearer token, please").into_response(),
    }
}

fn app(store: SqliteStore) -> (Router, Arc<Invoices>) {
    let invoices = Arc::new(Invoices::default());
    let keys = IdempotencyLayer::new(store)
        .name("billing_api")
        .scope(|request| request.extensions.get::<Caller>().map(|caller| caller.0.clone()).unwrap_or_default());
    let router = Router::new()
        .route("/v1/invoices", post(create_invoice))
        // Layers run outside in: authentication first, then the key.
        .layer(keys)
        .layer(middleware::from_fn(authenticate))
        .with_state(Arc::clone(&invoices));
    (router, invoices)
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = SqliteStore::open(dir.path().join("billing-keys.db")).expect("the key store opens");
    let (router, invoices) = app(store);
    let serve = std::env::args().any(|arg| arg == "--serve");
    let listener = tokio::net::TcpListener::bind(if serve { "127.0.0.1:3000" } else { "127.0.0.1:0" }).await.unwrap();
    let addr = listener.local_addr().unwrap();
    if serve {
        println!("billing service on http://{addr} (keys in {})", dir.path().display());
        axum::serve(listener, router).await.unwrap();
        return;
    }
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });

    let invoice = r#"{"customer":"acme","amount":120}"#;
    println!("1. The agent sends the invoice; its HTTP client gives up after 100 ms.");
    let sent =
        tokio::time::timeout(Duration::from_millis(100), send(addr, "agent-a", "inv-acme-2026-10", invoice)).await;
    println!("   -> {}", if sent.is_err() { "timed out (the service goes on)" } else { "answered" });
    println!("2. It retries at once, with the same key: the first request is still running.");
    let running = send(addr, "agent-a", "inv-acme-2026-10", invoice).await;
    println!("   -> {} Retry-After: {} ({})", running.status, running.header("retry-after"), running.body["title"]);
    let wait: u64 = running.header("retry-after").parse().unwrap_or(1);
    tokio::time::sleep(Duration::from_secs(wait)).await;
    println!("3. After Retry-After, again: the first request's response, replayed.");
    let replayed = send(addr, "agent-a", "inv-acme-2026-10", invoice).await;
    println!(
        "   -> {} {} Idempotent-Replayed: {}",
        replayed.status,
        replayed.body["id"],
        replayed.header("idempotent-replayed")
    );
    println!("4. The same key with another amount is another request: refused.");
    let reused = send(addr, "agent-a", "inv-acme-2026-10", r#"{"customer":"acme","amount":150}"#).await;
    println!("   -> {} ({})", reused.status, reused.body["title"]);
    println!("5. Another caller's key never meets agent-a's, even when it is the same text.");
    let other = send(addr, "agent-b", "inv-acme-2026-10", invoice).await;
    println!("   -> {} {} for {}", other.status, other.body["id"], other.body["caller"]);

    let created = invoices.created.load(Ordering::SeqCst);
    println!("\ninvoices created: {created} (one per caller)");
    assert_eq!(created, 2, "one invoice per caller and key");
}

/// What the agent's client read.
struct Answer {
    status: u16,
    headers: axum::http::HeaderMap,
    body: Value,
}

impl Answer {
    fn header(&self, name: &str) -> &str {
        self.headers.get(name).and_then(|value| value.to_str().ok()).unwrap_or("-")
    }
}

/// One POST /v1/invoices, as an agent's HTTP client sends it.
async fn send(addr: SocketAddr, caller: &str, key: &str, body: &str) -> Answer {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let io = hyper_util::rt::TokioIo::new(stream);
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io).await.unwrap();
    tokio::spawn(connection);
    let request = hyper::Request::post("/v1/invoices")
        .header(header::HOST, addr.to_string())
        .header(header::AUTHORIZATION, format!("Bearer {caller}"))
        .header("idempotency-key", format!("\"{key}\""))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let (parts, body) = response.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    Answer {
        status: parts.status.as_u16(),
        headers: parts.headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    }
}
