//! The layer: a builder of its settings, and the tower `Layer` that wraps a service.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::header::{self, HeaderName};
use http::request::Parts;
use http::{Method, StatusCode};

use super::Fingerprint;
use super::service::Idempotency;
use super::settings::{ScopeFn, Settings, Shared};

/// Headers never stored, whatever [`IdempotencyLayer::replay_headers`] lists (listing one
/// panics when the layer is built): credentials belong to the first caller (`Set-Cookie`,
/// `Authorization`, `Proxy-Authorization`), and framing is the server's, for each
/// response (`Content-Length`, `Transfer-Encoding`, `Connection`, `Trailer`, `Upgrade`).
pub const NEVER_REPLAYED: [HeaderName; 8] = [
    header::SET_COOKIE,
    header::AUTHORIZATION,
    header::PROXY_AUTHORIZATION,
    header::CONTENT_LENGTH,
    header::TRANSFER_ENCODING,
    header::CONNECTION,
    header::TRAILER,
    header::UPGRADE,
];

/// A `tower` layer that honours `Idempotency-Key` on the methods it applies to; see the
/// [module docs](super) for what it answers in each situation.
pub struct IdempotencyLayer<St> {
    pub(crate) shared: Arc<Shared<St>>,
}

impl<St> IdempotencyLayer<St> {
    /// A layer over `store` (a [`MemoryStore`](crate::MemoryStore), an
    /// [`SqliteStore`](crate::SqliteStore), a `PgStore`, or any
    /// [`Store`](crate::store::Store), also behind `Arc`), with the defaults: it
    /// applies to POST and PATCH, requires a key on them, fingerprints the whole body,
    /// treats every status below 500 as final, shares keys across callers, and names its
    /// records and telemetry `http`.
    pub fn new(store: St) -> Self {
        let settings = Settings::defaults();
        IdempotencyLayer { shared: Arc::new(Shared::new(Arc::new(store), settings)) }
    }

    fn with(self, change: impl FnOnce(&mut Settings)) -> Self {
        let mut settings = self.shared.settings.clone();
        change(&mut settings);
        let store = Arc::clone(&self.shared.store);
        IdempotencyLayer { shared: Arc::new(Shared::new(store, settings)) }
    }

    /// The layer's name in telemetry: the span `execute_tool <name>`, `gen_ai.tool.name`,
    /// [`metrics()`](crate::telemetry::metrics). Default `http`.
    ///
    /// A layer becomes an idem tool at its first request (every route it wraps shares it),
    /// with a span callsite and counters kept for the life of the process: build layers
    /// at startup, not per request.
    pub fn name(self, name: impl Into<String>) -> Self {
        let name = name.into();
        self.with(|settings| settings.name = name)
    }

    /// The records' namespace in the store: `idem list --namespace <namespace>` lists
    /// them. Default `http`. Layers that share a namespace share their keys, as one
    /// service's routes do (a key reused on another path is a `422`); give services
    /// that share a store namespaces of their own.
    pub fn namespace(self, namespace: impl Into<String>) -> Self {
        let namespace = namespace.into();
        self.with(|settings| settings.namespace = namespace)
    }

    /// The methods the layer applies to (default POST and PATCH); requests with other
    /// methods pass through untouched, with or without a key.
    pub fn methods(self, methods: impl IntoIterator<Item = Method>) -> Self {
        let methods = methods.into_iter().collect();
        self.with(|settings| settings.methods = methods)
    }

    /// Lets requests without an `Idempotency-Key` through, unprotected, instead of
    /// answering them `400` (`key-missing`). A key that is present is still checked.
    pub fn key_optional(self) -> Self {
        self.with(|settings| settings.key_required = false)
    }

    /// What of the body a repeat must match (default: all of it).
    pub fn fingerprint(self, fingerprint: Fingerprint) -> Self {
        self.with(|settings| settings.fingerprint = fingerprint)
    }

    /// Which responses are final: stored and replayed to every repeat. Default
    /// [`below_500`](super::below_500). A response that is not final releases the key, so the client may
    /// retry with it, and reaches the client as the service sent it.
    pub fn final_when(self, is_final: fn(StatusCode) -> bool) -> Self {
        self.with(|settings| settings.is_final = is_final)
    }

    /// Keys per caller: `scope` names whose request this is (the authenticated
    /// principal, from an extension an auth layer set), and two callers' keys never meet.
    /// The scope is stored hashed, as a tool's `scope = ...`: `idem list --scope <scope>`
    /// lists one caller's records. A request whose scope is empty is answered `500`
    /// (`scope-missing`) and not run.
    pub fn scope(self, scope: impl Fn(&Parts) -> String + Send + Sync + 'static) -> Self {
        let scope: Arc<ScopeFn> = Arc::new(scope);
        self.with(|settings| settings.scope = Some(scope))
    }

    /// The response headers stored and replayed (default [`DEFAULT_REPLAY_HEADERS`](super::DEFAULT_REPLAY_HEADERS)).
    ///
    /// # Panics
    ///
    /// On a header of [`NEVER_REPLAYED`] (`Set-Cookie`, `Authorization`, ...): a replay
    /// must never hand one caller's credentials to another.
    pub fn replay_headers(self, headers: impl IntoIterator<Item = HeaderName>) -> Self {
        let headers: Vec<HeaderName> = headers.into_iter().collect();
        if let Some(never) = headers.iter().find(|name| NEVER_REPLAYED.contains(name)) {
            panic!("idem: {never} is never stored for replays (see idem::http::NEVER_REPLAYED); leave it out");
        }
        self.with(|settings| settings.replay_headers = headers)
    }

    /// How long a reservation holds without renewal (default 30 s). A request still
    /// running renews it every third of the lease, for up to [`max_hold`](Self::max_hold).
    pub fn lease(self, lease: Duration) -> Self {
        self.with(|settings| settings.lease = lease)
    }

    /// How long a running request's lease is renewed at most (default an hour).
    pub fn max_hold(self, max_hold: Duration) -> Self {
        self.with(|settings| settings.max_hold = max_hold)
    }

    /// How long a final response is kept for replays (default a week).
    pub fn retain(self, retain: Duration) -> Self {
        self.with(|settings| settings.retain = retain)
    }

    /// The largest request body read (a larger one is `413`, `body-too-large`, and not
    /// run) and the largest response body stored. Default [`DEFAULT_MAX_BODY`](super::DEFAULT_MAX_BODY).
    pub fn max_body(self, bytes: usize) -> Self {
        self.with(|settings| settings.max_body = bytes)
    }
}

impl<St> Clone for IdempotencyLayer<St> {
    fn clone(&self) -> Self {
        IdempotencyLayer { shared: Arc::clone(&self.shared) }
    }
}

impl<St> fmt::Debug for IdempotencyLayer<St> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let settings = &self.shared.settings;
        f.debug_struct("IdempotencyLayer")
            .field("name", &settings.name)
            .field("namespace", &settings.namespace)
            .field("methods", &settings.methods)
            .field("key_required", &settings.key_required)
            .field("fingerprint", &settings.fingerprint)
            .field("scoped", &settings.scope.is_some())
            .field("replay_headers", &settings.replay_headers)
            .field("lease", &settings.lease)
            .field("max_body", &settings.max_body)
            .finish_non_exhaustive()
    }
}

impl<S, St> tower_layer::Layer<S> for IdempotencyLayer<St> {
    type Service = Idempotency<S, St>;

    fn layer(&self, inner: S) -> Self::Service {
        Idempotency { inner, shared: Arc::clone(&self.shared) }
    }
}
