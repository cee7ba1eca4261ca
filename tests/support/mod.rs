//! What the test binaries share: a stand-in billing tool set ([`billing`], re-exported
//! here), the PostgreSQL and Redis test servers, an rmcp server in this process, a store that always fails, stable
//! identifiers, and how a test runs this binary again as a child process.
//!
//! Each binary compiles all of it and uses some of it.

#![allow(dead_code)]

pub mod billing;
pub mod broken_store;
#[cfg(feature = "rmcp")]
pub mod mcp;
pub mod postgres;
#[cfg(feature = "redis")]
pub mod redis;
#[cfg(feature = "redis")]
pub mod redis_cluster;
pub mod stable_identifiers;

#[allow(unused_imports)] // not every binary uses the billing tools
pub use billing::*;

use std::process::Command;

/// The name libtest knows the test `test` of the module `module` by (`module_path!()` of
/// the test's module): its path without the binary's name, as `--exact` wants it.
pub fn test_name(module: &str, test: &str) -> String {
    match module.split_once("::") {
        Some((_, path)) => format!("{path}::{test}"),
        None => test.to_owned(),
    }
}

/// This test binary run again as a child process that runs just the ignored test `test` of
/// `module` (its `module_path!()`), printing as it goes.
pub fn rerun(module: &str, test: &str) -> Command {
    let mut command = Command::new(std::env::current_exe().expect("the test binary"));
    command.args([&test_name(module, test), "--exact", "--ignored", "--nocapture", "--test-threads=1"]);
    command
}
