//! The runtime of [idem-tools](https://docs.rs/idem-tools): key building, outcomes and errors, the
//! store protocol and the bundled stores, status reads, telemetry and testing helpers.
//!
//! Use it through the facade, the package `idem-tools` (its library is `idem`), which
//! re-exports everything here next to the `#[idempotent]` attribute. The crate root holds
//! what a tool author uses daily; the rest is in the modules `error`, `store`, `telemetry`,
//! `frameworks`, `http` (feature `http`) and `testing` (feature `testing`).

#![warn(unreachable_pub)] // library code only: tests and benches keep their `pub` items
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod approval;
pub mod budget;
mod call;
mod canonical;
mod compare;
mod describe;
mod difference;
mod json_names;
mod key;
mod observe;
mod output;
mod scope;
mod status;

pub mod error;
pub mod frameworks;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;
pub mod store;
pub mod telemetry;
// The crate's own tests run the conformance suite on the bundled stores with or without it.
#[cfg(any(test, feature = "testing"))]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;

#[doc(hidden)]
pub mod __private;

pub use call::{Abandoned, Reconciled, cancel_requested, current_key, progress};
pub use error::{Error, ErrorCode};
pub use key::{Key, KeyPart};
pub use status::Status;
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use store::PgStore;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use store::RedisStore;
pub use store::{MemoryStore, SqliteStore};
