//! Compile-error tests for `#[idempotent]` and `#[idem::status_tools]`: one mistake per
//! file in `fail/` (and `rmcp/` for mistakes that need rmcp), each with the diagnostic a
//! user sees in the `.stderr` beside it. Regenerate with
//! `TRYBUILD=overwrite cargo test -p idem-ui-tests` and review the diff.
//!
//! Only failures live here, so trybuild type-checks them (`cargo check`) and never builds
//! or links its dependencies. The accepted forms are compiled and run by the root
//! package's `tests/accepted.rs`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("fail/*.rs");
    t.compile_fail("rmcp/*.rs");
}
