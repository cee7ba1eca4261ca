//! The HTTP layer against a hand-written `Idempotency-Key` middleware over the same axum
//! router, in process (no sockets): first requests (distinct keys) and replays, on the
//! memory store against a `HashMap` behind a `Mutex`. Both read the body, hash it with
//! SHA-256 (method, path, body), hold the key while the handler runs and keep the response
//! (status, headers, body) for replays; the hand-written one has no lease, no renewal, no
//! telemetry and no problem+json answers. A second hand-written layer keeps each response as
//! JSON text, as a store keeps bytes: what idem costs beyond writing and reading its record.

use std::collections::HashMap;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Request, Response, StatusCode};
use axum::routing::post;
use http_body_util::BodyExt;
use idem::MemoryStore;
use idem::http::IdempotencyLayer;
use sha2::{Digest, Sha256};
use tower_service::Service;

use super::Settings;
use super::harness::compare;
use super::report::{Report, Row, Target};

pub fn http(settings: &Settings, report: &mut Report) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    against(settings, report, &runtime, "hand-written layer (HashMap + Mutex)", Kept::Typed);
    against(settings, report, &runtime, "hand-written layer, JSON records", Kept::Json);
}

/// First requests and replays, idem against the hand-written layer that keeps `kept`.
fn against(
    settings: &Settings,
    report: &mut Report,
    runtime: &tokio::runtime::Runtime,
    baseline: &'static str,
    kept: Kept,
) {
    let first = compare(
        settings.plan(1000),
        |n| runtime.block_on(batch(idem_service(), (0..n).map(|_| next_key()).collect(), StatusCode::CREATED, false)),
        |n| {
            runtime.block_on(batch(
                hand_service(kept),
                (0..n).map(|_| next_key()).collect(),
                StatusCode::CREATED,
                false,
            ))
        },
    );
    report.rows.push(Row {
        store: "http (memory)",
        call: "first request",
        baseline,
        pair: first,
        target: Target::None,
    });

    let pool: Vec<String> = (0..settings.pool()).map(|_| next_key()).collect();
    let (mut idem, mut hand) = (idem_service(), hand_service(kept));
    runtime.block_on(async {
        for key in &pool {
            assert_eq!(call(&mut idem, key).await.0, StatusCode::CREATED);
            assert_eq!(call(&mut hand, key).await.0, StatusCode::CREATED);
        }
    });
    let cycle = |cursor: &mut usize, n: usize| -> Vec<String> {
        (0..n)
            .map(|_| {
                *cursor = (*cursor + 1) % pool.len();
                pool[*cursor].clone()
            })
            .collect()
    };
    let (mut idem_cursor, mut hand_cursor) = (0, 0);
    let replay = compare(
        settings.plan(2000),
        |n| runtime.block_on(batch(idem.clone(), cycle(&mut idem_cursor, n), StatusCode::CREATED, true)),
        |n| runtime.block_on(batch(hand.clone(), cycle(&mut hand_cursor, n), StatusCode::CREATED, true)),
    );
    report.rows.push(Row { store: "http (memory)", call: "replay", baseline, pair: replay, target: Target::None });
}

/// `IDEM_BENCH_PROFILE=http-<first|replay>-<idem|hand|json>[:n]`: `n` requests on one side only,
/// in [`profiled_requests`], for a profiler. Returns how many were answered as expected.
pub fn profile(call: &str, side: &str, n: usize) -> usize {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let replay = match call {
        "first" => false,
        "replay" => true,
        other => panic!("the http bench has first and replay calls, not {other}"),
    };
    let pool: Vec<String> = (0..n.min(256)).map(|_| next_key()).collect();
    let keys: Vec<String> = match replay {
        true => (0..n).map(|i| pool[i % pool.len()].clone()).collect(),
        false => (0..n).map(|_| next_key()).collect(),
    };
    runtime.block_on(async {
        match side {
            "idem" => profiled_requests(idem_service(), &pool, keys, replay).await,
            "hand" => profiled_requests(hand_service(Kept::Typed), &pool, keys, replay).await,
            "json" => profiled_requests(hand_service(Kept::Json), &pool, keys, replay).await,
            other => panic!("the http bench's sides are idem, hand and json, not {other}"),
        }
    })
}

/// The requests that [`profile`] makes, after answering `pool` once when they replay.
#[inline(never)]
async fn profiled_requests<S>(mut service: S, pool: &[String], keys: Vec<String>, replay: bool) -> usize
where
    S: Service<Request<Body>, Response = Response<Body>>,
    S::Error: std::fmt::Debug,
{
    if replay {
        for key in pool {
            call(&mut service, key).await;
        }
    }
    let mut answered = 0;
    for key in &keys {
        answered += usize::from(call(&mut service, key).await == (StatusCode::CREATED, replay));
    }
    answered
}

fn next_key() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!("key-{}", NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}

const INVOICE: &str = r#"{"customer":"acme","amount":120,"memo":"October support"}"#;

/// The service both sides wrap: creates an invoice, answers 201 with JSON and a Location.
fn billing() -> Router {
    Router::new().route(
        "/v1/invoices",
        post(|body: Bytes| async move {
            let id = Sha256::digest(&body)[0];
            (StatusCode::CREATED, [("location", format!("/v1/invoices/{id}"))], format!(r#"{{"id":"inv_{id}"}}"#))
        }),
    )
}

fn idem_service() -> Router {
    billing().layer(IdempotencyLayer::new(MemoryStore::new()))
}

/// The hand-written layer, applied as idem's is (and as users apply middleware in axum):
/// `Router::layer`, on each route, sharing one map.
fn hand_service(kept: Kept) -> Router {
    billing().layer(HandLayer { keys: Arc::default(), kept })
}

/// One POST with `key`: its status and whether it was a replay.
async fn call<S>(service: &mut S, key: &str) -> (StatusCode, bool)
where
    S: Service<Request<Body>, Response = Response<Body>>,
    S::Error: std::fmt::Debug,
{
    let request = Request::post("/v1/invoices")
        .header("idempotency-key", key)
        .header("content-type", "application/json")
        .body(Body::from(INVOICE))
        .unwrap();
    poll_fn(|cx| service.poll_ready(cx)).await.unwrap();
    let response = service.call(request).await.unwrap();
    let replayed = response.headers().contains_key("idempotent-replayed");
    let status = response.status();
    std::hint::black_box(response.into_body().collect().await.unwrap().to_bytes());
    (status, replayed)
}

/// `keys.len()` requests, one after another; checks each answer after the clock stops.
async fn batch<S>(mut service: S, keys: Vec<String>, status: StatusCode, replayed: bool) -> Duration
where
    S: Service<Request<Body>, Response = Response<Body>>,
    S::Error: std::fmt::Debug,
{
    let mut answers = Vec::with_capacity(keys.len());
    let start = Instant::now();
    for key in &keys {
        answers.push(call(&mut service, key).await);
    }
    let elapsed = start.elapsed();
    assert!(answers.iter().all(|answer| *answer == (status, replayed)), "{answers:?}");
    elapsed
}

// ---------------------------------------------------------------------------------------
// The hand-written baseline.

enum Entry {
    Running,
    Done { fingerprint: [u8; 32], response: KeptResponse },
}

/// How the hand-written layer keeps a response: as values, or as JSON text the way a store
/// keeps bytes (written once, parsed on every replay).
#[derive(Clone, Copy)]
enum Kept {
    Typed,
    Json,
}

enum KeptResponse {
    Typed { status: StatusCode, headers: HeaderMap, body: Bytes },
    Json(String),
}

/// The JSON record: the status, the kept headers and the body as text.
#[derive(serde::Serialize, serde::Deserialize)]
struct Record<'a> {
    status: u16,
    #[serde(borrow)]
    headers: Vec<(&'a str, &'a str)>,
    body: std::borrow::Cow<'a, str>,
}

impl KeptResponse {
    fn keep(kept: Kept, status: StatusCode, headers: HeaderMap, body: Bytes) -> Self {
        match kept {
            Kept::Typed => KeptResponse::Typed { status, headers, body },
            Kept::Json => {
                let headers =
                    headers.iter().map(|(name, value)| (name.as_str(), value.to_str().expect("text"))).collect();
                let body = String::from_utf8_lossy(&body);
                KeptResponse::Json(serde_json::to_string(&Record { status: status.as_u16(), headers, body }).unwrap())
            }
        }
    }

    fn replay(&self) -> Response<Body> {
        let mut response = match self {
            KeptResponse::Typed { status, headers, body } => {
                let mut response = Response::new(Body::from(body.clone()));
                *response.status_mut() = *status;
                *response.headers_mut() = headers.clone();
                response
            }
            KeptResponse::Json(text) => {
                let record: Record<'_> = serde_json::from_str(text).expect("a kept record parses");
                let mut response = Response::new(Body::from(record.body.into_owned()));
                *response.status_mut() = StatusCode::from_u16(record.status).expect("a status");
                for (name, value) in record.headers {
                    let name = axum::http::HeaderName::from_bytes(name.as_bytes()).expect("a name");
                    response.headers_mut().append(name, value.parse().expect("a value"));
                }
                response
            }
        };
        response.headers_mut().insert("idempotent-replayed", "true".parse().unwrap());
        response
    }
}

#[derive(Clone)]
struct HandLayer {
    keys: Arc<Mutex<HashMap<String, Entry>>>,
    kept: Kept,
}

impl<S> tower_layer::Layer<S> for HandLayer {
    type Service = HandKeys<S>;

    fn layer(&self, inner: S) -> HandKeys<S> {
        HandKeys { inner, keys: Arc::clone(&self.keys), kept: self.kept }
    }
}

#[derive(Clone)]
struct HandKeys<S> {
    inner: S,
    keys: Arc<Mutex<HashMap<String, Entry>>>,
    kept: Kept,
}

impl<S> Service<Request<Body>> for HandKeys<S>
where
    S: Service<Request<Body>, Response = Response<Body>> + Clone + Send + 'static,
    S::Future: Send,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let ready = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, ready);
        let (keys, kept) = (Arc::clone(&self.keys), self.kept);
        Box::pin(async move {
            let Some(key) = request.headers().get("idempotency-key").and_then(|k| k.to_str().ok()) else {
                return Ok(status_only(StatusCode::BAD_REQUEST));
            };
            let key = key.trim_matches('"').to_owned();
            let (parts, body) = request.into_parts();
            let body = body.collect().await.expect("a body").to_bytes();
            let mut hash = Sha256::new();
            hash.update(parts.method.as_str());
            hash.update(parts.uri.path());
            hash.update(&body);
            let fingerprint: [u8; 32] = hash.finalize().into();
            {
                let mut map = keys.lock().unwrap();
                match map.get(&key) {
                    Some(Entry::Running) => return Ok(status_only(StatusCode::CONFLICT)),
                    Some(Entry::Done { fingerprint: first, .. }) if *first != fingerprint => {
                        return Ok(status_only(StatusCode::UNPROCESSABLE_ENTITY));
                    }
                    Some(Entry::Done { response, .. }) => return Ok(response.replay()),
                    None => map.insert(key.clone(), Entry::Running),
                };
            }
            let response = inner.call(Request::from_parts(parts, Body::from(body))).await?;
            let (parts, body) = response.into_parts();
            let body = body.collect().await.expect("a body").to_bytes();
            let mut headers = HeaderMap::new();
            for name in ["content-type", "location"] {
                if let Some(value) = parts.headers.get(name) {
                    headers.insert(name, value.clone());
                }
            }
            let mut map = keys.lock().unwrap();
            if parts.status.is_server_error() {
                map.remove(&key);
            } else {
                let response = KeptResponse::keep(kept, parts.status, headers, body.clone());
                let entry = Entry::Done { fingerprint, response };
                map.insert(key, entry);
            }
            Ok(Response::from_parts(parts, Body::from(body)))
        })
    }
}

fn status_only(status: StatusCode) -> Response<Body> {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = status;
    response
}
