//! Compile-error tests for `#[idempotent]` and `#[idem::status_tools]`: one mistake per
//! file in `fail/` (and `rmcp/` and `adk/` for mistakes that need rmcp or ADK-Rust), each with the diagnostic a
//! user sees in the `.stderr` beside it. Regenerate with
//! `TRYBUILD=overwrite cargo test -p idem-ui-tests` and review the diff.
//!
//! Only failures live here, so trybuild type-checks them (`cargo check`) and never builds
//! or links its dependencies. The accepted forms are compiled and run by the root
//! package's `tests/calls/accepted.rs`.

#[test]
fn ui() {
    // Type-checking links nothing, so trybuild's project needs SQLite's declarations, not
    // SQLite compiled from C (the longest step of its build). With this variable
    // libsqlite3-sys emits the same bundled bindings and a link request that `cargo check`
    // never acts on. trybuild's cargo inherits the variable.
    // SAFETY: this test is the binary's only one, and nothing else reads the environment
    // while it is set.
    unsafe { std::env::set_var("LIBSQLITE3_SYS_USE_PKG_CONFIG", "1") };
    let t = trybuild::TestCases::new();
    t.compile_fail("fail/*.rs");
    t.compile_fail("rmcp/*.rs");
    t.compile_fail("adk/*.rs");
}
