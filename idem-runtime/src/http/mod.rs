//! The provider side: a `tower` layer that honours the `Idempotency-Key` request header on
//! idem's stores, for the HTTP services agents call (axum routes, or any `tower` service).
//!
//! The rule is to check the key where the side effect happens. When that is a service of
//! your own (a billing API, a payments service the agent's tools call), put
//! [`IdempotencyLayer`] (feature `http`) in front of its routes: the same stores, leases
//! and telemetry as tools. It follows the IETF HTTPAPI draft "The Idempotency-Key HTTP
//! Header Field" (draft-ietf-httpapi-idempotency-key-header-07), whose behaviour comes from
//! Stripe's: the first request with a key runs and its final response is stored; a repeat
//! gets that response again, marked `Idempotent-Replayed: true`, and the service does not
//! run twice.
//!
//! ```no_run
//! use axum::{Router, middleware, routing::post};
//! use idem_runtime::http::{Fingerprint, IdempotencyLayer}; // `idem::http` through idem-tools
//!
//! # async fn create_invoice() -> &'static str { "" }
//! # async fn authenticate(request: axum::extract::Request, next: middleware::Next) -> axum::response::Response { next.run(request).await }
//! # fn caller_of(_: &axum::http::request::Parts) -> String { String::new() }
//! # async fn run() -> std::io::Result<()> {
//! let store = idem_runtime::SqliteStore::open("billing-keys.db").expect("the key store opens");
//! let keys = IdempotencyLayer::new(store)
//!     .fingerprint(Fingerprint::json_fields(["customer", "amount"])) // default: the whole body
//!     .scope(|request| caller_of(request)); // default: one scope for all
//! let app: Router = Router::new()
//!     .route("/v1/invoices", post(create_invoice))
//!     .layer(keys)
//!     .layer(middleware::from_fn(authenticate)); // outer layers run first: auth, then the key
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! axum::serve(listener, app).await
//! # }
//! ```
//!
//! The repository's `examples/billing_service.rs` is a billing API that agents call: its
//! client gives up after 100 ms, retries into a `409` with `Retry-After`, then gets the
//! replay; the same key with another amount is a `422`, and another caller's identical key
//! makes its own invoice.
//!
//! ```sh
//! cargo run -p idem-examples --features http --bin billing_service              # the agent's retries, played out
//! cargo run -p idem-examples --features http --bin billing_service -- --serve   # serve on 127.0.0.1:3000 for curl
//! ```
//!
//! # What it answers
//!
//! For a request whose method the layer applies to (POST and PATCH unless
//! [`methods`](IdempotencyLayer::methods) says otherwise); other methods pass through
//! untouched. The layer's own answers are `application/problem+json` (RFC 9457) with
//! `type`, `title`, `status` and `detail`; `type` is one of the [problem
//! types](#problem-types) below.
//!
//! | Situation | Status | Body |
//! |---|---|---|
//! | No `Idempotency-Key` (unless [`key_optional`](IdempotencyLayer::key_optional), which lets it through unprotected) | `400` | problem `key-missing` |
//! | Two or more `Idempotency-Key` fields | `400` | problem `key-repeated` |
//! | An empty key (`""`, or an empty field) | `400` | problem `key-empty` |
//! | A comma in the key | `400` | problem `key-comma` |
//! | More than 255 characters | `400` | problem `key-too-long` |
//! | Not a string (unterminated quote, a character outside printable ASCII, something after the closing quote) | `400` | problem `key-not-a-string` |
//! | A request body over [`max_body`](IdempotencyLayer::max_body) (1 MiB) | `413` | problem `body-too-large` |
//! | First request with the key | the service's | the service's response, as it sent it |
//! | Repeat while the first is processed | `409`, `Retry-After` | problem `request-in-progress` |
//! | Repeat after a final response (status below 500, see [`final_when`](IdempotencyLayer::final_when)) | the stored status | the stored body and headers, `Idempotent-Replayed: true` |
//! | Repeat after a response that was not final (5xx) | the service's | the request runs again: a 5xx released the key |
//! | The key with another method, path, query or body (its [fingerprint](Fingerprint)) | `422` | problem `key-reused` |
//! | The first request's outcome is unknown (its process died midway, its response could not be stored) | `409` | problem `outcome-unknown` |
//! | The store fails | `503`, `Retry-After: 1` | problem `store-unavailable`; the service does not run |
//! | Other methods (GET, PUT, DELETE, ...), with or without a key | the service's | the service's response, untouched |
//!
//! A key is the draft's Structured Field string, `Idempotency-Key: "8e03978e-40d5"`
//! (printable ASCII, `\"` and `\\` escaped). A bare key, `Idempotency-Key: 8e03978e-40d5`,
//! as Stripe's clients send it, reads as if it were quoted. Keys are exact: `Abc` and `abc`
//! are two keys. They are stored percent-encoded, as a tool's key fields are (not
//! normalized): `inv:1` is stored, and listed by `idem list`, as `inv%3A1`.
//!
//! # How it works
//!
//! Each keyed request is one call of an idem tool named after the layer
//! ([`name`](IdempotencyLayer::name), default `http`):
//!
//! - The body is read (up to `max_body`) and the request's fingerprint taken: method, path,
//!   and SHA-256 hashes of the query and of the body, or of selected JSON fields
//!   ([`Fingerprint::JsonFields`]). The key (with the caller's
//!   [`scope`](IdempotencyLayer::scope), hashed, in front) is reserved with it in the
//!   store, in the layer's [`namespace`](IdempotencyLayer::namespace), before the service
//!   runs.
//! - A request starts when its response future is first polled. From its first wait on
//!   (for its body, the store or the service), it goes on on a tokio task of its own: a
//!   client that disconnects does not cancel the request midway; a retry gets its
//!   response. A request answered without waiting, such as a replay from a memory store,
//!   is answered on the caller's task, with no task spawned. The reservation's lease
//!   (30 s) is renewed while it runs, for up to [`max_hold`](IdempotencyLayer::max_hold)
//!   (an hour).
//! - A final response is read whole, and its status, allow-listed headers
//!   ([`DEFAULT_REPLAY_HEADERS`]; never `Set-Cookie`, `Authorization` or framing headers)
//!   and body are stored for [`retain`](IdempotencyLayer::retain) (a week). The first
//!   client gets the response as the service sent it, every header included.
//! - A response that is not final releases the key. A service that fails (its `Err`) or
//!   answers a final response larger than `max_body` leaves the outcome unknown: the key
//!   is kept, and repeats get `outcome-unknown` until an operator settles it (`idem
//!   resolve --done`, or `idem resolve --release` to let it run again). A service that
//!   panics leaves its key reserved until its lease ends (repeats get
//!   `request-in-progress`), then unknown too.
//! - The span `execute_tool <name>`, the counters ([`metrics`](crate::telemetry::metrics)), the
//!   `metrics` facade and lifecycle events are a tool's.
//!
//! Any store serves: [`MemoryStore`](crate::MemoryStore),
//! [`SqliteStore`](crate::SqliteStore), or `PgStore` for many workers, which share keys
//! through it. The stored result is pinned JSON, which `idem show` prints and `idem
//! resolve http KEY --done '<json>'` takes, refusing anything else there (`http` is the
//! layer's [`namespace`](IdempotencyLayer::namespace) unless you name another):
//! `{"status": 201, "headers": [["content-type", "application/json"]], "body": "..."}`
//! (`"body_base64"` instead of `"body"` for a body that is not UTF-8). `idem resolve http
//! KEY --release` lets the request run again.
//!
//! The layer needs the request and response body types to be `From<Bytes>`, as axum's
//! `Body` and `http_body_util::Full<Bytes>` are: it reads the body to fingerprint it and
//! hands the service the same bytes.
//!
//! # Problem types
//!
//! Each problem's `type` is this page's address with its name as the fragment
//! (`https://docs.rs/idem-tools/latest/idem/http/index.html#key-missing`).
//!
//! ### key-missing
//! `400`: the request has no `Idempotency-Key`, and the layer requires one.
//! ### key-repeated
//! `400`: the request has more than one `Idempotency-Key` field.
//! ### key-empty
//! `400`: the key has no characters.
//! ### key-comma
//! `400`: the key has a comma, which would read as a list of keys.
//! ### key-too-long
//! `400`: the key has more than 255 characters.
//! ### key-not-a-string
//! `400`: the key is not a Structured Field string.
//! ### body-too-large
//! `413`: the request body is larger than `max_body`; nothing was run.
//! ### body-unreadable
//! `400`: the request body failed while it was read; nothing was run.
//! ### body-not-json
//! `400`: the fingerprint compares JSON fields and the body is not JSON; nothing was run.
//! ### key-reused
//! `422`: the key was first used with another method, path, query or body; the detail
//! names which.
//! ### request-in-progress
//! `409`: the first request with the key is being processed; `Retry-After` says when to
//! ask again: the retry hint ([`Running::retry_after`](crate::error::Running::retry_after)) in
//! whole seconds, rounded up (the header has no fractions), so at least 1 even under a
//! lease shorter than 3 s.
//! ### outcome-unknown
//! `409`: the first request started and its outcome could not be recorded; it is not run
//! again until an operator settles it.
//! ### response-failed
//! `502`: the service's final response failed while it was read; its outcome is unknown.
//! ### store-unavailable
//! `503`: the key store failed; nothing was run. Retry with the same key.
//! ### record-unreadable
//! `500`: the stored response does not read back; nothing was run.
//! ### scope-missing
//! `500`: [`scope`](IdempotencyLayer::scope) gave an empty scope; nothing was run.
//! ### shutting-down
//! `503`: the runtime shut down while the request was processed; its outcome is unknown.
//! ### idempotency-failed
//! `500`: any other failure of idem itself; nothing was run.

mod answer;
mod fingerprint;
mod key_header;
mod layer;
mod problem;
mod service;
mod settings;
mod stored;

pub use fingerprint::Fingerprint;
pub use key_header::{IDEMPOTENCY_KEY, IDEMPOTENT_REPLAYED, KeyRule, MAX_KEY_CHARS};
pub use layer::{IdempotencyLayer, NEVER_REPLAYED};
pub use problem::PROBLEM_TYPE_BASE;
pub use service::{Idempotency, ResponseFuture};
pub use settings::{DEFAULT_MAX_BODY, DEFAULT_METHODS, DEFAULT_NAME, DEFAULT_REPLAY_HEADERS, below_500};
