//! The runtime of [idem-tools](https://docs.rs/idem-tools): key building, outcomes and errors, the
//! store trait and the bundled stores, status reads and testing helpers.
//!
//! Use it through the facade, the package `idem-tools` (its library is `idem`), which
//! re-exports everything here next to the `#[idempotent]` attribute.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod call;
mod canonical;
mod compare;
mod default_store;
mod difference;
mod error;
mod key;
mod observe;
mod output;
mod scope;
mod status;

pub mod frameworks;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;

pub mod store;
// The crate's own tests run the conformance suite on the bundled stores with or without it.
#[cfg(any(test, feature = "testing"))]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;

/// Telemetry beyond the per-call event: the names idem's span and metrics use, how keys
/// appear in them, the `metrics` facade (feature `metrics`) and lifecycle events for code.
pub mod telemetry {
    pub use crate::observe::conventions;
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    pub use crate::observe::describe_metrics;
    pub use crate::observe::{
        AbandonedBy, Happened, KeyInTelemetry, LifecycleEvent, Observer, ObserverId, Phase, Verdict, add_observer,
        key_hash, remove_observer, set_key_in_telemetry,
    };
}

#[doc(hidden)]
pub mod __private;

pub use call::{
    Abandoned, DEFAULT_LEASE, DEFAULT_MAX_HOLD, DEFAULT_RETAIN, Reconciled, cancel_requested, current_key, progress,
};
pub use default_store::{
    DEFAULT_STORE_ENV, DEFAULT_STORE_FILE, default_store, default_store_path, set_default_store_path,
};
pub use difference::FieldDifference;
pub use error::{Error, ErrorCode, Running};
pub use key::{Key, KeyPart, normalize, scope_prefix};
pub use observe::{Observation, ObserveFuture, Outcome, ToolMetrics, metrics, observe, observe_async};
pub use output::{REPLAYED_FIELD, ToolOutput, replay_value};
pub use status::Status;
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use store::PgStore;
pub use store::{AsyncStore, MemoryStore, SqliteStore, Store};
