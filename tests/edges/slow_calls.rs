//! Slow calls keep their keys: a body that runs for several leases has its lease renewed,
//! so every repeat meanwhile is IN_PROGRESS (with the body's progress and a retry hint),
//! never OUTCOME_UNKNOWN and never a second run; its result is recorded and replayed. In
//! memory, SQLite and PostgreSQL, sync and async. A process killed mid-body stops
//! renewing and its key is taken over once, about one lease later; a body past its
//! `max_hold` is no longer renewed, and its late completion is fenced.
//!
//! The leases here are real time (the stores' clocks), so these tests wait for them; they
//! never assume how long anything else takes: each waits for what it checks.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Barrier, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use idem::store::Store;
use idem::store::block_on;
use idem::store::{RecordId, RecordState};
use idem::{ErrorCode, MemoryStore, Reconciled, SqliteStore, Status, idempotent};

/// The tools' lease (`lease = "1500ms"`): a renewal every 500 ms leaves a second of slack.
const LEASE: Duration = Duration::from_millis(1500);
const PROGRESS: &str = "rendering page 1";

/// A body that runs until the test lets it finish.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    opened: Condvar,
    runs: AtomicUsize,
}

impl Gate {
    fn enter(&self) {
        self.runs.fetch_add(1, Ordering::SeqCst);
        assert!(idem::progress(PROGRESS), "inside a body, progress is attached to the call");
    }

    fn wait(&self) {
        let open = self.open.lock().unwrap();
        drop(self.opened.wait_while(open, |open| !*open).unwrap());
    }

    async fn wait_async(&self) {
        while !*self.open.lock().unwrap() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }

    /// Opens the gate when dropped, so that a failed check never leaves a body blocked
    /// (and its test hung) behind it.
    fn opens_on_drop(&self) -> impl Drop + '_ {
        struct OpenOnDrop<'g>(&'g Gate);
        impl Drop for OpenOnDrop<'_> {
            fn drop(&mut self) {
                self.0.open();
            }
        }
        OpenOnDrop(self)
    }

    fn wait_for_runs(&self, runs: usize) {
        while self.runs.load(Ordering::SeqCst) < runs {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

#[idempotent(key = "export:<report>", namespace = "slow-calls.export", lease = "1500ms", store = store)]
fn export<S: Store>(store: &S, report: String, gate: &Gate) -> Result<String, idem::Error> {
    gate.enter();
    gate.wait();
    Ok(format!("exported {report}"))
}

#[idempotent(key = "export:<report>", namespace = "slow-calls.export-async", lease = "1500ms", store = store)]
async fn export_async<S: Store>(store: &S, report: String, gate: &Gate) -> Result<String, idem::Error> {
    gate.enter();
    gate.wait_async().await;
    Ok(format!("exported {report}"))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap()
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

/// What a repeat during the slow call must see: IN_PROGRESS, a retry hint within its
/// bounds, when the call started, and no progress or the body's.
fn check_running(what: &str, error: &idem::Error, saw_progress: &mut bool) {
    assert_eq!(error.code(), ErrorCode::InProgress, "{what}: {error}");
    let running = error.running().unwrap_or_else(|| panic!("{what}: IN_PROGRESS carries the running call: {error}"));
    assert!(running.since_ms.is_some(), "{what}: when the call started");
    let hint = running.retry_after;
    assert!(hint >= Duration::from_millis(100) && hint <= LEASE / 3, "{what}: retry hint {hint:?}");
    assert_eq!(error.to_json()["error"]["retry_after_ms"], hint.as_millis() as u64, "{what}: serialized");
    match running.progress.as_deref() {
        Some(PROGRESS) => *saw_progress = true,
        None => assert!(!*saw_progress, "{what}: a progress message once seen stays"),
        Some(other) => panic!("{what}: unexpected progress {other:?}"),
    }
}

/// Repeats the call and reads its status until three leases have passed since the body
/// started, then checks the lease was renewed past them and lets the body finish.
fn watch_three_leases(
    what: &str,
    gate: &Gate,
    repeat: impl Fn() -> Result<String, idem::Error>,
    status: impl Fn() -> Result<Status<String>, idem::Error>,
    lease_until_ms: impl Fn() -> i64,
) {
    let _open = gate.opens_on_drop();
    gate.wait_for_runs(1);
    let started = Instant::now();
    let started_ms = now_ms();
    let mut saw_progress = false;
    while started.elapsed() < 3 * LEASE {
        let error = repeat().expect_err("a repeat while the body runs is not a result");
        check_running(what, &error, &mut saw_progress);
        match status().unwrap() {
            Status::InProgress { progress, retry_after_ms, .. } => {
                assert!(progress.is_none() || progress.as_deref() == Some(PROGRESS), "{what}: {progress:?}");
                assert!(retry_after_ms >= 100, "{what}: status hint {retry_after_ms}");
            }
            other => panic!("{what}: the status of a running call is in progress, not {other:?}"),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(saw_progress, "{what}: the body's progress reached repeats within three leases");
    assert_eq!(gate.runs.load(Ordering::SeqCst), 1, "{what}: the body ran once");
    let renewed_to = lease_until_ms();
    assert!(
        renewed_to > started_ms + 3 * LEASE.as_millis() as i64,
        "{what}: the lease was renewed past three leases (it ends at {renewed_to}, the body started at {started_ms})"
    );
    gate.open();
}

fn lease_end(store: &impl Store, namespace: &str) -> i64 {
    let id = RecordId { namespace, key: "export:q3" };
    match block_on(store.read(id)).unwrap().map(|record| record.state) {
        Some(RecordState::InProgress { lease_until_ms, lease_expired: false, .. }) => lease_until_ms,
        other => panic!("{namespace}: the running call's record is live, not {other:?}"),
    }
}

/// One slow sync call and one slow async call on `store`, each watched for three leases.
fn slow_calls_keep_their_keys<S: Store>(name: &str, store: &S) {
    let (gate, gate_async) = (Gate::default(), Gate::default());
    std::thread::scope(|scope| {
        let first = scope.spawn(|| export(store, "q3".into(), &gate));
        let first_async = scope.spawn(|| runtime().block_on(export_async(store, "q3".into(), &gate_async)));
        let watch_async = scope.spawn(|| {
            let runtime = runtime();
            watch_three_leases(
                &format!("{name}, async"),
                &gate_async,
                || runtime.block_on(export_async(store, "q3".into(), &gate_async)),
                || runtime.block_on(export_async_status(store, "q3".into())),
                || lease_end(store, "slow-calls.export-async"),
            );
        });
        watch_three_leases(
            &format!("{name}, sync"),
            &gate,
            || export(store, "q3".into(), &gate),
            || export_status(store, "q3".into()),
            || lease_end(store, "slow-calls.export"),
        );
        watch_async.join().unwrap();
        assert_eq!(first.join().unwrap().unwrap(), "exported q3", "{name}: the first call's own result");
        assert_eq!(first_async.join().unwrap().unwrap(), "exported q3", "{name}: the first async call's own result");
    });
    assert_eq!(export(store, "q3".into(), &gate).unwrap(), "exported q3", "{name}: replayed");
    assert_eq!(runtime().block_on(export_async(store, "q3".into(), &gate_async)).unwrap(), "exported q3");
    assert_eq!((gate.runs.into_inner(), gate_async.runs.into_inner()), (1, 1), "{name}: each body ran once");
}

#[test]
fn a_body_that_runs_three_leases_runs_once_and_every_repeat_sees_it_in_progress() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open(dir.path().join("idem.db")).unwrap();
    let postgres = std::env::var("IDEM_TEST_DATABASE_URL").ok().filter(|url| !url.is_empty()).map(|url| {
        let schema = format!("idem_slow_calls_{}_{}", std::process::id(), now_ms());
        idem::PgStore::builder(&url).schema(&schema).build().unwrap()
    });
    std::thread::scope(|scope| {
        scope.spawn(|| slow_calls_keep_their_keys("memory", &MemoryStore::new()));
        scope.spawn(|| slow_calls_keep_their_keys("sqlite", &sqlite));
        match &postgres {
            Some(postgres) => drop(scope.spawn(|| slow_calls_keep_their_keys("postgres", postgres))),
            None => eprintln!("SKIPPED (postgres): set IDEM_TEST_DATABASE_URL (`bash .ci/pg start DIR` prints one)"),
        }
    });
}

/// Bodies run by the abandoned-key tools, in order: the first blocks until opened.
static TAKEN_OVER_RUNS: AtomicUsize = AtomicUsize::new(0);

/// The reconcile hook of [`crashing_export`]: the provider says it never happened.
fn never_happened(_: idem::Abandoned) -> Reconciled<String> {
    Reconciled::NotDone
}

/// In the child process, blocks for good (until killed); in the parent, returns at once.
#[idempotent(key = "crash:<report>", namespace = "slow-calls.crash", lease = "1500ms", store = store, reconcile = never_happened)]
fn crashing_export(store: &SqliteStore, report: String, block: bool) -> Result<String, idem::Error> {
    if block {
        println!("STARTED");
        loop {
            std::thread::park();
        }
    }
    TAKEN_OVER_RUNS.fetch_add(1, Ordering::SeqCst);
    Ok(format!("exported {report}"))
}

const CHILD_ENV: &str = "IDEM_TEST_SLOW_CALLS_DB";

#[test]
#[ignore = "a child process of `a_process_killed_mid_body_is_taken_over_once_about_a_lease_later`"]
fn slow_calls_crash_child() {
    let store = SqliteStore::open(std::env::var_os(CHILD_ENV).expect("run by the parent")).unwrap();
    let _ = crashing_export(&store, "q3".into(), true);
}

#[test]
fn a_process_killed_mid_body_is_taken_over_once_about_a_lease_later() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idem.db");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["slow_calls::slow_calls_crash_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, &path)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    while !lines.next().expect("the child ended before its body started").unwrap().ends_with("STARTED") {}
    let store = SqliteStore::open(&path).unwrap();
    let id = RecordId { namespace: "slow-calls.crash", key: "crash:q3" };
    let record = || block_on(store.read(id)).unwrap().expect("the child's reservation");
    let created_at_ms = record().created_at_ms;
    // The child renews while it runs: wait until its lease has moved past its first one.
    let renewed = loop {
        match record().state {
            RecordState::InProgress { lease_until_ms, .. }
                if lease_until_ms > created_at_ms + LEASE.as_millis() as i64 =>
            {
                break lease_until_ms;
            }
            RecordState::InProgress { lease_expired: false, .. } => std::thread::sleep(Duration::from_millis(20)),
            other => panic!("the child's call is live while it runs, not {other:?}"),
        }
    };
    child.kill().unwrap(); // SIGKILL: no unwinding, no last write
    child.wait().unwrap();
    let killed_ms = now_ms();
    let callers = 8;
    let barrier = Barrier::new(callers);
    let answers: Vec<(i64, Result<String, idem::Error>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..callers)
            .map(|_| {
                scope.spawn(|| {
                    barrier.wait();
                    loop {
                        match crashing_export(&store, "q3".into(), false) {
                            Err(error) if error.code() == ErrorCode::InProgress => {
                                std::thread::sleep(error.retry_after().unwrap().min(Duration::from_millis(50)));
                            }
                            answer => return (now_ms(), answer),
                        }
                    }
                })
            })
            .collect();
        handles.into_iter().map(|handle| handle.join().unwrap()).collect()
    });
    assert_eq!(TAKEN_OVER_RUNS.load(Ordering::SeqCst), 1, "exactly one caller ran the body again: {answers:?}");
    for (at_ms, answer) in &answers {
        assert_eq!(answer.as_deref().ok(), Some("exported q3"), "every caller gets the one result: {answer:?}");
        assert!(*at_ms >= renewed, "no caller was answered before the dead call's lease ended");
    }
    let freed_after = answers.iter().map(|(at_ms, _)| at_ms - killed_ms).min().unwrap();
    assert!(
        freed_after <= 4 * LEASE.as_millis() as i64,
        "the key was freed about one lease after the kill, not {freed_after} ms"
    );
}

/// The body of [`held_too_long`]: the first run blocks until the gate opens.
fn held_body(gate: &Gate) -> String {
    let run = gate.runs.fetch_add(1, Ordering::SeqCst) + 1;
    if run == 1 {
        gate.wait();
    }
    format!("run {run}")
}

#[idempotent(
    key = "hung:<report>",
    namespace = "slow-calls.hung",
    lease = "1s",
    max_hold = "2s",
    store = store,
    reconcile = |_| Reconciled::NotDone
)]
fn held_too_long(store: &MemoryStore, report: String, gate: &Gate) -> Result<String, idem::Error> {
    Ok(held_body(gate))
}

#[test]
fn a_body_past_its_max_hold_is_taken_over_a_lease_later_and_its_late_result_is_fenced() {
    let (store, gate) = (MemoryStore::new(), Gate::default());
    let started = Instant::now();
    std::thread::scope(|scope| {
        let first = scope.spawn(|| idem::telemetry::observe(|| held_too_long(&store, "q3".into(), &gate)));
        let _open = gate.opens_on_drop();
        gate.wait_for_runs(1);
        let taken_over = loop {
            match held_too_long(&store, "q3".into(), &gate) {
                Err(error) if error.code() == ErrorCode::InProgress => std::thread::sleep(Duration::from_millis(20)),
                answer => break answer,
            }
        };
        let taken_over_after = started.elapsed();
        assert_eq!(taken_over.unwrap(), "run 2", "the reconcile hook said not done, so the body ran again");
        assert!(
            taken_over_after >= Duration::from_secs(2),
            "renewed until max_hold, taken over at {taken_over_after:?}"
        );
        gate.open();
        let (late, calls) = first.join().unwrap();
        assert_eq!(late.unwrap(), "run 1", "the first caller still gets its body's result");
        assert_eq!(calls[0].outcome, idem::telemetry::Outcome::Fenced, "but it is not recorded");
    });
    assert_eq!(held_too_long(&store, "q3".into(), &gate).unwrap(), "run 2", "the newer holder's record stands");
    assert_eq!(gate.runs.load(Ordering::SeqCst), 2);
}

#[test]
fn a_body_past_its_max_hold_that_nobody_took_over_completes_normally() {
    let (store, gate) = (MemoryStore::new(), Gate::default());
    std::thread::scope(|scope| {
        let first = scope.spawn(|| held_too_long(&store, "q4".into(), &gate));
        let _open = gate.opens_on_drop();
        gate.wait_for_runs(1);
        let id = RecordId { namespace: "slow-calls.hung", key: "hung:q4" };
        // Wait until renewal stopped and the lease ended, without calling the tool.
        while !matches!(
            block_on(store.read(id)).unwrap().map(|r| r.state),
            Some(RecordState::InProgress { lease_expired: true, .. })
        ) {
            std::thread::sleep(Duration::from_millis(20));
        }
        gate.open();
        assert_eq!(first.join().unwrap().unwrap(), "run 1");
    });
    assert_eq!(held_too_long(&store, "q4".into(), &gate).unwrap(), "run 1", "its result was recorded");
}

/// `max_hold = "30s"` compiles only because the default lease is no longer: the macro's
/// copy of the default agrees with the runtime's.
#[idempotent(key = "pin:<x>", namespace = "slow-calls.pin", max_hold = "30s", store = store)]
fn max_hold_of_one_default_lease(store: &MemoryStore, x: String) -> Result<String, idem::Error> {
    Ok(x)
}

#[test]
fn the_default_lease_is_thirty_seconds_and_max_hold_an_hour() {
    assert_eq!(idem::store::DEFAULT_LEASE, Duration::from_secs(30));
    assert_eq!(idem::store::DEFAULT_MAX_HOLD, Duration::from_secs(3600));
    assert_eq!(max_hold_of_one_default_lease(&MemoryStore::new(), "x".into()).unwrap(), "x");
    assert!(!idem::progress("outside a body"), "progress outside a body does nothing");
}
