//! Helpers for testing tools and stores built on idem (feature `testing`).
//!
//! Enable it where your tests build, as a dev-dependency:
//!
//! ```toml
//! [dev-dependencies]
//! idem-tools = { version = "0.1", features = ["testing"] }
//! ```
//!
//! Not covered by semver: the conformance suite gains checks as the stores promise more,
//! so a store that passed may fail a newer suite. Production builds without the feature do
//! not compile this module, and no bundled store implements its traits there.

pub mod conformance;
pub mod matrix;
