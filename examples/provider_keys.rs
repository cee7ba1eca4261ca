//! Provider keys: the tool sends idem's derived key to a provider that accepts idempotency
//! keys (as Stripe does), and a per-step key for each step of a multi-step tool, so the
//! provider enforces "once" too, even where idem's own record is gone.
//!
//! ```sh
//! cargo run --example provider_keys
//! ```
//!
//! The provider is a small HTTP stand-in that this example starts on 127.0.0.1. Like
//! Stripe, it saves the response of each `Idempotency-Key` and answers a repeat with it
//! (`Idempotent-Replayed: true`), refuses the key with other parameters (400) or while
//! the first request runs (409), and saves nothing when it failed before acting (503).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

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
        return Err(BillingError::Provider(status, value["error"].as_str().unwrap_or(body).to_owned()));
    }
    value["replayed"] = json!(head.lines().any(|line| line.eq_ignore_ascii_case("Idempotent-Replayed: true")));
    Ok(value)
}

/// A saved idempotent request, by key.
enum Saved {
    Running,
    Done { request: String, response: String },
}

/// The stand-in provider: one thread accepting connections on 127.0.0.1.
struct Provider {
    addr: String,
    keys: Mutex<HashMap<String, Saved>>,
    invoices: AtomicUsize,
    emails: AtomicUsize,
    requests: AtomicUsize,
    fail_next_email: AtomicBool,
}

impl Provider {
    fn start() -> Arc<Provider> {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a local port");
        let provider = Arc::new(Provider {
            addr: listener.local_addr().expect("an address").to_string(),
            keys: Mutex::default(),
            invoices: AtomicUsize::new(0),
            emails: AtomicUsize::new(0),
            requests: AtomicUsize::new(0),
            fail_next_email: AtomicBool::new(false),
        });
        let server = Arc::clone(&provider);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let server = Arc::clone(&server);
                std::thread::spawn(move || server.serve(stream));
            }
        });
        provider
    }

    fn serve(&self, mut stream: TcpStream) {
        self.requests.fetch_add(1, Ordering::SeqCst);
        let mut reader = BufReader::new(&stream);
        let (mut path, mut key, mut length) = (String::new(), String::new(), 0);
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
            let lower = line.to_ascii_lowercase();
            if let Some(rest) = line.strip_prefix("POST ") {
                path = rest.split(' ').next().unwrap_or("").to_owned();
            } else if lower.starts_with("idempotency-key:") {
                key = line[16..].trim().to_owned();
            } else if lower.starts_with("content-length:") {
                length = line[15..].trim().parse().unwrap_or(0);
            }
            line.clear();
        }
        let mut body = vec![0; length];
        let _ = reader.read_exact(&mut body);
        let request = format!("{path} {}", String::from_utf8_lossy(&body));
        let (status, replayed, response) = self.handle(&path, &key, &request);
        let replayed = if replayed { "Idempotent-Replayed: true\r\n" } else { "" };
        let _ = write!(
            stream,
            "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n{replayed}Content-Length: {}\r\nConnection: close\r\n\r\n{response}",
            response.len()
        );
    }

    /// Stripe's rules for one request: replay, refuse, or act once and save the response.
    fn handle(&self, path: &str, key: &str, request: &str) -> (u16, bool, String) {
        {
            let mut keys = self.keys.lock().expect("not poisoned");
            match keys.get(key) {
                Some(Saved::Running) => {
                    return (409, false, r#"{"error":"a request with this key is running"}"#.into());
                }
                Some(Saved::Done { request: first, response }) if first == request => {
                    return (200, true, response.clone());
                }
                Some(Saved::Done { .. }) => {
                    let error = "keys for idempotent requests can only be used with the same parameters they were first used with";
                    return (400, false, json!({ "error": error }).to_string());
                }
                None => keys.insert(key.to_owned(), Saved::Running),
            };
        }
        let created = match path {
            "/v1/invoices" => Some(json!({"id": format!("in_{}", self.invoices.fetch_add(1, Ordering::SeqCst) + 1)})),
            "/v1/emails" if self.fail_next_email.swap(false, Ordering::SeqCst) => None,
            "/v1/emails" => Some(json!({"id": format!("em_{}", self.emails.fetch_add(1, Ordering::SeqCst) + 1)})),
            _ => None,
        };
        let mut keys = self.keys.lock().expect("not poisoned");
        match created {
            Some(response) => {
                let response = response.to_string();
                keys.insert(key.to_owned(), Saved::Done { request: request.to_owned(), response: response.clone() });
                (200, false, response)
            }
            None => {
                // Failed before acting: nothing is saved, so a retry with the key may act.
                keys.remove(key);
                (503, false, r#"{"error":"the mail service is unavailable; nothing was sent"}"#.into())
            }
        }
    }
}
