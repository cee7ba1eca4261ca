//! Helpers for testing tools and stores built on idem.

pub mod conformance;
pub mod matrix;
