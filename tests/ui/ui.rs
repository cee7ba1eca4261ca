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
    one_set_of_flags_for_both_passes();
    let t = trybuild::TestCases::new();
    t.compile_fail("fail/*.rs");
    t.compile_fail("rmcp/*.rs");
    t.compile_fail("adk/*.rs");
}

/// trybuild type-checks its project's dependencies with one set of rustc flags, then the
/// cases with the same flags plus `--diagnostic-width=140`. Cargo keeps an artifact per set
/// of flags, so a cold run checked all of the project's 145 dependencies twice (about 20 s
/// of the 70 s this test took). Cargo prefers `CARGO_ENCODED_RUSTFLAGS` to the flags
/// trybuild passes as configuration, so giving it the second set here makes both passes one.
/// These are trybuild 1.0.122's flags (`src/rustflags.rs`, and `build_all_tests` in
/// `src/cargo.rs`), which is why Cargo.toml pins that version: a trybuild that changed its
/// flags would get these instead. Flags the user set (for coverage, say) are left alone, and
/// trybuild then checks twice as before.
fn one_set_of_flags_for_both_passes() {
    if std::env::var_os("RUSTFLAGS").is_some() || std::env::var_os("CARGO_ENCODED_RUSTFLAGS").is_some() {
        return;
    }
    let flags = ["--cfg", "trybuild", "--verbose", "-A", "dead_code", "--diagnostic-width=140"];
    // SAFETY: as above, the binary's only test, before trybuild starts.
    unsafe { std::env::set_var("CARGO_ENCODED_RUSTFLAGS", flags.join("\x1f")) };
}
