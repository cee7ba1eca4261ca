//! Crashes: a child process reserves a key, sends a charge to a stand-in provider, and is
//! killed with SIGKILL at varied points of its call. The parent then checks that the next
//! caller never runs the body while the killed call's lease holds, that after the lease
//! ends the reconcile hook asks the provider and the key is completed exactly once, and
//! that across all trials every key has exactly one charge in the provider's own ledger.
//!
//! Two providers: one that deduplicates on the idempotency key (as Stripe does, with a
//! unique column), and one that does not, so that only idem and the reconcile hook stand
//! between a crash and a second charge. The children are this test binary run again; they
//! print markers on stdout and block where they are told to, and the parent kills them
//! there, or after a random delay while they run on.
//!
//! 98 trials, each on a key of its own, with a lease of one second: per provider, five kills at
//! each of four points (in the body before the provider call, inside the provider's
//! transaction, after the provider call, after completion), eight crashes followed by a
//! crash of the call that recovers them (in the reconcile hook, or in the body the hook
//! let run again), and twelve kills after a random delay; fourteen such trials of an async
//! tool with an async hook; and four of a tool without a hook. Every third trial settles
//! the key with a race: two threads and a third process call at the same moment once the
//! lease has ended.

use crate::support;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{LazyLock, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use idem::store::{RecordId, RecordState, Store};
use idem::telemetry::Outcome;
use idem::{Abandoned, ErrorCode, Reconciled, SqliteStore, Status, idempotent};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior};
use serde::{Deserialize, Serialize};

/// Trials per fixed kill point and provider.
const PER_POINT: usize = 5;
/// Trials killed after a random delay, per provider.
const RANDOM: usize = 12;
/// Trials per pair of kill points (the call, then the call that recovers it) and provider.
const DOUBLE: usize = 2;
/// Trials of a tool without a reconcile hook, per fixed point.
const UNHOOKED: usize = 2;
const WORKERS: usize = 8;
/// How long anything the parent waits for may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(60);

const CHILD_ENV: &str = "IDEM_TEST_CRASH_CHILD";
const SEED_ENV: &str = "IDEM_TEST_CRASH_SEED";

static DIR: OnceLock<PathBuf> = OnceLock::new();
static STORE: LazyLock<SqliteStore> =
    LazyLock::new(|| SqliteStore::open(DIR.get().expect("the store's directory is set").join("idem.db")).unwrap());

/// What the provider returns for a charge, and what the tool returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Charge {
    id: i64,
    order: String,
    amount: u32,
    #[serde(default)]
    replayed: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Provider {
    /// `idempotency_key` is UNIQUE: a re-send with the same key returns the first charge.
    Dedup,
    /// Records the key for look-ups only: a re-send is a second charge.
    Plain,
}

impl Provider {
    fn table(self) -> &'static str {
        match self {
            Provider::Dedup => "dedup_charges",
            Provider::Plain => "plain_charges",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Provider::Dedup => "dedup",
            Provider::Plain => "plain",
        }
    }
}

// ---- the stand-in provider: an SQLite ledger file shared by every process ----

fn ledger() -> Connection {
    let conn = Connection::open(DIR.get().expect("set").join("ledger.db")).unwrap();
    conn.busy_timeout(Duration::from_secs(30)).unwrap();
    conn
}

fn create_ledger() {
    let conn = ledger();
    // A rollback journal, not WAL: a child killed inside its commit leaves a hot journal
    // that the next reader rolls back, so a charge is either there when the parent looks or
    // never. In WAL mode the dead writer's commit frame can sit in the WAL unseen (the
    // wal-index was not updated) until a later connection recovers the WAL and finds it: a
    // charge that appears after the parent looked, which the checks took for a new one.
    conn.pragma_update(None, "journal_mode", "DELETE").unwrap();
    conn.execute_batch(
        "CREATE TABLE dedup_charges (id INTEGER PRIMARY KEY AUTOINCREMENT, idempotency_key TEXT NOT NULL UNIQUE,
             order_id TEXT NOT NULL, amount INTEGER NOT NULL, pid INTEGER NOT NULL);
         CREATE TABLE plain_charges (id INTEGER PRIMARY KEY AUTOINCREMENT, idempotency_key TEXT NOT NULL,
             order_id TEXT NOT NULL, amount INTEGER NOT NULL, pid INTEGER NOT NULL);
         CREATE TABLE requests (provider TEXT NOT NULL, idempotency_key TEXT NOT NULL, pid INTEGER NOT NULL);
         CREATE TABLE hook_calls (idempotency_key TEXT NOT NULL, pid INTEGER NOT NULL, found INTEGER NOT NULL);",
    )
    .unwrap();
}

/// Sends a charge: logs the request and writes the charge in one transaction, so a kill
/// inside it leaves neither.
fn send(provider: Provider, key: &str, order: &str, amount: u32) -> Charge {
    let mut conn = ledger();
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).unwrap();
    let pid = std::process::id();
    tx.execute("INSERT INTO requests VALUES (?1, ?2, ?3)", (provider.name(), key, pid)).unwrap();
    let insert = match provider {
        Provider::Dedup => {
            "INSERT INTO dedup_charges (idempotency_key, order_id, amount, pid) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (idempotency_key) DO NOTHING"
        }
        Provider::Plain => "INSERT INTO plain_charges (idempotency_key, order_id, amount, pid) VALUES (?1, ?2, ?3, ?4)",
    };
    tx.execute(insert, (key, order, amount, pid)).unwrap();
    checkpoint(Point::Sending);
    let charge = match provider {
        Provider::Dedup => lookup_in(&tx, provider, key).expect("just written"),
        Provider::Plain => {
            let id = tx.last_insert_rowid();
            Charge { id, order: order.to_owned(), amount, replayed: false }
        }
    };
    tx.commit().unwrap();
    charge
}

fn lookup_in(conn: &Connection, provider: Provider, key: &str) -> Option<Charge> {
    let sql =
        format!("SELECT id, order_id, amount FROM {} WHERE idempotency_key = ?1 ORDER BY id LIMIT 1", provider.table());
    conn.query_row(&sql, [key], |row| {
        Ok(Charge { id: row.get(0)?, order: row.get(1)?, amount: row.get(2)?, replayed: false })
    })
    .optional()
    .unwrap()
}

/// Every charge the provider holds for `key`.
fn charges(provider: Provider, key: &str) -> Vec<Charge> {
    let conn = ledger();
    let sql = format!("SELECT id, order_id, amount FROM {} WHERE idempotency_key = ?1 ORDER BY id", provider.table());
    let mut stmt = conn.prepare(&sql).unwrap();
    stmt.query_map([key], |row| {
        Ok(Charge { id: row.get(0)?, order: row.get(1)?, amount: row.get(2)?, replayed: false })
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

// ---- the tools ----

fn now_ms() -> i64 {
    i64::try_from(SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis()).unwrap()
}

/// In the parent: when each body and each hook ran, per key.
static BODY_RUNS: Mutex<Vec<(String, i64)>> = Mutex::new(Vec::new());
static HOOK_CALLS: Mutex<Vec<(String, i64)>> = Mutex::new(Vec::new());

fn body(provider: Provider, order: &str, amount: u32) -> Charge {
    let key = idem::current_key().expect("inside the body").to_string();
    BODY_RUNS.lock().unwrap().push((key.clone(), now_ms()));
    checkpoint(Point::Reserved);
    let charge = send(provider, &key, order, amount);
    checkpoint(Point::Sent);
    charge
}

/// The hook asks the provider whether a charge with the abandoned call's key exists. Every
/// process logs its hook calls in the ledger, so races between processes can be counted.
fn reconcile(provider: Provider, abandoned: &Abandoned) -> Reconciled<Charge> {
    let key = abandoned.key().to_string();
    HOOK_CALLS.lock().unwrap().push((key.clone(), now_ms()));
    let conn = ledger();
    let found = lookup_in(&conn, provider, &key);
    conn.execute("INSERT INTO hook_calls VALUES (?1, ?2, ?3)", (&key, std::process::id(), found.is_some())).unwrap();
    checkpoint(Point::Reconciling);
    match found {
        Some(charge) => Reconciled::Done(charge),
        None => Reconciled::NotDone,
    }
}

/// Charges an order once, with a provider that deduplicates too.
#[idempotent(key = "charge:<order>", compare = [amount], store = *STORE, namespace = "crash/dedup", lease = "1s",
    reconcile = |abandoned: Abandoned| reconcile(Provider::Dedup, &abandoned))]
fn charge_dedup(order: String, amount: u32) -> Result<Charge, idem::Error> {
    Ok(body(Provider::Dedup, &order, amount))
}

/// Charges an order once, with a provider that charges every request.
#[idempotent(key = "charge:<order>", compare = [amount], store = *STORE, namespace = "crash/plain", lease = "1s",
    reconcile = |abandoned: Abandoned| reconcile(Provider::Plain, &abandoned))]
fn charge_plain(order: String, amount: u32) -> Result<Charge, idem::Error> {
    Ok(body(Provider::Plain, &order, amount))
}

/// The plain provider's tool, async, with an async hook.
#[idempotent(key = "charge:<order>", compare = [amount], store = *STORE, namespace = "crash/async", lease = "1s",
    reconcile = |abandoned: Abandoned| async move { reconcile(Provider::Plain, &abandoned) })]
async fn charge_async(order: String, amount: u32) -> Result<Charge, idem::Error> {
    Ok(body(Provider::Plain, &order, amount))
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(future)
}

/// The same, without a reconcile hook: an abandoned call stays OUTCOME_UNKNOWN.
#[idempotent(key = "charge:<order>", compare = [amount], store = *STORE, namespace = "crash/unhooked", lease = "1s")]
fn charge_unhooked(order: String, amount: u32) -> Result<Charge, idem::Error> {
    Ok(body(Provider::Plain, &order, amount))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Tool {
    Dedup,
    Plain,
    Async,
    Unhooked,
}

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Tool::Dedup => "dedup",
            Tool::Plain => "plain",
            Tool::Async => "async",
            Tool::Unhooked => "unhooked",
        }
    }

    fn parse(name: &str) -> Tool {
        [Tool::Dedup, Tool::Plain, Tool::Async, Tool::Unhooked].into_iter().find(|t| t.name() == name).expect("a tool")
    }

    fn provider(self) -> Provider {
        match self {
            Tool::Dedup => Provider::Dedup,
            Tool::Plain | Tool::Async | Tool::Unhooked => Provider::Plain,
        }
    }

    fn namespace(self) -> &'static str {
        match self {
            Tool::Dedup => "crash/dedup",
            Tool::Plain => "crash/plain",
            Tool::Async => "crash/async",
            Tool::Unhooked => "crash/unhooked",
        }
    }

    fn call(self, order: &str, amount: u32) -> Result<Charge, idem::Error> {
        match self {
            Tool::Dedup => charge_dedup(order.to_owned(), amount),
            Tool::Plain => charge_plain(order.to_owned(), amount),
            Tool::Async => block_on(charge_async(order.to_owned(), amount)),
            Tool::Unhooked => charge_unhooked(order.to_owned(), amount),
        }
    }

    fn status(self, order: &str) -> Status<Charge> {
        match self {
            Tool::Dedup => charge_dedup_status(order.to_owned()),
            Tool::Plain => charge_plain_status(order.to_owned()),
            Tool::Async => block_on(charge_async_status(order.to_owned())),
            Tool::Unhooked => charge_unhooked_status(order.to_owned()),
        }
        .unwrap()
    }

    /// Calls the tool and reports how the call was answered.
    fn observe(self, order: &str, amount: u32) -> (Result<Charge, idem::Error>, Outcome) {
        let (result, calls) = idem::telemetry::observe(|| self.call(order, amount));
        assert_eq!(calls.len(), 1);
        (result, calls[0].outcome)
    }
}

// ---- the child ----

/// Where a child reports its progress and, when told to, blocks until it is killed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Point {
    /// In the hook of a call that found the key abandoned: the key taken over, the
    /// provider asked, the answer not yet acted on.
    Reconciling,
    /// In the body, the key reserved, before the provider call.
    Reserved,
    /// Inside the provider's transaction: the charge written but not committed.
    Sending,
    /// After the provider call, before the body returns and the key is completed.
    Sent,
    /// After the tool returned: the key is completed.
    Completed,
}

impl Point {
    const ALL: [Point; 5] = [Point::Reconciling, Point::Reserved, Point::Sending, Point::Sent, Point::Completed];

    fn name(self) -> &'static str {
        match self {
            Point::Reconciling => "reconciling",
            Point::Reserved => "reserved",
            Point::Sending => "sending",
            Point::Sent => "sent",
            Point::Completed => "completed",
        }
    }

    fn parse(name: &str) -> Option<Point> {
        Point::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// A child's instructions.
struct ChildPlan {
    stop: Option<Point>,
    /// Where the child waits for its stdin to close, then goes on (mode `hold-POINT`).
    hold: Option<Point>,
    pause: Duration,
}

static CHILD: OnceLock<ChildPlan> = OnceLock::new();

fn marker(name: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "@@{name}").unwrap();
    out.flush().unwrap();
}

/// Waits until the parent closes stdin: the parent's start signal, or its death.
fn wait_for_stdin_to_close() {
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}

/// Blocks until the parent kills this process. Should the parent die first, its end of
/// stdin closes and the child leaves without finishing anything.
fn block() -> ! {
    wait_for_stdin_to_close();
    std::process::exit(0);
}

/// In a child: report reaching `point`, then block there or pause a little.
fn checkpoint(point: Point) {
    let Some(plan) = CHILD.get() else { return };
    marker(point.name());
    if plan.stop == Some(point) {
        marker("stop");
        block();
    }
    if plan.hold == Some(point) {
        marker("held");
        wait_for_stdin_to_close();
    }
    std::thread::sleep(plan.pause);
}

/// The child: `<dir> <tool> <order> <mode> <pause µs>`, where mode is a stop point,
/// `hold-` and a point (wait there until stdin closes, then finish the call), `none` (run
/// on, to be killed after a delay) or `race` (call once when stdin closes and report the
/// outcome).
#[test]
#[ignore = "a child process of `sigkill_at_varied_points_leaves_one_charge_per_key`"]
fn crash_child() {
    let spec = std::env::var(CHILD_ENV).expect("run by the parent");
    let parts: Vec<&str> = spec.split(' ').collect();
    let [dir, tool, order, mode, pause] = parts[..] else { panic!("bad child spec {spec:?}") };
    DIR.set(PathBuf::from(dir)).unwrap();
    let tool = Tool::parse(tool);
    let hold = mode.strip_prefix("hold-").and_then(Point::parse);
    let plan = ChildPlan { stop: Point::parse(mode), hold, pause: Duration::from_micros(pause.parse().unwrap()) };
    CHILD.set(plan).ok().unwrap();
    LazyLock::force(&STORE);
    if mode == "race" {
        marker("ready");
        wait_for_stdin_to_close();
        let (_, outcome) = tool.observe(order, AMOUNT);
        marker(&format!("outcome {}", outcome.as_str()));
        return;
    }
    marker("start");
    tool.call(order, AMOUNT).expect("the call runs its body or reconciles");
    checkpoint(Point::Completed);
    marker("idle");
    block();
}

// ---- the parent ----

const AMOUNT: u32 = 120;

#[derive(Clone, Copy, Debug)]
enum Kill {
    /// Where the child blocks.
    At(Point),
    /// After a delay from one of the child's markers; the child pauses at each checkpoint.
    After { after: &'static str, delay: Duration, pause: Duration },
}

#[derive(Clone, Debug)]
struct Trial {
    tool: Tool,
    order: String,
    kill: Kill,
    /// A second child that finds the key abandoned, and is killed while it recovers it.
    then_kill_recovery_at: Option<Point>,
    /// After the lease ends, two threads and a child process reconcile at once.
    race: bool,
}

/// Where a kill landed, as the store and the ledger tell afterwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Landed {
    BeforeReserving,
    ReservedNotSent,
    SentNotCompleted,
    Completed,
}

#[derive(Debug)]
struct TrialReport {
    trial: Trial,
    landed: Landed,
    /// The first call after the last kill, and whether the lease surely held until it answered.
    immediate: Outcome,
    lease_held: bool,
    /// How the key was settled after the lease ended, if it had to be (several when raced).
    after_lease: Vec<Outcome>,
}

/// A small deterministic generator (xorshift64*), seeded per run and printed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

fn plan(seed: u64) -> Vec<Trial> {
    let mut rng = Rng(seed | 1);
    let mut trials = Vec::new();
    let mut add = |tool: Tool, kill: Kill, then_kill_recovery_at: Option<Point>| {
        let order = format!("{}-{}", tool.name(), trials.len());
        let race = tool != Tool::Unhooked && trials.len() % 3 == 0;
        trials.push(Trial { tool, order, kill, then_kill_recovery_at, race });
    };
    for tool in [Tool::Dedup, Tool::Plain] {
        for point in [Point::Reserved, Point::Sending, Point::Sent, Point::Completed] {
            for _ in 0..PER_POINT {
                add(tool, Kill::At(point), None);
            }
        }
        // A crash, then a crash of the call that recovers it: in the hook, or in the
        // body that the hook let run again.
        for (first, second) in [
            (Point::Reserved, Point::Reconciling),
            (Point::Sent, Point::Reconciling),
            (Point::Reserved, Point::Sending),
            (Point::Reserved, Point::Sent),
        ] {
            for _ in 0..DOUBLE {
                add(tool, Kill::At(first), Some(second));
            }
        }
        for _ in 0..RANDOM {
            // A random delay after a random marker: the kills spread over the whole call
            // (which takes about 1.5 ms plus the child's pauses at its checkpoints) whatever
            // the machine's load, and land anywhere between two checkpoints.
            let after = ["start", "reserved", "sending", "sent"][rng.below(4) as usize];
            let pause = 200 + rng.below(1_300);
            let delay = Duration::from_micros(rng.below(2 * pause));
            add(tool, Kill::After { after, delay, pause: Duration::from_micros(pause) }, None);
        }
    }
    // The async tool and hook, on the same driver: a smaller share of the same trials.
    for point in [Point::Reserved, Point::Sending, Point::Sent, Point::Completed] {
        for _ in 0..2 {
            add(Tool::Async, Kill::At(point), None);
        }
    }
    for first in [Point::Reserved, Point::Sent] {
        add(Tool::Async, Kill::At(first), Some(Point::Reconciling));
    }
    for _ in 0..4 {
        let after = ["start", "reserved", "sending", "sent"][rng.below(4) as usize];
        let pause = 200 + rng.below(1_300);
        let delay = Duration::from_micros(rng.below(2 * pause));
        add(Tool::Async, Kill::After { after, delay, pause: Duration::from_micros(pause) }, None);
    }
    for point in [Point::Reserved, Point::Sent] {
        for _ in 0..UNHOOKED {
            add(Tool::Unhooked, Kill::At(point), None);
        }
    }
    trials
}

/// A child process and the markers it printed.
struct Child {
    process: std::process::Child,
    markers: Receiver<String>,
    reader: Option<std::thread::JoinHandle<()>>,
    seen: Vec<String>,
}

impl Child {
    fn spawn(dir: &Path, tool: Tool, order: &str, mode: &str, pause: Duration) -> Child {
        let spec = format!("{} {} {order} {mode} {}", dir.display(), tool.name(), pause.as_micros());
        let mut process = support::rerun(module_path!(), "crash_child")
            .env(CHILD_ENV, spec)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = process.stdout.take().unwrap();
        let (sender, markers) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(at) = line.find("@@") {
                    let _ = sender.send(line[at + 2..].trim().to_owned());
                }
            }
        });
        Child { process, markers, reader: Some(reader), seen: Vec::new() }
    }

    fn wait_for(&mut self, wanted: &str) {
        let deadline = Instant::now() + DEADLINE;
        loop {
            match self.markers.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(marker) => {
                    let found = marker == wanted;
                    self.seen.push(marker);
                    if found {
                        return;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no {wanted:?} marker within {DEADLINE:?}; saw {:?}", self.seen)
                }
                Err(RecvTimeoutError::Disconnected) => panic!("the child ended before {wanted:?}; saw {:?}", self.seen),
            }
        }
    }

    /// Closes the child's stdin: the start signal of a racer.
    fn release(&mut self) {
        drop(self.process.stdin.take());
    }

    /// SIGKILL (what `Child::kill` sends on Unix), then every marker it printed.
    fn kill(mut self) -> Vec<String> {
        self.process.kill().unwrap();
        self.finish()
    }

    fn finish(mut self) -> Vec<String> {
        self.process.wait().unwrap();
        self.release();
        self.reader.take().unwrap().join().unwrap();
        self.seen.extend(self.markers.try_iter());
        self.seen
    }
}

/// Runs a child until it blocks at `point`, or for `delay` after it starts, and kills it.
fn crash(dir: &Path, tool: Tool, order: &str, kill: Kill) -> Vec<String> {
    match kill {
        Kill::At(point) => {
            let mut child = Child::spawn(dir, tool, order, point.name(), Duration::ZERO);
            child.wait_for("stop");
            child.kill()
        }
        Kill::After { after, delay, pause } => {
            let mut child = Child::spawn(dir, tool, order, "none", pause);
            child.wait_for(after);
            std::thread::sleep(delay);
            child.kill()
        }
    }
}

/// Polls the status function until the abandoned call's lease has ended, a known condition
/// the store reports, within the deadline.
fn wait_until_unknown(tool: Tool, order: &str) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        match tool.status(order) {
            Status::Unknown { .. } => return,
            Status::InProgress { .. } => {}
            other => panic!("{order}: waiting for the lease to end, the status became {other:?}"),
        }
        assert!(Instant::now() < deadline, "{order}: the lease did not end within {DEADLINE:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn runs_of(log: &Mutex<Vec<(String, i64)>>, key: &str) -> Vec<i64> {
    log.lock().unwrap().iter().filter(|(k, _)| k == key).map(|(_, at)| *at).collect()
}

fn hook_calls(key: &str) -> i64 {
    ledger().query_row("SELECT count(*) FROM hook_calls WHERE idempotency_key = ?1", [key], |r| r.get(0)).unwrap()
}

/// What a kill left: where it landed, the record, and the charges.
fn inspect(tool: Tool, order: &str, seen: &[String]) -> (Landed, Option<idem::store::Record>, Vec<Charge>) {
    let key = format!("charge:{order}");
    let record = block_on(STORE.read(RecordId { namespace: tool.namespace(), key: &key })).unwrap();
    let sent = charges(tool.provider(), &key);
    let in_progress = |r: &idem::store::Record| matches!(r.state, RecordState::InProgress { .. });
    let landed = match (&record, sent.len()) {
        (None, 0) => Landed::BeforeReserving,
        (Some(r), 0) if in_progress(r) => Landed::ReservedNotSent,
        (Some(r), 1) if in_progress(r) => Landed::SentNotCompleted,
        (Some(r), 1) if matches!(r.state, RecordState::Completed { .. }) => Landed::Completed,
        (record, n) => panic!("{order}: after the kill (markers {seen:?}): record {record:?} with {n} charges"),
    };
    (landed, record, sent)
}

fn run_trial(dir: &Path, trial: &Trial) -> TrialReport {
    let (tool, order) = (trial.tool, trial.order.as_str());
    let provider = tool.provider();
    let key = format!("charge:{order}");

    let seen = crash(dir, tool, order, trial.kill);
    let (mut landed, mut record, mut sent) = inspect(tool, order, &seen);
    if let Kill::At(point) = trial.kill {
        let expected = match point {
            Point::Reserved | Point::Sending => Landed::ReservedNotSent,
            Point::Sent => Landed::SentNotCompleted,
            Point::Completed | Point::Reconciling => Landed::Completed,
        };
        assert_eq!(landed, expected, "{order}: killed at {point:?}");
    }
    if let Some(point) = trial.then_kill_recovery_at {
        // A second process finds the key abandoned and is killed while it recovers it.
        let first = record.clone().expect("a crash that reserved");
        wait_until_unknown(tool, order);
        let hooks = hook_calls(&key);
        let seen = crash(dir, tool, order, Kill::At(point));
        (landed, record, sent) = inspect(tool, order, &seen);
        let taken_over = record.as_ref().expect("still reserved");
        assert!(taken_over.token > first.token, "{order}: the recovery holds a larger token");
        assert!(matches!(taken_over.state, RecordState::InProgress { .. }), "{order}");
        assert_eq!(taken_over.created_at_ms, first.created_at_ms, "{order}: the action's start is kept");
        assert_eq!(hook_calls(&key), hooks + 1, "{order}: the recovery asked the provider once");
        let expected = if point == Point::Sent { Landed::SentNotCompleted } else { landed };
        assert_eq!(landed, expected, "{order}: recovery killed at {point:?} ({seen:?})");
    }
    let lease_until = match record.as_ref().map(|r| &r.state) {
        Some(RecordState::InProgress { lease_until_ms, .. }) => Some(*lease_until_ms),
        _ => None,
    };

    // The next caller, at once.
    let (answer, immediate) = tool.observe(order, AMOUNT);
    let answered_at = now_ms();
    let lease_held = lease_until.is_some_and(|until| answered_at < until);
    if let Some(until) = lease_until {
        // Whatever the timing, neither the body nor the hook ran here before the lease ended.
        for at in runs_of(&BODY_RUNS, &key).into_iter().chain(runs_of(&HOOK_CALLS, &key)) {
            assert!(at + 2 >= until, "{order}: the body or hook ran at {at}, before the lease ended at {until}");
        }
        if lease_held {
            assert_eq!(immediate, Outcome::InProgress, "{order}: {answer:?}");
            assert_eq!(answer.unwrap_err().code(), ErrorCode::InProgress);
            assert!(runs_of(&BODY_RUNS, &key).is_empty(), "{order}: the body ran while the lease held");
            assert!(runs_of(&HOOK_CALLS, &key).is_empty(), "{order}: the hook ran while the lease held");
            assert_eq!(charges(provider, &key), sent, "{order}: a charge while the lease held");
        }
    } else {
        let charge = answer.unwrap_or_else(|e| panic!("{order}: {e}"));
        if landed == Landed::BeforeReserving {
            assert_eq!(immediate, Outcome::Fresh, "{order}");
        } else {
            assert_eq!(immediate, Outcome::Replayed, "{order}");
            assert_eq!((charge.id, charge.replayed), (sent[0].id, true), "{order}");
        }
    }

    // After the lease: reconcile (or OUTCOME_UNKNOWN without a hook).
    let mut after_lease = Vec::new();
    if let Status::InProgress { .. } | Status::Unknown { .. } = tool.status(order) {
        wait_until_unknown(tool, order);
        let before = charges(provider, &key);
        assert_eq!(before, sent, "{order}: a charge while the call was abandoned");
        let hooks = hook_calls(&key);
        let answers = if trial.race { race(dir, tool, order) } else { vec![tool.observe(order, AMOUNT)] };
        after_lease = answers.iter().map(|(_, outcome)| *outcome).collect();
        if tool == Tool::Unhooked {
            let (answer, outcome) = &answers[0];
            assert_eq!(*outcome, Outcome::Unknown, "{order}: {answer:?}");
            assert_eq!(answer.as_ref().unwrap_err().code(), ErrorCode::OutcomeUnknown);
            assert_eq!(charges(provider, &key), before, "{order}: without a hook nothing runs");
            return TrialReport { trial: trial.clone(), landed, immediate, lease_held, after_lease };
        }
        assert_eq!(hook_calls(&key), hooks + 1, "{order}: one hook call settles it ({after_lease:?})");
        let settling = if before.is_empty() { Outcome::Fresh } else { Outcome::Reconciled };
        let settled = after_lease.iter().filter(|o| **o == settling).count();
        assert_eq!(settled, 1, "{order}: one caller settles the key: {after_lease:?}");
        for (answer, outcome) in &answers {
            match outcome {
                Outcome::InProgress => assert_eq!(answer.as_ref().unwrap_err().code(), ErrorCode::InProgress),
                o if *o == settling || *o == Outcome::Replayed => {
                    let charge = answer.as_ref().unwrap_or_else(|e| panic!("{order}: {e}"));
                    if let Some(first) = before.first() {
                        assert_eq!(charge.id, first.id, "{order}: the provider's charge");
                    }
                    assert_eq!(charge.replayed, *o != Outcome::Fresh, "{order}: {o:?}");
                }
                other => panic!("{order}: after the lease, {other:?}: {answer:?}"),
            }
        }
    }

    // From now on the key replays the one charge.
    let after = charges(provider, &key);
    assert_eq!(after.len(), 1, "{order}: charges {after:?}");
    let (again, outcome) = tool.observe(order, AMOUNT);
    assert_eq!(outcome, Outcome::Replayed, "{order}: {again:?}");
    assert_eq!(again.unwrap().id, after[0].id, "{order}");
    let Status::Completed(status) = tool.status(order) else { panic!("{order}: not completed") };
    assert_eq!(status.id, after[0].id, "{order}");
    TrialReport { trial: trial.clone(), landed, immediate, lease_held, after_lease }
}

/// Two threads of this process and one child process call at the same moment.
fn race(dir: &Path, tool: Tool, order: &str) -> Vec<(Result<Charge, idem::Error>, Outcome)> {
    let mut racer = Child::spawn(dir, tool, order, "race", Duration::ZERO);
    racer.wait_for("ready");
    let start = std::sync::Barrier::new(3);
    let mut answers = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    start.wait();
                    tool.observe(order, AMOUNT)
                })
            })
            .collect();
        start.wait();
        racer.release();
        threads.into_iter().map(|t| t.join().unwrap()).collect::<Vec<_>>()
    });
    let seen = racer.finish();
    let reported = seen.iter().find_map(|m| m.strip_prefix("outcome ")).expect("the racer reports its outcome");
    let outcome = Outcome::ALL.into_iter().find(|o| o.as_str() == reported).unwrap();
    // The racer's answer is checked by its outcome; a replay's charge is the one charge.
    let answer = match outcome {
        Outcome::InProgress => Err(idem::Error::new(ErrorCode::InProgress, "in the racer")),
        _ => match tool.status(order) {
            Status::Completed(mut charge) => {
                charge.replayed = outcome != Outcome::Fresh;
                Ok(charge)
            }
            other => panic!("{order}: the racer answered {outcome:?} but the status is {other:?}"),
        },
    };
    answers.push((answer, outcome));
    answers
}

/// The parent tests' directory (the store and the ledger), made once per process: both
/// parents share it, each on keys of its own. A `static` is never dropped, so it cannot be
/// a `TempDir` that removes itself (each run left one in `/tmp`): it is
/// `crash-parent-<pid>` in Cargo's temporary directory for tests, and each process first
/// removes those of processes that are gone.
fn parent_dir() -> &'static Path {
    static MADE: OnceLock<PathBuf> = OnceLock::new();
    MADE.get_or_init(|| {
        let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
        remove_gone_parents(tmp);
        let dir = tmp.join(format!("{PARENT_DIR}{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        DIR.set(dir.clone()).expect("the parent sets the directory");
        create_ledger();
        LazyLock::force(&STORE);
        dir
    })
}

/// What a parent's directory is called, before its process id.
const PARENT_DIR: &str = "crash-parent-";

/// Removes the parent directories in `tmp` whose process is gone (on Linux, where `/proc`
/// tells; elsewhere they stay).
fn remove_gone_parents(tmp: &Path) {
    let (Ok(entries), true) = (std::fs::read_dir(tmp), Path::new("/proc/self").exists()) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|name| name.strip_prefix(PARENT_DIR)) else { continue };
        if !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[test]
fn sigkill_at_varied_points_leaves_one_charge_per_key() {
    let dir = parent_dir();

    let seed = std::env::var(SEED_ENV).ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| now_ms() as u64);
    eprintln!("crash trials: seed {seed} (set {SEED_ENV} to replay the random delays)");
    let trials = plan(seed);
    let next = AtomicUsize::new(0);
    let reports = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..WORKERS {
            scope.spawn(|| {
                while let Some(trial) = trials.get(next.fetch_add(1, Ordering::SeqCst)) {
                    let report = run_trial(dir, trial);
                    reports.lock().unwrap().push(report);
                }
            });
        }
    });
    let reports = reports.into_inner().unwrap();
    assert_eq!(reports.len(), trials.len());

    // Across all trials: one charge per key, counted in the providers' own ledgers.
    let conn = ledger();
    let count = |sql: &str, key: &str| -> i64 { conn.query_row(sql, [key], |r| r.get(0)).unwrap() };
    for trial in trials.iter().filter(|t| t.tool != Tool::Unhooked) {
        let key = format!("charge:{}", trial.order);
        let table = trial.tool.provider().table();
        let n = count(&format!("SELECT count(*) FROM {table} WHERE idempotency_key = ?1"), &key);
        assert_eq!(n, 1, "{key}: charges in the {table} ledger");
        // Not even the deduplicating provider had to absorb a re-send.
        let requests = count("SELECT count(*) FROM requests WHERE idempotency_key = ?1", &key);
        assert_eq!(requests, 1, "{key}: requests sent");
    }
    // The frozen holder's test shares the ledger; its charge is its own.
    let total: i64 = conn
        .query_row(
            "SELECT (SELECT count(*) FROM dedup_charges) + (SELECT count(*) FROM plain_charges WHERE order_id NOT LIKE 'frozen-%')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let hooked = trials.iter().filter(|t| t.tool != Tool::Unhooked).count();
    let unhooked_charged =
        reports.iter().filter(|r| r.trial.tool == Tool::Unhooked && r.landed == Landed::SentNotCompleted).count();
    assert_eq!(total as usize, hooked + unhooked_charged, "no charge beyond one per key");

    summarize(&reports);
}

fn summarize(reports: &[TrialReport]) {
    let mut lines = std::collections::BTreeMap::<String, usize>::new();
    for r in reports {
        let kind = match (r.trial.kill, r.trial.then_kill_recovery_at) {
            (Kill::After { .. }, _) => "random delay".to_owned(),
            (Kill::At(point), None) => format!("at {}", point.name()),
            (Kill::At(point), Some(then)) => format!("at {}, then at {}", point.name(), then.name()),
        };
        let held = if r.lease_held { "lease held" } else { "no lease held" };
        let after: Vec<&str> = r.after_lease.iter().map(|o| o.as_str()).collect();
        let line = format!(
            "{:<8} {kind:<33} {:<16} -> at once {:<11} ({held}) -> after the lease {}",
            r.trial.tool.name(),
            format!("{:?}", r.landed),
            r.immediate.as_str(),
            if after.is_empty() { "-".to_owned() } else { after.join("+") },
        );
        *lines.entry(line).or_default() += 1;
    }
    eprintln!("{} crash trials:", reports.len());
    for (line, n) in lines {
        eprintln!("  {n:>3} x {line}");
    }
}

/// A holder that is not dead but frozen (a stopped process, a pause longer than its lease)
/// without a reconcile hook: while it is frozen callers get OUTCOME_UNKNOWN, which says the
/// outcome may still become known, and the status reads `unknown`; nobody takes the key
/// over, so when the holder resumes its completion lands, and every later call replays the
/// one charge it made.
#[test]
fn a_holder_frozen_past_its_lease_without_a_hook_records_its_late_result() {
    let dir = parent_dir();
    let (tool, order) = (Tool::Unhooked, "frozen-1");
    let key = format!("charge:{order}");
    let signal = |pid: u32, signal: &str| {
        let sent = Command::new("kill").args([signal, &pid.to_string()]).status().unwrap();
        assert!(sent.success(), "kill {signal} {pid}");
    };
    let mut child = Child::spawn(dir, tool, order, "hold-sent", Duration::ZERO);
    child.wait_for("held");
    let sent = charges(tool.provider(), &key);
    assert_eq!(sent.len(), 1, "the frozen call sent its charge");
    let pid = child.process.id();
    signal(pid, "-STOP");
    wait_until_unknown(tool, order);

    let (answer, outcome) = tool.observe(order, AMOUNT);
    assert_eq!(outcome, Outcome::Unknown, "{answer:?}");
    let error = answer.unwrap_err();
    assert_eq!(error.code(), ErrorCode::OutcomeUnknown);
    assert!(error.message().contains("may still finish and record its result"), "{error}");
    let suggestion = error.suggestion().unwrap_or_default();
    assert!(suggestion.contains("charge_unhooked_status") && suggestion.contains("later"), "{suggestion}");
    assert!(matches!(tool.status(order), Status::Unknown { .. }));
    assert_eq!(charges(tool.provider(), &key), sent, "nothing ran while it was frozen");

    child.release();
    signal(pid, "-CONT");
    child.wait_for("idle");
    let (again, outcome) = tool.observe(order, AMOUNT);
    assert_eq!(outcome, Outcome::Replayed, "the late completion landed: {again:?}");
    assert_eq!(again.unwrap().id, sent[0].id);
    let Status::Completed(status) = tool.status(order) else { panic!("{order}: not completed") };
    assert_eq!(status.id, sent[0].id);
    assert_eq!(charges(tool.provider(), &key), sent, "one charge in all");
    child.kill();
}
