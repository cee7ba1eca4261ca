//! What a layer is: its settings, shared by the layer and every service it wraps, and the
//! idem tool it becomes at its first request. The builder ([`IdempotencyLayer`](super::IdempotencyLayer)) changes
//! them; the service ([`Idempotency`](super::Idempotency)) reads them.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use http::header::{self, HeaderName};
use http::request::Parts;
use http::{Method, StatusCode};

use super::Fingerprint;
use crate::call::{Claim, Tool};
use crate::key::{FieldMode, Segment};
use crate::observe::{Instruments, NamedAtRuntime, SpanCallsite};
use crate::store::{DEFAULT_LEASE, DEFAULT_MAX_HOLD, DEFAULT_RETAIN};

/// The default methods the layer applies to: the draft's non-idempotent ones.
pub const DEFAULT_METHODS: [Method; 2] = [Method::POST, Method::PATCH];

/// The headers a replay carries by default, besides `Idempotent-Replayed: true`:
/// `Content-Type`, `Content-Encoding`, `Content-Language`, `Content-Location`, `Location`,
/// `ETag`, `Last-Modified` and `Link`.
pub const DEFAULT_REPLAY_HEADERS: [HeaderName; 8] = [
    header::CONTENT_TYPE,
    header::CONTENT_ENCODING,
    header::CONTENT_LANGUAGE,
    header::CONTENT_LOCATION,
    header::LOCATION,
    header::ETAG,
    header::LAST_MODIFIED,
    header::LINK,
];

/// The default limit on a request body and on a stored response body: 1 MiB.
pub const DEFAULT_MAX_BODY: usize = 1 << 20;

/// The default name and namespace of a layer's records and telemetry.
pub const DEFAULT_NAME: &str = "http";

/// `IdempotencyLayer::scope`: whose request this is.
pub(crate) type ScopeFn = dyn Fn(&Parts) -> String + Send + Sync;

/// A layer's store and settings, which every service it wraps shares.
pub(crate) struct Shared<St> {
    pub(crate) store: Arc<St>,
    pub(crate) settings: Settings,
    /// The layer as an idem tool, built at its first request (after the builder calls).
    tool: OnceLock<&'static Tool>,
}

/// What the builder set; see each setting's method on `IdempotencyLayer`.
#[derive(Clone)]
pub(crate) struct Settings {
    pub(crate) name: String,
    pub(crate) namespace: String,
    pub(crate) methods: Vec<Method>,
    pub(crate) key_required: bool,
    pub(crate) fingerprint: Fingerprint,
    pub(crate) is_final: fn(StatusCode) -> bool,
    pub(crate) scope: Option<Arc<ScopeFn>>,
    pub(crate) replay_headers: Vec<HeaderName>,
    pub(crate) lease: Duration,
    pub(crate) max_hold: Duration,
    pub(crate) retain: Duration,
    pub(crate) max_body: usize,
}

/// The default of [`IdempotencyLayer::final_when`](super::IdempotencyLayer::final_when): every status below 500.
pub fn below_500(status: StatusCode) -> bool {
    !status.is_server_error()
}

impl Settings {
    /// What [`IdempotencyLayer::new`](super::IdempotencyLayer::new) starts from.
    pub(crate) fn defaults() -> Settings {
        Settings {
            name: DEFAULT_NAME.to_owned(),
            namespace: DEFAULT_NAME.to_owned(),
            methods: DEFAULT_METHODS.to_vec(),
            key_required: true,
            fingerprint: Fingerprint::Body,
            is_final: below_500,
            scope: None,
            replay_headers: DEFAULT_REPLAY_HEADERS.to_vec(),
            lease: DEFAULT_LEASE,
            max_hold: DEFAULT_MAX_HOLD,
            retain: DEFAULT_RETAIN,
            max_body: DEFAULT_MAX_BODY,
        }
    }
}

impl<St> Shared<St> {
    pub(crate) fn new(store: Arc<St>, settings: Settings) -> Self {
        Shared { store, settings, tool: OnceLock::new() }
    }

    /// The layer as an idem tool: built once, leaked for the process's life (its span
    /// callsite must be `'static`).
    pub(crate) fn tool(&self) -> &'static Tool {
        self.tool.get_or_init(|| {
            let settings = &self.settings;
            static SCOPED: [Segment; 3] = [
                Segment::Field("scope", FieldMode { normalize: false, hash: true }),
                Segment::Literal("/"),
                Segment::Field("key", FieldMode { normalize: false, hash: false }),
            ];
            static UNSCOPED: [Segment; 1] = [Segment::Field("key", FieldMode { normalize: false, hash: false })];
            let leak = |text: &str| -> &'static str { Box::leak(text.to_owned().into_boxed_str()) };
            let name = leak(&settings.name);
            let tool = Tool {
                name,
                namespace: leak(&settings.namespace),
                namespace_given: true,
                site: name,
                template: if settings.scope.is_some() { &SCOPED } else { &UNSCOPED },
                compare: &super::fingerprint::FIELDS,
                compare_written: &super::fingerprint::FIELDS,
                json_names: crate::json_names::JsonNames::none(),
                status_fn: name,
                lease: settings.lease,
                max_hold: settings.max_hold,
                retain: settings.retain,
                serving: None,
                approval: None,
                budget: None,
                timeout: None,
                instruments: Instruments::new(SpanCallsite::Runtime(NamedAtRuntime::leak(name))),
                claim: Claim::new(),
            };
            Box::leak(Box::new(tool))
        })
    }
}
