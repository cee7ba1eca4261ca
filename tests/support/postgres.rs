//! The PostgreSQL test server, for every test binary with PostgreSQL tests: its URL from
//! IDEM_TEST_DATABASE_URL, and fresh schema names, so that runs and tests never share
//! records.

#![allow(dead_code)]

use std::io::Write;

/// The test server's URL, or `None` after saying loudly (past the test harness's capture)
/// that `test` is skipped. Under CI a missing URL fails the test: CI must run them.
pub fn test_url(test: &str) -> Option<String> {
    match std::env::var("IDEM_TEST_DATABASE_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var("CI").is_ok_and(|ci| !ci.is_empty() && ci != "false" && ci != "0") => {
            panic!("{test}: IDEM_TEST_DATABASE_URL is not set under CI; CI must run the PostgreSQL tests (see .ci/run)")
        }
        _ => {
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test}: set IDEM_TEST_DATABASE_URL (`bash .ci/pg start DIR` prints one)"
            );
            None
        }
    }
}

/// A schema name no other run or test uses: `<prefix>_<pid>_<nanoseconds>`.
pub fn fresh_schema(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("{prefix}_{}_{nanos}", std::process::id())
}
