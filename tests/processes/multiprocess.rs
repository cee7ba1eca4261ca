//! Several processes share one SQLite file and race on the same keys: exactly one effect
//! per key. The children are this test binary run again; they start together when the
//! parent closes their standard input, and each records its effects in a ledger database
//! that the parent counts afterwards.

use crate::support;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::LazyLock;

use idem::idempotent;

const PROCESSES: usize = 4;
const ROUNDS: usize = 3;
const KEYS: usize = 100;
const CHILD_ENV: &str = "IDEM_TEST_MULTIPROCESS_DIR";

static DIR: LazyLock<PathBuf> = LazyLock::new(|| std::env::var_os(CHILD_ENV).expect("run by the parent").into());
static STORE: LazyLock<idem::SqliteStore> = LazyLock::new(|| idem::SqliteStore::open(DIR.join("idem.db")).unwrap());

fn ledger(dir: &Path) -> rusqlite::Connection {
    let ledger = rusqlite::Connection::open(dir.join("ledger.db")).unwrap();
    ledger.busy_timeout(std::time::Duration::from_secs(30)).unwrap();
    ledger.pragma_update(None, "journal_mode", "WAL").unwrap();
    ledger.execute("CREATE TABLE IF NOT EXISTS effects (key TEXT NOT NULL, pid INTEGER NOT NULL)", []).unwrap();
    ledger
}

/// The effect: one row in the ledger, written by whichever process runs the body.
#[idempotent(key = "effect:<round>/<key>", store = *STORE)]
fn record_effect(round: usize, key: usize) -> Result<u32, idem::Error> {
    let pid = std::process::id();
    ledger(&DIR).execute("INSERT INTO effects VALUES (?1, ?2)", (format!("{round}/{key}"), pid)).unwrap();
    Ok(pid)
}

#[test]
#[ignore = "a child process of `processes_sharing_one_file_run_each_key_once`"]
fn child_process() {
    let round: usize = std::env::var("IDEM_TEST_ROUND").unwrap().parse().unwrap();
    // Wait for the start signal: the parent closes our stdin once every child is ready.
    std::io::stdin().read_to_end(&mut Vec::new()).unwrap();
    for key in 0..KEYS {
        match record_effect(round, key) {
            Ok(_) => {}
            Err(e) if e.code() == idem::ErrorCode::InProgress => {}
            Err(e) => panic!("process {}: key {key}: {e}", std::process::id()),
        }
    }
}

#[test]
fn processes_sharing_one_file_run_each_key_once() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger(dir.path());
    for round in 0..ROUNDS {
        let mut children: Vec<_> = (0..PROCESSES)
            .map(|_| {
                support::rerun(module_path!(), "child_process")
                    .env(CHILD_ENV, dir.path())
                    .env("IDEM_TEST_ROUND", round.to_string())
                    .stdin(Stdio::piped())
                    .stdout(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in &mut children {
            drop(child.stdin.take());
        }
        for child in children {
            let status = child.wait_with_output().unwrap().status;
            assert!(status.success(), "a child process failed: {status}");
        }
    }
    let (keys, effects, repeated): (i64, i64, i64) = ledger
        .query_row(
            "SELECT count(*), coalesce(sum(n), 0), coalesce(sum(n > 1), 0)
             FROM (SELECT key, count(*) AS n FROM effects GROUP BY key)",
            [],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .unwrap();
    let writers: i64 = ledger.query_row("SELECT count(DISTINCT pid) FROM effects", [], |row| row.get(0)).unwrap();
    eprintln!("{keys} keys, {effects} effects, {writers} processes ran bodies");
    assert_eq!(repeated, 0, "keys with more than one effect");
    assert_eq!(keys as usize, ROUNDS * KEYS, "every key ran once");
    assert_eq!(effects, keys);
}
