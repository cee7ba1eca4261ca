//! A PostgreSQL server that stops answering never hangs a tool call: every store
//! operation has a client-side deadline (`operation_timeout`), after which the call answers
//! STORE_UNAVAILABLE with its body not run, and the connection it waited on is closed, not
//! pooled. Two ways a server stops answering, sync and async tools alike:
//!
//! - a network that stops forwarding: a TCP proxy on 127.0.0.1, in this file, that holds
//!   every byte while it is stalled (new connections included);
//! - a frozen backend: `kill -STOP` on the server processes serving the store's connections,
//!   on a cluster of this test's own (`.ci/pg start`), since the shared one must not stall.
//!
//! Effects are counted per key: a key whose call failed was never run, and the ones that ran
//! ran once. Every wait is measured against a generous bound, never a tight one.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::postgres::{fresh_schema, test_url};

use crate::pg::drop_schema;
use idem::telemetry::Outcome;
use idem::{ErrorCode, PgStore, idempotent};

/// The stores' `operation_timeout` here.
const DEADLINE: Duration = Duration::from_secs(1);
/// What "within the deadline" is checked against: generous, for a loaded machine. A call
/// that hung (the bug) never returns at all.
const BOUND: Duration = Duration::from_secs(15);

/// How often each key's body ran, and what a body does before it returns.
#[derive(Default)]
struct Effects {
    runs: Mutex<HashMap<String, usize>>,
}

impl Effects {
    /// `tool` ran its body for `order`.
    fn ran(&self, tool: &str, order: &str) {
        *self.runs.lock().unwrap().entry(format!("{tool} {order}")).or_default() += 1;
    }

    /// How often each tool (sync, async) ran its body for `order`.
    fn runs(&self, order: &str) -> (usize, usize) {
        let runs = self.runs.lock().unwrap();
        let of = |tool: &str| runs.get(&format!("{tool} {order}")).copied().unwrap_or(0);
        (of("sync"), of("async"))
    }
}

/// Runs before a body returns: what the test does to the server meanwhile.
type Then<'a> = &'a (dyn Fn() + Sync);

#[idempotent(key = "charge:<order>", namespace = "pg-faults.sync", store = store)]
fn charge(store: &PgStore, order: String, effects: &Effects, then: Then<'_>) -> Result<String, idem::Error> {
    effects.ran("sync", &order);
    then();
    Ok(format!("charged {order}"))
}

#[idempotent(key = "charge:<order>", namespace = "pg-faults.async", store = store)]
async fn charge_async(
    store: &PgStore,
    order: String,
    effects: &Effects,
    then: Then<'_>,
) -> Result<String, idem::Error> {
    effects.ran("async", &order);
    then();
    Ok(format!("charged {order}"))
}

fn nothing() {}

/// Ends the whole test process if a test is still running after `limit`: a call that hangs
/// (the failure these tests look for) must fail the run, not stall it.
struct Watchdog {
    /// Dropped when the test ends, which tells the watchdog's thread to stop.
    _done: std::sync::mpsc::Sender<()>,
}

impl Watchdog {
    fn new(test: &'static str, limit: Duration) -> Watchdog {
        let (done, finished) = std::sync::mpsc::channel::<()>();
        std::thread::spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = finished.recv_timeout(limit) {
                eprintln!("{test}: still running after {limit:?}: a store call hung");
                std::process::abort();
            }
        });
        Watchdog { _done: done }
    }
}

/// Checks that `call` answered STORE_UNAVAILABLE (retryable, naming the deadline) within
/// the bound.
fn assert_unavailable(what: &str, started: Instant, answer: Result<String, idem::Error>) {
    let waited = started.elapsed();
    let error = answer.expect_err(what);
    assert_eq!(error.code(), ErrorCode::StoreUnavailable, "{what}: {error}");
    assert!(error.retryable(), "{what}: {error}");
    assert!(error.message().contains("operation_timeout"), "{what}: the message names the deadline: {error}");
    assert!(waited < BOUND, "{what}: answered after {waited:?}");
    assert!(waited >= DEADLINE / 2, "{what}: answered after {waited:?}, before the deadline could pass");
}

fn in_progress(answer: &Result<String, idem::Error>) -> bool {
    answer.as_ref().is_err_and(|error| error.code() == ErrorCode::InProgress)
}

/// A key's first successful call after an outage, or IN_PROGRESS behind a reservation
/// that landed late.
fn assert_first_or_in_progress(what: &str, answer: Result<String, idem::Error>) {
    assert!(answer.as_ref().is_ok_and(|r| r.starts_with("charged")) || in_progress(&answer), "{what}: {answer:?}");
}

/// A TCP proxy to `upstream` that forwards both ways until it is stalled; while stalled it
/// holds every byte it reads, and reads no more, as a network that drops packets does.
struct Proxy {
    port: u16,
    stalled: Arc<AtomicBool>,
}

impl Proxy {
    fn start(upstream: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stalled = Arc::new(AtomicBool::new(false));
        let proxy = Proxy { port, stalled: stalled.clone() };
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(&upstream) else { continue };
                for (from, to) in [(&client, &server), (&server, &client)] {
                    let (from, to) = (from.try_clone().unwrap(), to.try_clone().unwrap());
                    let stalled = stalled.clone();
                    std::thread::spawn(move || pump(from, to, &stalled));
                }
            }
        });
        proxy
    }

    fn stall(&self, stalled: bool) {
        self.stalled.store(stalled, Ordering::SeqCst);
    }
}

fn pump(mut from: TcpStream, mut to: TcpStream, stalled: &AtomicBool) {
    from.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    let mut buffer = [0u8; 16 * 1024];
    loop {
        while stalled.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(5));
        }
        let read = match from.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => continue,
            Err(_) => break,
        };
        while stalled.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(5));
        }
        if to.write_all(&buffer[..read]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

#[test]
fn a_network_that_stops_forwarding_is_store_unavailable_within_the_deadline() {
    let Some(url) = test_url("a_network_that_stops_forwarding_is_store_unavailable_within_the_deadline") else {
        return;
    };
    let config: tokio_postgres::Config = url.parse().unwrap();
    let Some(tokio_postgres::config::Host::Tcp(host)) = config.get_hosts().first().cloned() else {
        return eprintln!("SKIPPED: the proxy needs a TCP server URL");
    };
    let _watchdog = Watchdog::new("a_network_that_stops_forwarding", Duration::from_secs(120));
    let proxy = Proxy::start(format!("{host}:{}", config.get_ports()[0]));
    let schema = fresh_schema("idem_proxy");
    let (user, dbname) = (config.get_user().unwrap(), config.get_dbname().unwrap());
    let proxied = format!("postgres://{user}@127.0.0.1:{}/{dbname}", proxy.port);
    let store = PgStore::builder(&proxied).schema(&schema).operation_timeout(DEADLINE).build().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let effects = Effects::default();

    assert_eq!(charge(&store, "done".into(), &effects, &nothing).unwrap(), "charged done");
    runtime.block_on(charge_async(&store, "done".into(), &effects, &nothing)).unwrap();

    proxy.stall(true);
    for order in ["new", "done"] {
        let started = Instant::now();
        assert_unavailable(&format!("sync {order}"), started, charge(&store, order.into(), &effects, &nothing));
        let started = Instant::now();
        let answer = runtime.block_on(charge_async(&store, order.into(), &effects, &nothing));
        assert_unavailable(&format!("async {order}"), started, answer);
    }
    assert_eq!(effects.runs("new"), (0, 0), "a call whose store did not answer never runs its body");

    // The network is back: the closed connections are replaced, and nothing ran twice. The
    // proxy delivers what it held, as TCP does once a partition heals, so a reservation the
    // caller gave up on may land late: its key then reads IN_PROGRESS (until its lease ends
    // and it is handled as an abandoned call), never a second run.
    proxy.stall(false);
    assert_eq!(charge(&store, "done".into(), &effects, &nothing).unwrap(), "charged done");
    assert_first_or_in_progress("sync new", charge(&store, "new".into(), &effects, &nothing));
    assert_first_or_in_progress("async new", runtime.block_on(charge_async(&store, "new".into(), &effects, &nothing)));
    assert_eq!(charge(&store, "after".into(), &effects, &nothing).unwrap(), "charged after");
    runtime.block_on(charge_async(&store, "after".into(), &effects, &nothing)).unwrap();
    assert_eq!((effects.runs("done"), effects.runs("after")), ((1, 1), (1, 1)), "once per tool");
    let (sync, later) = effects.runs("new");
    assert!(sync <= 1 && later <= 1, "at most once per tool: {sync} and {later}");

    // The network stops while the body runs: the caller still gets the body's result (the
    // effect happened), the completion is given up after its attempts, and the key stays
    // reserved, so a repeat is IN_PROGRESS, never a second run.
    let stall = || proxy.stall(true);
    let started = Instant::now();
    let (answer, calls) = idem::telemetry::observe(|| charge(&store, "late".into(), &effects, &stall));
    assert_eq!(answer.unwrap(), "charged late");
    assert_eq!(calls[0].outcome, Outcome::Unrecorded);
    assert!(started.elapsed() < BOUND, "sync: answered after {:?}", started.elapsed());
    proxy.stall(false);
    let started = Instant::now();
    let (answer, calls) =
        runtime.block_on(idem::telemetry::observe_async(charge_async(&store, "late".into(), &effects, &stall)));
    assert_eq!(answer.unwrap(), "charged late");
    assert_eq!(calls[0].outcome, Outcome::Unrecorded);
    assert!(started.elapsed() < BOUND, "async: answered after {:?}", started.elapsed());
    proxy.stall(false);
    // A completion the proxy held may also land late: then the repeat replays it.
    let repeat = charge(&store, "late".into(), &effects, &nothing);
    assert!(repeat.as_ref().is_ok_and(|r| r == "charged late") || in_progress(&repeat), "{repeat:?}");
    let repeat = runtime.block_on(charge_async(&store, "late".into(), &effects, &nothing));
    assert!(repeat.as_ref().is_ok_and(|r| r == "charged late") || in_progress(&repeat), "{repeat:?}");
    assert_eq!(effects.runs("late"), (1, 1), "once per tool");
    drop_schema(&url, &schema);
}

/// The `application_name` of the store whose backends are frozen.
const APP: &str = "idem-frozen-test";

/// A PostgreSQL cluster of this test's own, stopped and deleted when dropped.
struct OwnCluster {
    dir: std::path::PathBuf,
    url: String,
}

impl OwnCluster {
    fn start() -> OwnCluster {
        let dir = std::env::temp_dir().join(fresh_schema("idem_frozen"));
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/pg");
        let started = Command::new("bash").arg(script).arg("start").arg(&dir).output().unwrap();
        assert!(started.status.success(), "{}", String::from_utf8_lossy(&started.stderr));
        let url = String::from_utf8(started.stdout).unwrap().trim().to_owned();
        OwnCluster { dir, url }
    }

    /// Sends `signal` to every server process that serves the application `name`.
    fn signal_backends(&self, name: &str, signal: &str) -> usize {
        self.try_signal_backends(name, signal).unwrap()
    }

    /// [`signal_backends`](Self::signal_backends) without a panic, for `Drop`.
    fn try_signal_backends(&self, name: &str, signal: &str) -> Result<usize, String> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
        let pids: Vec<i32> = runtime.block_on(async {
            let (client, connection) =
                tokio_postgres::connect(&self.url, tokio_postgres::NoTls).await.map_err(|e| e.to_string())?;
            tokio::spawn(connection);
            let sql = "SELECT pid FROM pg_stat_activity WHERE application_name = $1";
            let rows = client.query(sql, &[&name]).await.map_err(|e| e.to_string())?;
            Ok::<_, String>(rows.iter().map(|row| row.get(0)).collect())
        })?;
        for pid in &pids {
            let status = Command::new("kill").arg(format!("-{signal}")).arg(pid.to_string()).status();
            if !status.is_ok_and(|status| status.success()) {
                return Err(format!("kill -{signal} {pid} failed"));
            }
        }
        Ok(pids.len())
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        // A failed check may leave backends stopped, which would keep the server from
        // shutting down.
        let _ = self.try_signal_backends(APP, "CONT");
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/pg");
        let _ = Command::new("bash").arg(script).arg("stop").arg(&self.dir).output();
    }
}

#[test]
fn a_frozen_backend_is_store_unavailable_within_the_deadline_and_the_pool_recovers() {
    if test_url("a_frozen_backend_is_store_unavailable_within_the_deadline_and_the_pool_recovers").is_none() {
        return;
    }
    let _watchdog = Watchdog::new("a_frozen_backend", Duration::from_secs(180));
    let cluster = OwnCluster::start();
    let url = format!("{}?application_name={APP}", cluster.url);
    let store = PgStore::builder(&url).operation_timeout(DEADLINE).build().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let effects = Effects::default();

    // One pooled connection for each tool: the sync tool's and the async tool's.
    charge(&store, "done".into(), &effects, &nothing).unwrap();
    runtime.block_on(charge_async(&store, "done".into(), &effects, &nothing)).unwrap();

    assert!(cluster.signal_backends(APP, "STOP") >= 2, "the store's connections are served");
    let started = Instant::now();
    assert_unavailable("sync", started, charge(&store, "new".into(), &effects, &nothing));
    let started = Instant::now();
    let answer = runtime.block_on(charge_async(&store, "new".into(), &effects, &nothing));
    assert_unavailable("async", started, answer);
    assert_eq!(effects.runs("new"), (0, 0), "a call whose store did not answer never runs its body");

    // The frozen connections were closed, not pooled: the next calls get new ones and work
    // while the old backends are still stopped.
    assert_eq!(charge(&store, "done".into(), &effects, &nothing).unwrap(), "charged done");
    runtime.block_on(charge_async(&store, "new".into(), &effects, &nothing)).unwrap();

    // A backend frozen while the body runs: the caller gets its result, and the completion
    // is written on a fresh connection when the frozen one runs out of time.
    let freeze = || {
        cluster.signal_backends(APP, "STOP");
    };
    let (answer, calls) = idem::telemetry::observe(|| charge(&store, "late".into(), &effects, &freeze));
    assert_eq!(answer.unwrap(), "charged late");
    assert_eq!(calls[0].outcome, Outcome::Fresh, "recorded on a second attempt");

    cluster.signal_backends(APP, "CONT");
    assert_eq!(charge(&store, "late".into(), &effects, &nothing).unwrap(), "charged late");
    for i in 0..8 {
        runtime.block_on(charge_async(&store, format!("after-{i}"), &effects, &nothing)).unwrap();
    }
    assert_eq!((effects.runs("done"), effects.runs("new"), effects.runs("late")), ((1, 1), (0, 1), (1, 0)));
}
