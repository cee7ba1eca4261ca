//! Provider keys: the tool sends idem's derived key to a provider that accepts idempotency
//! keys (as Stripe does), and a per-step key for each step of a multi-step tool, so the
//! provider enforces "once" too, even where idem's own record is gone.
//!
//! ```sh
//! cargo run --bin provider_keys --features http
//! ```
//!
//! The provider is a small HTTP stand-in that this example starts on 127.0.0.1. Like
//! Stripe, it saves the response of each `Idempotency-Key` and answers a repeat with it
//! (`Idempotent-Replayed: true`), refuses the key with other parameters (400) or while
//! the first request runs (409), and saves nothing when it failed before acting (503).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post as route_post;
use axum::{Json, Router};
use idem::http::IdempotencyLayer;
use idem::{MemoryStore, idempotent};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// What the tool returns: the provider's invoice and e-mail.
#[derive(Debug, Serialize, Deserialize)]
struct Sent {
    invoice: Value,
    email: Value,
    #[serde(default)]
    replayed: bool,
}

/// The tool's error: idem's answers, or the provider's refusal.
#[derive(Debug)]
enum BillingError {
    Idem(idem::Error),
    Provider(u16, String),
}

impl std::fmt::Display for BillingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BillingError::Idem(error) => write!(f, "{error}"),
            BillingError::Provider(status, message) => write!(f, "provider answered {status}: {message}"),
        }
    }
}

impl From<idem::Error> for BillingError {
    fn from(error: idem::Error) -> Self {
        BillingError::Idem(error)
    }
}

/// The billing tool, with its key store and the provider's address.
struct Billing {
    store: MemoryStore,
    provider: String,
}

impl Billing {
    /// Create the invoice, then e-mail it: two provider calls, each with its own key.
    #[idempotent(key = "invoice:<customer>:<period>", compare = [amount], store = self.store)]
    fn send_invoice(&self, customer: String, period: String, amount: f64) -> Result<Sent, BillingError> {
        let key = idem::current_key().expect("the body runs under a key");
        let invoice = post(
            &self.provider,
            "/v1/invoices",
            &key,
            &json!({"customer": customer, "period": period, "amount": amount}),
        )?;
        let email_key = key.step("email");
        let email = post(&self.provider, "/v1/emails", &email_key, &json!({"invoice": invoice["id"], "to": customer}))?;
        Ok(Sent { invoice, email, replayed: false })
    }
}

fn main() {
    let provider = Provider::start();
    let billing = Billing { store: MemoryStore::new(), provider: provider.addr.clone() };
    let (acme, october) = ("acme".to_owned(), "2026-10".to_owned());

    println!("1. The e-mail step fails after the invoice was created; the body's error releases the key.");
    provider.fail_next_email.store(true, Ordering::SeqCst);
    println!("   -> {}", billing.send_invoice(acme.clone(), october.clone(), 120.0).unwrap_err());
    println!("2. The model retries: the body runs again. The invoice key is replayed by the provider,");
    println!("   the e-mail step (key invoice-email:acme:2026-10) is sent once.");
    let sent = billing.send_invoice(acme.clone(), october.clone(), 120.0).expect("sent");
    println!(
        "   -> invoice {} (replayed by the provider: {}), email {}",
        sent.invoice["id"], sent.invoice["replayed"], sent.email["id"]
    );
    println!("3. Another retry: idem answers from its store; the provider is not even called.");
    let before = provider.requests.load(Ordering::SeqCst);
    let again = billing.send_invoice(acme.clone(), october.clone(), 120.0).expect("replayed");
    println!(
        "   -> replayed: {}, provider requests: +{}",
        again.replayed,
        provider.requests.load(Ordering::SeqCst) - before
    );

    println!("4. idem's record is lost (a process with an in-memory store restarts, or a record was purged");
    println!("   by hand): a retry runs the body again, with the same keys. The provider does not act twice.");
    let restarted = Billing { store: MemoryStore::new(), provider: provider.addr.clone() };
    let rerun = restarted.send_invoice(acme.clone(), october.clone(), 120.0).expect("answered by the provider");
    println!("   -> invoice {} (replayed by the provider: {})", rerun.invoice["id"], rerun.invoice["replayed"]);
    println!("5. Same, with another amount: the provider refuses its key with other parameters.");
    let restarted = Billing { store: MemoryStore::new(), provider: provider.addr.clone() };
    println!("   -> {}", restarted.send_invoice(acme, october, 150.0).unwrap_err());

    let (invoices, emails) = (provider.invoices.load(Ordering::SeqCst), provider.emails.load(Ordering::SeqCst));
    println!("\nthe provider created {invoices} invoice and sent {emails} e-mail");
    assert_eq!((invoices, emails), (1, 1), "one action, one invoice, one e-mail");
}

/// POSTs JSON with an `Idempotency-Key` header; the response body, or the refusal.
fn post(addr: &str, path: &str, key: &str, body: &Value) -> Result<Value, BillingError> {
    let failed = |error: std::io::Error| BillingError::Provider(0, error.to_string());
    let mut stream = TcpStream::connect(addr).map_err(failed)?;
    let body = body.to_string();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nIdempotency-Key: {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .map_err(failed)?;
    let mut response = String::new();
    stream.read_to_string(&mut response).map_err(failed)?;
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status: u16 = head.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
    let mut value: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    if status != 200 {
        // The provider's own error, or the key layer's problem (RFC 9457: `title`).
        let message = value["error"].as_str().or(value["title"].as_str()).unwrap_or(body).to_owned();
        return Err(BillingError::Provider(status, message));
    }
    value["replayed"] = json!(head.lines().any(|line| line.eq_ignore_ascii_case("Idempotent-Replayed: true")));
    Ok(value)
}

/// The stand-in provider: an axum service behind idem's own `Idempotency-Key` layer, on
/// a runtime thread of its own.
struct Provider {
    addr: String,
    invoices: AtomicUsize,
    emails: AtomicUsize,
    requests: AtomicUsize,
    fail_next_email: AtomicBool,
}

impl Provider {
    fn start() -> Arc<Provider> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a local port");
        let provider = Arc::new(Provider {
            addr: listener.local_addr().expect("an address").to_string(),
            invoices: AtomicUsize::new(0),
            emails: AtomicUsize::new(0),
            requests: AtomicUsize::new(0),
            fail_next_email: AtomicBool::new(false),
        });
        // The provider's own key store: a 5xx releases the key, every other answer is kept
        // and replayed with `Idempotent-Replayed: true`; the same key with another body is
        // a 422, and a repeat while the first request runs a 409.
        let keys = IdempotencyLayer::new(MemoryStore::new()).name("provider");
        let counted = Arc::clone(&provider);
        let app = Router::new()
            .route("/v1/invoices", route_post(create_invoice))
            .route("/v1/emails", route_post(send_email))
            .layer(keys)
            .layer(axum::middleware::from_fn(move |request, next: axum::middleware::Next| {
                counted.requests.fetch_add(1, Ordering::SeqCst);
                next.run(request)
            }))
            .with_state(Arc::clone(&provider));
        listener.set_nonblocking(true).expect("a non-blocking listener");
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime");
            runtime.block_on(async {
                let listener = tokio::net::TcpListener::from_std(listener).expect("the listener");
                axum::serve(listener, app).await.expect("the provider serves");
            });
        });
        provider
    }
}

async fn create_invoice(State(provider): State<Arc<Provider>>) -> Json<Value> {
    Json(json!({"id": format!("in_{}", provider.invoices.fetch_add(1, Ordering::SeqCst) + 1)}))
}

async fn send_email(State(provider): State<Arc<Provider>>) -> Result<Json<Value>, (StatusCode, Json<Value>)> {
    if provider.fail_next_email.swap(false, Ordering::SeqCst) {
        // Failed before acting: a 5xx, so the key is released and a retry may act.
        let error = json!({"error": "the mail service is unavailable; nothing was sent"});
        return Err((StatusCode::SERVICE_UNAVAILABLE, Json(error)));
    }
    Ok(Json(json!({"id": format!("em_{}", provider.emails.fetch_add(1, Ordering::SeqCst) + 1)})))
}
