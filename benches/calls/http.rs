//! The HTTP layer against a hand-written `Idempotency-Key` middleware over the same axum
//! router, in process (no sockets): first requests (distinct keys) and replays, on the
//! memory store against a `HashMap` behind a `Mutex`. Both read the body, hash it with
//! SHA-256 (method, path, body), hold the key while the handler runs and keep the response
//! (status, headers, body) for replays; the hand-written one has no lease, no renewal, no
//! telemetry and no problem+json answers.

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
    let baseline = "hand-written layer (HashMap + Mutex)";
    let first = compare(
        settings.plan(1000),
        |n| runtime.block_on(batch(idem_service(), (0..n).map(|_| next_key()).collect(), StatusCode::CREATED, false)),
        |n| runtime.block_on(batch(hand_service(), (0..n).map(|_| next_key()).collect(), StatusCode::CREATED, false)),
    );
    report.rows.push(Row {
        store: "http (memory)",
        call: "first request",
        baseline,
        pair: first,
        target: Target::None,
    });

    let pool: Vec<String> = (0..settings.pool()).map(|_| next_key()).collect();
    let (mut idem, mut hand) = (idem_service(), hand_service());
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

/// `IDEM_BENCH_PROFILE=http-<first|replay>-<idem|hand>[:n]`: `n` requests on one side only,
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
            "hand" => profiled_requests(hand_service(), &pool, keys, replay).await,
            other => panic!("the http bench's sides are idem and hand, not {other}"),
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

fn hand_service() -> HandKeys<Router> {
    HandKeys { inner: billing(), keys: Arc::default() }
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
    Done { fingerprint: [u8; 32], status: StatusCode, headers: HeaderMap, body: Bytes },
}

#[derive(Clone)]
struct HandKeys<S> {
    inner: S,
    keys: Arc<Mutex<HashMap<String, Entry>>>,
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
        let keys = Arc::clone(&self.keys);
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
                    Some(Entry::Done { status, headers, body, .. }) => {
                        let mut response = Response::new(Body::from(body.clone()));
                        *response.status_mut() = *status;
                        *response.headers_mut() = headers.clone();
                        response.headers_mut().insert("idempotent-replayed", "true".parse().unwrap());
                        return Ok(response);
                    }
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
                let entry = Entry::Done { fingerprint, status: parts.status, headers, body: body.clone() };
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
