//! Compile-error tests for `#[idempotent]`: one mistake per file in `tests/ui/fail`, each
//! with the diagnostic a user sees in the `.stderr` beside it; accepted forms in
//! `tests/ui/pass`. Regenerate with `TRYBUILD=overwrite cargo test --test ui` and review
//! the diff.

/// Cases whose diagnostics list serde's implementations, which rig changes: rig-core turns
/// on serde_json's `raw_value` feature, adding `&RawValue` to the list. With the `rig`
/// feature they run from copies in `tests/ui/rig-serde`, whose `.stderr` is regenerated
/// with `TRYBUILD=overwrite cargo test --all-features --test ui`.
const SERDE_LISTINGS: [&str; 2] = ["keep-error-not-serializable.rs", "result-not-serializable.rs"];

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    if cfg!(feature = "rig") {
        let mut cases: Vec<_> =
            std::fs::read_dir("tests/ui/fail").unwrap().map(|entry| entry.unwrap().path()).collect();
        cases.sort();
        for case in cases.iter().filter(|path| path.extension().is_some_and(|ext| ext == "rs")) {
            let name = case.file_name().unwrap().to_str().unwrap();
            match SERDE_LISTINGS.contains(&name) {
                true => t.compile_fail(format!("tests/ui/rig-serde/{name}")),
                false => t.compile_fail(case),
            }
        }
    } else {
        t.compile_fail("tests/ui/fail/*.rs");
    }
    t.pass("tests/ui/pass/*.rs");
    // rmcp mistakes, with rmcp there to make them (`cargo test --all-features`).
    #[cfg(feature = "rmcp")]
    t.compile_fail("tests/ui/rmcp/*.rs");
}
