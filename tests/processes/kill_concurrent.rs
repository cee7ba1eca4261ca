//! SIGKILL while many threads write one SQLite store (issue 16): a child process (this
//! test binary run again) makes first calls from 8 threads, which take turns at writing
//! (the store's writer queue), and prints each call's key right after the tool returned;
//! one more call blocks inside its body. The parent kills the child with SIGKILL once it
//! has seen enough keys and the blocked body, reopens the file, and checks that every
//! call that returned is completed and that the blocked call's reservation is there: what
//! a tool answered was committed before it answered, and a reservation before its body
//! started, however many callers shared the commits.
//!
//! A SIGKILL loses what the process had not written to the file; what it had written
//! survives in the operating system's cache. Syncs (what keeps a commit across a power
//! loss) are counted by the bench (`IDEM_BENCH_ONLY=first-calls cargo bench`), not here.

use crate::support;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{LazyLock, OnceLock};
use std::time::{Duration, Instant};

use idem::{SqliteStore, Status, idempotent};

const CHILD_ENV: &str = "IDEM_TEST_KILL_CONCURRENT_CHILD";
const THREADS: u64 = 8;
/// The key whose body blocks until the child is killed.
const BLOCKED: u64 = 1_000_000;
/// Returned calls the parent waits for before it kills.
const RETURNED: usize = 200;

static DIR: OnceLock<PathBuf> = OnceLock::new();
static STORE: LazyLock<SqliteStore> =
    LazyLock::new(|| SqliteStore::open(DIR.get().expect("the store's directory is set").join("idem.db")).unwrap());

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "@@{line}").unwrap();
    out.flush().unwrap();
}

#[idempotent(key = "job:<n>", store = *STORE, namespace = "kill/concurrent")]
fn job(n: u64) -> Result<u64, idem::Error> {
    if n == BLOCKED {
        say("in body");
        // Until the parent kills this process (or dies, closing stdin).
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
        std::process::exit(0);
    }
    Ok(n * 2)
}

#[test]
#[ignore = "a child process of `sigkill_finds_every_returned_call_completed_and_the_running_one_reserved`"]
fn kill_concurrent_child() {
    let dir = std::env::var(CHILD_ENV).expect("run by the parent");
    DIR.set(PathBuf::from(dir)).unwrap();
    std::thread::scope(|scope| {
        scope.spawn(|| job(BLOCKED));
        for thread in 0..THREADS {
            scope.spawn(move || {
                for i in 0.. {
                    let n = i * THREADS + thread;
                    assert_eq!(job(n).unwrap(), n * 2);
                    say(&format!("done {n}"));
                }
            });
        }
    });
}

#[test]
fn sigkill_finds_every_returned_call_completed_and_the_running_one_reserved() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = support::rerun(module_path!(), "kill_concurrent_child")
        .env(CHILD_ENV, dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let (mut returned, mut in_body) = (Vec::new(), false);
    let deadline = Instant::now() + Duration::from_secs(60);
    for line in lines {
        let line = line.unwrap();
        let Some(at) = line.find("@@") else { continue };
        match line[at + 2..].trim() {
            "in body" => in_body = true,
            done => returned.push(done.strip_prefix("done ").unwrap().parse::<u64>().unwrap()),
        }
        if in_body && returned.len() >= RETURNED {
            break;
        }
        assert!(Instant::now() < deadline, "the child made {} calls in a minute", returned.len());
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        in_body && returned.len() >= RETURNED,
        "the child ended early: {} calls, in body: {in_body}",
        returned.len()
    );

    DIR.set(dir.path().to_path_buf()).unwrap();
    for &n in &returned {
        match job_status(n) {
            Ok(Status::Completed(doubled)) => assert_eq!(doubled, n * 2),
            other => panic!("job {n} returned before the kill, but its record reads {other:?}"),
        }
    }
    let blocked = job_status(BLOCKED);
    assert!(matches!(blocked, Ok(Status::InProgress { .. })), "the blocked body's reservation: {blocked:?}");
}
