//! Compile-error tests for `#[idempotent]`: one mistake per file in `tests/ui/fail`, each
//! with the diagnostic a user sees in the `.stderr` beside it; accepted forms in
//! `tests/ui/pass`. Regenerate with `TRYBUILD=overwrite cargo test --test ui` and review
//! the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
