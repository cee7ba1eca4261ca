//! Processes that open a new SQLite file at the same moment all get the store.
//!
//! SQLite answers `PRAGMA journal_mode=WAL` on a fresh file with SQLITE_BUSY, without
//! calling the busy handler, when another connection is switching it at the same time; an
//! open that tried once failed at once with "database is locked". Here several processes
//! (this test binary run again) open each of many fresh files together: before every file
//! each child says it is ready, and the parent lets them all go at once. Every open must
//! succeed and give a working store, which the parent checks by counting each child's
//! reservation in every file.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use idem::SqliteStore;
use idem::store::block_on;
use idem::store::{RecordId, Reservation, Reserve, Store};

const PROCESSES: usize = 5;
const FILES: usize = 200;
const CHILD_ENV: &str = "IDEM_TEST_SQLITE_OPEN_DIR";
const NAMESPACE: &str = "sqlite-open";

fn fresh_file(dir: &std::path::Path, file: usize) -> PathBuf {
    dir.join(format!("fresh-{file}.db"))
}

#[test]
#[ignore = "a child process of `processes_opening_fresh_files_together_all_get_the_store`"]
fn sqlite_open_child() {
    let dir = PathBuf::from(std::env::var_os(CHILD_ENV).expect("run by the parent"));
    let pid = std::process::id().to_string();
    let mut go = BufReader::new(std::io::stdin());
    let mut out = std::io::stdout();
    for file in 0..FILES {
        writeln!(out, "READY {file}").unwrap();
        out.flush().unwrap();
        let mut line = String::new();
        assert_eq!(go.read_line(&mut line).unwrap(), 3, "the parent went away");
        let opened = SqliteStore::open(fresh_file(&dir, file)).and_then(|store| {
            let id = RecordId { namespace: NAMESPACE, key: &pid };
            block_on(store.reserve(Reserve { id, request: "{}", lease: Duration::from_secs(3600) }))
        });
        match opened {
            Ok(Reservation::Acquired { .. }) => {}
            Ok(other) => writeln!(out, "FAILED {file}: this process's key was there already: {other:?}").unwrap(),
            Err(error) => writeln!(out, "FAILED {file}: {error}").unwrap(),
        }
    }
    writeln!(out, "DONE").unwrap();
}

#[test]
fn processes_opening_fresh_files_together_all_get_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let mut children: Vec<_> = (0..PROCESSES)
        .map(|_| {
            Command::new(std::env::current_exe().unwrap())
                .args(["sqlite_open::sqlite_open_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
                .env(CHILD_ENV, dir.path())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut lines: Vec<_> = children.iter_mut().map(|c| BufReader::new(c.stdout.take().unwrap()).lines()).collect();
    let mut stdins: Vec<_> = children.iter_mut().map(|c| c.stdin.take().unwrap()).collect();
    let mut failures = Vec::new();
    // Reads one child's lines up to `until` (the harness's own lines are skipped).
    let mut read_until = |lines: &mut std::io::Lines<BufReader<std::process::ChildStdout>>, until: &str| loop {
        let line = lines.next().unwrap_or_else(|| panic!("a child ended before {until:?}")).unwrap();
        // The harness writes "test sqlite_open_child ... " before the test's first line.
        if line.ends_with(until) {
            break;
        }
        if let Some(at) = line.find("FAILED") {
            failures.push(line[at..].to_owned());
        }
    };
    for file in 0..FILES {
        // The barrier: every child is about to open this fresh file; let them all go.
        for child in &mut lines {
            read_until(child, &format!("READY {file}"));
        }
        for stdin in &mut stdins {
            stdin.write_all(b"go\n").unwrap();
            stdin.flush().unwrap();
        }
    }
    for child in &mut lines {
        read_until(child, "DONE");
    }
    for child in children {
        let status = child.wait_with_output().unwrap().status;
        assert!(status.success(), "a child process failed: {status}");
    }
    assert!(failures.is_empty(), "{} of {} opens failed: {failures:#?}", failures.len(), PROCESSES * FILES);
    // Every open gave a working store: each process's reservation is in every file.
    for file in 0..FILES {
        let conn = rusqlite::Connection::open(fresh_file(dir.path(), file)).unwrap();
        let reserved: i64 = conn
            .query_row("SELECT count(*) FROM idem_records WHERE namespace = ?1", [NAMESPACE], |row| row.get(0))
            .unwrap();
        assert_eq!(reserved, PROCESSES as i64, "fresh-{file}.db: one reservation per process");
    }
}
