//! `cargo bench`: what `#[idempotent]` adds to a tool call, against hand-written code that
//! does the same job, measured in one run and one process (see BENCHMARKS.md).
//!
//! - Calls: first calls (distinct keys), replays, IN_PROGRESS and CONFLICT answers on the
//!   memory store (against a `HashMap` behind a `Mutex`) and on the SQLite store (against
//!   hand-written rusqlite at the same durability, `FULL` and `NORMAL`), and key building
//!   alone. idem and baseline batches alternate round by round.
//! - Throughput: 1, 2 and 8 threads over 1,000 keys, each called 4 times in a shuffled
//!   order, on SQLite; every key's effect is counted and must happen exactly once.
//!
//! `IDEM_BENCH_QUICK=1 cargo bench` runs a few iterations of everything: the smoke mode
//! that `tests/bench_smoke.rs` runs inside `cargo test --workspace`.

#[path = "harness/mod.rs"]
mod harness;

use std::collections::HashMap;
use std::hint::black_box;
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use idem::__private::{FieldMode, Segment, build_key};
use idem::store::{RecordId, Reservation, Reserve, Synchronous};
use idem::{ErrorCode, KeyPart, MemoryStore, SqliteStore, Status, Store, idempotent};
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use harness::{Pair, Plan, Table, compare, show_ns};

/// The bench tool's record namespace, set explicitly so that the in-progress benches can
/// reserve its keys through the store API.
const NAMESPACE: &str = "bench::send_invoice";
const PERIOD: &str = "2026-10";
const AMOUNT: f64 = 120.0;
const OTHER_AMOUNT: f64 = 150.0;
/// How the bench tool's compared field (`amount = 120.0`) is stored.
const REQUEST_JSON: &str = r#"{"amount":120.0}"#;
/// Long enough that no reservation made by the benches ends during a run.
const LONG_LEASE: Duration = Duration::from_secs(3600);

// ---------------------------------------------------------------------------------------
// The tool: the article's `send_invoice` with a no-op body, with idem and by hand.

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Invoice {
    pub id: String,
    pub amount: f64,
    #[serde(default)]
    pub replayed: bool,
}

#[derive(Debug)]
pub enum ToolError {
    Idem(idem::Error),
    /// The hand-written tools' answers.
    InProgress,
    Conflict {
        stored: f64,
        requested: f64,
    },
    Store(String),
}

impl From<idem::Error> for ToolError {
    fn from(error: idem::Error) -> Self {
        ToolError::Idem(error)
    }
}

impl ToolError {
    fn is(&self, code: ErrorCode) -> bool {
        match self {
            ToolError::Idem(error) => error.code() == code,
            ToolError::InProgress => code == ErrorCode::InProgress,
            ToolError::Conflict { .. } => code == ErrorCode::Conflict,
            ToolError::Store(_) => code == ErrorCode::StoreUnavailable,
        }
    }
}

/// Counts the body's effects: in total, and per key where a run numbers its keys.
#[derive(Debug, Default)]
pub struct Effects {
    total: AtomicU64,
    per_key: Vec<AtomicU32>,
}

impl Effects {
    fn numbered(keys: usize) -> Self {
        Effects { total: AtomicU64::new(0), per_key: (0..keys).map(|_| AtomicU32::new(0)).collect() }
    }

    fn total(&self) -> u64 {
        self.total.load(Ordering::SeqCst)
    }
}

/// The tool's body, shared by idem and the baselines: records one effect (on the key
/// numbered by `memo` when it is a number) and returns a small invoice.
fn body(effects: &Effects, customer: &str, period: &str, amount: f64, memo: &str) -> Invoice {
    black_box((customer, period));
    let n = effects.total.fetch_add(1, Ordering::Relaxed);
    if let Ok(i) = memo.parse::<usize>()
        && let Some(slot) = effects.per_key.get(i)
    {
        slot.fetch_add(1, Ordering::Relaxed);
    }
    Invoice { id: format!("inv-{n}"), amount: black_box(amount), replayed: false }
}

/// The tool with idem, over any store.
pub struct Tools<S> {
    pub store: S,
    pub effects: Arc<Effects>,
}

impl<S: Store> Tools<S> {
    fn new(store: S) -> Self {
        Tools { store, effects: Arc::default() }
    }

    /// Create and send the invoice for one customer and billing period.
    #[idempotent(key = "invoice:<customer>:<period>", compare = [amount], store = self.store, namespace = "bench::send_invoice")]
    pub fn send_invoice(
        &self,
        customer: String,
        period: String,
        amount: f64,
        memo: String,
    ) -> Result<Invoice, ToolError> {
        Ok(body(&self.effects, &customer, &period, amount, &memo))
    }
}

/// The same tool by hand over a `HashMap` behind a `Mutex`: one lookup for a repeat; a
/// lookup, an insert and a second lookup to store the result for a first call.
pub struct HandMemory {
    map: Mutex<HashMap<String, HandEntry>>,
    pub effects: Effects,
}

struct HandEntry {
    amount: f64,
    result: Option<Invoice>,
}

impl HandMemory {
    fn new() -> Self {
        HandMemory { map: Mutex::default(), effects: Effects::default() }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, HandEntry>> {
        self.map.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn send_invoice(
        &self,
        customer: String,
        period: String,
        amount: f64,
        memo: String,
    ) -> Result<Invoice, ToolError> {
        let key = format!("invoice:{customer}:{period}");
        {
            let mut map = self.lock();
            if let Some(entry) = map.get(&key) {
                if entry.amount != amount {
                    return Err(ToolError::Conflict { stored: entry.amount, requested: amount });
                }
                return match &entry.result {
                    Some(invoice) => Ok(Invoice { replayed: true, ..invoice.clone() }),
                    None => Err(ToolError::InProgress),
                };
            }
            map.insert(key.clone(), HandEntry { amount, result: None });
        }
        let invoice = body(&self.effects, &customer, &period, amount, &memo);
        if let Some(entry) = self.lock().get_mut(&key) {
            entry.result = Some(invoice.clone());
        }
        Ok(invoice)
    }

    /// Reserves a key without completing it, for the in-progress bench.
    fn reserve_only(&self, customer: &str) {
        self.lock().insert(format!("invoice:{customer}:{PERIOD}"), HandEntry { amount: AMOUNT, result: None });
    }
}

/// The same tool by hand with rusqlite, at the same durability as the idem store it is
/// compared with: `send_invoice` answers a repeat with one SELECT, and
/// `send_invoice_new` is the first-call path alone (INSERT to reserve, UPDATE to
/// complete), the minimum a first call must pay.
pub struct HandSqlite {
    conn: Connection,
    complete: &'static str,
    pub effects: Arc<Effects>,
}

/// The hand-written table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HandSchema {
    /// The least a hand-written table needs: the key, the compared amount, the result.
    Minimal,
    /// The same plus what idem's schema adds to every first call's writes: an
    /// `AUTOINCREMENT` token (never reused, so fencing holds; SQLite writes its counter
    /// on every insert) and a retention column indexed once the record is settled.
    IdemLike,
}

const HAND_SCHEMA: &str =
    "CREATE TABLE IF NOT EXISTS hand_invoices (key TEXT PRIMARY KEY, amount REAL NOT NULL, result TEXT)";
const HAND_SCHEMA_IDEM_LIKE: &str = "
CREATE TABLE IF NOT EXISTS hand_invoices (token INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL UNIQUE,
    amount REAL NOT NULL, result TEXT, retain_until_ms INTEGER);
CREATE INDEX IF NOT EXISTS hand_invoices_retention ON hand_invoices (retain_until_ms)
    WHERE retain_until_ms IS NOT NULL;";
const HAND_RESERVE: &str = "INSERT INTO hand_invoices (key, amount) VALUES (?1, ?2) ON CONFLICT (key) DO NOTHING";
const HAND_COMPLETE: &str = "UPDATE hand_invoices SET result = ?2 WHERE key = ?1";
const HAND_COMPLETE_IDEM_LIKE: &str = "UPDATE hand_invoices SET result = ?2, \
     retain_until_ms = CAST(unixepoch('subsec') * 1000 AS INTEGER) + 604800000 WHERE key = ?1";
const HAND_SELECT: &str = "SELECT amount, result FROM hand_invoices WHERE key = ?1";

fn sync_pragma(sync: Synchronous) -> &'static str {
    match sync {
        Synchronous::Full => "FULL",
        _ => "NORMAL",
    }
}

fn store_error(error: impl std::fmt::Display) -> ToolError {
    ToolError::Store(error.to_string())
}

impl HandSqlite {
    fn open(path: &Path, sync: Synchronous, effects: Arc<Effects>) -> Self {
        Self::open_with(path, sync, effects, HandSchema::Minimal)
    }

    fn open_with(path: &Path, sync: Synchronous, effects: Arc<Effects>, schema: HandSchema) -> Self {
        let conn = Connection::open(path).unwrap();
        // SQLite's own busy handler sleeps up to 100 ms between attempts, so under eight
        // writers it can starve past a 5 s timeout ("database is locked"); 60 s never fails.
        conn.busy_timeout(Duration::from_secs(60)).unwrap();
        let mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0)).unwrap();
        assert_eq!(mode.to_lowercase(), "wal");
        conn.pragma_update(None, "synchronous", sync_pragma(sync)).unwrap();
        let (create, complete) = match schema {
            HandSchema::Minimal => (HAND_SCHEMA, HAND_COMPLETE),
            HandSchema::IdemLike => (HAND_SCHEMA_IDEM_LIKE, HAND_COMPLETE_IDEM_LIKE),
        };
        conn.execute_batch(create).unwrap();
        HandSqlite { conn, complete, effects }
    }

    pub fn send_invoice(
        &self,
        customer: String,
        period: String,
        amount: f64,
        memo: String,
    ) -> Result<Invoice, ToolError> {
        let key = format!("invoice:{customer}:{period}");
        match self.existing(&key, amount) {
            Some(answer) => answer,
            None => self.reserve_and_run(&key, &customer, &period, amount, &memo),
        }
    }

    pub fn send_invoice_new(
        &self,
        customer: String,
        period: String,
        amount: f64,
        memo: String,
    ) -> Result<Invoice, ToolError> {
        let key = format!("invoice:{customer}:{period}");
        self.reserve_and_run(&key, &customer, &period, amount, &memo)
    }

    fn reserve_and_run(
        &self,
        key: &str,
        customer: &str,
        period: &str,
        amount: f64,
        memo: &str,
    ) -> Result<Invoice, ToolError> {
        let mut reserve = self.conn.prepare_cached(HAND_RESERVE).map_err(store_error)?;
        if reserve.execute(params![key, amount]).map_err(store_error)? == 0 {
            return self.existing(key, amount).unwrap_or_else(|| Err(store_error("the record vanished")));
        }
        let invoice = body(&self.effects, customer, period, amount, memo);
        let json = serde_json::to_string(&invoice).map_err(store_error)?;
        let mut complete = self.conn.prepare_cached(self.complete).map_err(store_error)?;
        complete.execute(params![key, json]).map_err(store_error)?;
        Ok(invoice)
    }

    /// The answer for a key that has a record: CONFLICT, IN_PROGRESS or the stored result.
    fn existing(&self, key: &str, amount: f64) -> Option<Result<Invoice, ToolError>> {
        let row = self.conn.prepare_cached(HAND_SELECT).and_then(|mut select| {
            select.query_row([key], |row| Ok((row.get::<_, f64>(0)?, row.get::<_, Option<String>>(1)?))).optional()
        });
        let (stored, result) = match row {
            Ok(row) => row?,
            Err(error) => return Some(Err(store_error(error))),
        };
        if stored != amount {
            return Some(Err(ToolError::Conflict { stored, requested: amount }));
        }
        Some(match result {
            None => Err(ToolError::InProgress),
            Some(json) => serde_json::from_str::<Invoice>(&json)
                .map(|invoice| Invoice { replayed: true, ..invoice })
                .map_err(store_error),
        })
    }

    fn reserve_only(&self, customer: &str) {
        self.conn
            .execute(HAND_RESERVE, params![format!("invoice:{customer}:{PERIOD}"), AMOUNT])
            .map(|inserted| assert_eq!(inserted, 1))
            .unwrap();
    }
}

// ---------------------------------------------------------------------------------------
// Arguments and checks.

/// One call's arguments.
#[derive(Clone, Debug)]
struct Args {
    customer: String,
    period: String,
    amount: f64,
    memo: String,
}

impl Args {
    fn new(customer: String, amount: f64) -> Self {
        Args { customer, period: PERIOD.to_owned(), amount, memo: String::new() }
    }
}

/// Customers never used before in this process: every first call gets a distinct key.
fn fresh_customers(n: usize) -> Vec<Args> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let first = NEXT.fetch_add(n as u64, Ordering::Relaxed);
    (first..first + n as u64).map(|i| Args::new(format!("Acme {i}"), AMOUNT)).collect()
}

/// `n` calls cycling over `pool` existing keys, starting after where the last batch ended.
fn cycling(pool: &[String], cursor: &mut usize, n: usize, amount: f64) -> Vec<Args> {
    (0..n)
        .map(|_| {
            *cursor = (*cursor + 1) % pool.len();
            Args::new(pool[*cursor].clone(), amount)
        })
        .collect()
}

/// Times one batch of calls: `call` runs on each argument set; `check` sees every answer
/// (untimed: the answers are kept and checked after the clock stops).
fn timed<F>(args: Vec<Args>, mut call: F, check: impl Fn(&Result<Invoice, ToolError>)) -> Duration
where
    F: FnMut(String, String, f64, String) -> Result<Invoice, ToolError>,
{
    let mut answers = Vec::with_capacity(args.len());
    let start = Instant::now();
    for a in args {
        answers.push(black_box(call(black_box(a.customer), a.period, a.amount, a.memo)));
    }
    let elapsed = start.elapsed();
    answers.iter().for_each(check);
    elapsed
}

fn fresh(answer: &Result<Invoice, ToolError>) {
    assert!(matches!(answer, Ok(invoice) if !invoice.replayed), "expected a fresh result, got {answer:?}");
}

fn replayed(answer: &Result<Invoice, ToolError>) {
    assert!(matches!(answer, Ok(invoice) if invoice.replayed), "expected a replay, got {answer:?}");
}

fn in_progress(answer: &Result<Invoice, ToolError>) {
    assert!(matches!(answer, Err(e) if e.is(ErrorCode::InProgress)), "expected IN_PROGRESS, got {answer:?}");
}

fn conflict(answer: &Result<Invoice, ToolError>) {
    assert!(matches!(answer, Err(e) if e.is(ErrorCode::Conflict)), "expected CONFLICT, got {answer:?}");
}

/// How a repeat bench calls and what it must get back.
type Check = fn(&Result<Invoice, ToolError>);

// ---------------------------------------------------------------------------------------
// The report.

/// What a row must meet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Target {
    None,
    /// Median idem / median baseline at most this.
    RatioAtMost(f64),
    /// Median idem time per call at most this many nanoseconds.
    IdemAtMostNs(f64),
}

impl Target {
    fn text(self) -> String {
        match self {
            Target::None => String::new(),
            Target::RatioAtMost(ratio) => format!("≤ {ratio:.2}x"),
            Target::IdemAtMostNs(ns) => format!("idem ≤ {}", show_ns(ns)),
        }
    }

    fn met(self, pair: &Pair) -> Option<bool> {
        match self {
            Target::None => None,
            Target::RatioAtMost(ratio) => Some(pair.ratio() <= ratio),
            Target::IdemAtMostNs(ns) => Some(pair.idem_ns() <= ns),
        }
    }
}

/// One measured comparison.
#[derive(Clone, Debug)]
pub struct Row {
    pub store: &'static str,
    pub call: &'static str,
    pub baseline: &'static str,
    pub pair: Pair,
    pub target: Target,
}

/// One throughput configuration: median calls per second over the repetitions.
#[derive(Clone, Debug)]
pub struct ThroughputRow {
    pub sync: &'static str,
    pub threads: usize,
    pub idem_per_s: f64,
    pub hand_per_s: f64,
    /// Median over the repetitions of this thread count's rate / one thread's rate, taken
    /// within each repetition.
    pub idem_vs_one: f64,
    pub hand_vs_one: f64,
    /// Answers of idem's runs: (fresh, replayed, in progress), summed over repetitions.
    pub idem_answers: (usize, usize, usize),
}

#[derive(Clone, Debug, Default)]
pub struct Report {
    pub rows: Vec<Row>,
    pub throughput: Vec<ThroughputRow>,
    pub wall: Duration,
}

impl Report {
    pub fn calls_table(&self) -> Table {
        let mut table =
            Table::new(&["store", "call", "idem", "hand-written", "ratio", "paired IQR", "target", "met", "baseline"]);
        for row in &self.rows {
            let (low, high) = row.pair.paired_iqr();
            table.push(vec![
                row.store.to_owned(),
                row.call.to_owned(),
                show_ns(row.pair.idem_ns()),
                show_ns(row.pair.base_ns()),
                format!("{:.2}x", row.pair.ratio()),
                format!("{low:.2}-{high:.2}"),
                row.target.text(),
                match row.target.met(&row.pair) {
                    None => String::new(),
                    Some(true) => "yes".to_owned(),
                    // The ratio is shown with two decimals: say why 1.50x misses ≤ 1.50x.
                    Some(false) if matches!(row.target, Target::RatioAtMost(_)) => {
                        format!("**no** ({:.3}x)", row.pair.ratio())
                    }
                    Some(false) => "**no**".to_owned(),
                },
                row.baseline.to_owned(),
            ]);
        }
        table
    }

    pub fn throughput_table(&self) -> Table {
        let mut table = Table::new(&[
            "SQLite",
            "threads",
            "idem calls/s",
            "idem vs 1 thread",
            "hand-written calls/s",
            "hand vs 1 thread",
            "idem / hand",
            "idem answers: fresh / replayed / in progress",
        ]);
        for row in &self.throughput {
            table.push(vec![
                row.sync.to_owned(),
                row.threads.to_string(),
                format!("{:.0}", row.idem_per_s),
                format!("{:.2}x", row.idem_vs_one),
                format!("{:.0}", row.hand_per_s),
                format!("{:.2}x", row.hand_vs_one),
                format!("{:.2}x", row.idem_per_s / row.hand_per_s),
                format!("{} / {} / {}", row.idem_answers.0, row.idem_answers.1, row.idem_answers.2),
            ]);
        }
        table
    }

    /// Every ratio and rate, for checks that the numbers are real.
    pub fn numbers(&self) -> Vec<f64> {
        let calls = self.rows.iter().flat_map(|r| [r.pair.idem_ns(), r.pair.base_ns(), r.pair.ratio()]);
        let rates = self.throughput.iter().flat_map(|t| [t.idem_per_s, t.hand_per_s, t.idem_vs_one, t.hand_vs_one]);
        calls.chain(rates).collect()
    }

    pub fn targets(&self) -> (usize, usize) {
        let judged: Vec<bool> = self.rows.iter().filter_map(|r| r.target.met(&r.pair)).collect();
        (judged.iter().filter(|met| **met).count(), judged.len())
    }

    pub fn print(&self, settings: &Settings) {
        println!();
        println!("## Calls (medians per call; ratio = idem / hand-written)");
        println!();
        print!("{}", self.calls_table().markdown());
        println!();
        println!(
            "## Throughput (SQLite, {} keys x {} calls each, shuffled; medians of {}; vs 1 thread: paired per repetition)",
            settings.keys, DUPLICATES, settings.repetitions
        );
        println!();
        print!("{}", self.throughput_table().markdown());
        println!();
        let (met, judged) = self.targets();
        println!("targets met: {met} of {judged}; wall time {:.1} s", self.wall.as_secs_f64());
        if settings.quick {
            println!("(quick mode: a few iterations each, the numbers mean nothing)");
        }
    }
}

// ---------------------------------------------------------------------------------------
// The benches.

/// How much to run.
#[derive(Clone, Debug)]
pub struct Settings {
    pub quick: bool,
    /// Keys of the throughput runs.
    pub keys: usize,
    /// Throughput runs per configuration.
    pub repetitions: usize,
    /// Rounds of every comparison.
    pub rounds: usize,
    /// Runs only the groups whose name contains this (`IDEM_BENCH_ONLY`): `memory`,
    /// `keys`, `sqlite-full`, `sqlite-normal`, `throughput`; for profiling one of them.
    pub only: Option<String>,
}

/// Calls per key in the throughput runs.
const DUPLICATES: usize = 4;

impl Settings {
    pub fn full() -> Self {
        Settings { quick: false, keys: 1000, repetitions: 3, rounds: 31, only: None }
    }

    pub fn quick() -> Self {
        Settings { quick: true, keys: 8, repetitions: 1, rounds: 3, only: None }
    }

    pub fn from_env() -> Self {
        let settings = match std::env::var("IDEM_BENCH_QUICK") {
            Ok(value) if !value.is_empty() && value != "0" => Settings::quick(),
            _ => Settings::full(),
        };
        Settings { only: std::env::var("IDEM_BENCH_ONLY").ok().filter(|only| !only.is_empty()), ..settings }
    }

    fn runs(&self, group: &str) -> bool {
        self.only.as_ref().is_none_or(|only| group.contains(only.as_str()))
    }

    fn plan(&self, batch: usize) -> Plan {
        self.plan_rounds(batch, self.rounds)
    }

    fn plan_rounds(&self, batch: usize, rounds: usize) -> Plan {
        if self.quick {
            Plan { warmup: 1, rounds: self.rounds, batch: batch.min(3) }
        } else {
            Plan { warmup: 2, rounds, batch }
        }
    }

    /// Existing keys to cycle over in the repeat benches.
    fn pool(&self) -> usize {
        if self.quick { 4 } else { 256 }
    }
}

/// Runs every bench and returns the report; panics if any answer or effect count is wrong.
pub fn run(settings: &Settings) -> Report {
    let started = Instant::now();
    let mut report = Report::default();
    let dir = tempfile::tempdir().unwrap();
    let mut group = |name: String, bench: &mut dyn FnMut(&mut Report)| {
        if settings.runs(&name) {
            if !settings.quick {
                eprintln!("[{:6.1} s] {name}", started.elapsed().as_secs_f64());
            }
            bench(&mut report);
        }
    };
    group("memory".into(), &mut |report| memory(settings, report));
    group("keys".into(), &mut |report| keys(settings, report));
    for sync in [Synchronous::Full, Synchronous::Normal] {
        let name = format!("sqlite-{}", sync_pragma(sync).to_lowercase());
        group(name, &mut |report| sqlite(settings, sync, dir.path(), report));
    }
    for sync in [Synchronous::Full, Synchronous::Normal] {
        let name = format!("throughput-{}", sync_pragma(sync).to_lowercase());
        group(name, &mut |report| throughput(settings, sync, dir.path(), report));
    }
    report.wall = started.elapsed();
    report
}

fn memory(settings: &Settings, report: &mut Report) {
    let baseline = "HashMap + Mutex";
    let first = compare(
        settings.plan(2000),
        |n| {
            let tools = Tools::new(MemoryStore::new());
            let elapsed = timed(fresh_customers(n), |c, p, a, m| tools.send_invoice(c, p, a, m), fresh);
            assert_eq!(tools.effects.total(), n as u64);
            elapsed
        },
        |n| {
            let hand = HandMemory::new();
            let elapsed = timed(fresh_customers(n), |c, p, a, m| hand.send_invoice(c, p, a, m), fresh);
            assert_eq!(hand.effects.total(), n as u64);
            elapsed
        },
    );
    report.rows.push(Row {
        store: "memory",
        call: "first call",
        baseline,
        pair: first,
        target: Target::IdemAtMostNs(1500.0),
    });

    // Existing keys: completed ones for replays and conflicts, reserved ones for IN_PROGRESS.
    let pool: Vec<String> = fresh_customers(settings.pool()).into_iter().map(|a| a.customer).collect();
    let busy: Vec<String> = (0..settings.pool()).map(|i| format!("busy{i}")).collect();
    let tools = Tools::new(MemoryStore::new());
    let hand = HandMemory::new();
    for customer in &pool {
        fresh(&tools.send_invoice(customer.clone(), PERIOD.into(), AMOUNT, String::new()));
        fresh(&hand.send_invoice(customer.clone(), PERIOD.into(), AMOUNT, String::new()));
    }
    for customer in &busy {
        reserve_in_progress(&tools.store, customer);
        hand.reserve_only(customer);
    }
    let answers: [(&str, &[String], f64, Check); 3] = [
        ("replay", &pool, AMOUNT, replayed),
        ("in progress", &busy, AMOUNT, in_progress),
        ("conflict", &pool, OTHER_AMOUNT, conflict),
    ];
    for (call, keys, amount, check) in answers {
        let (mut a, mut b) = (0, 0);
        let pair = compare(
            settings.plan(2000),
            |n| timed(cycling(keys, &mut a, n, amount), |c, p, a, m| tools.send_invoice(c, p, a, m), check),
            |n| timed(cycling(keys, &mut b, n, amount), |c, p, a, m| hand.send_invoice(c, p, a, m), check),
        );
        report.rows.push(Row { store: "memory", call, baseline, pair, target: Target::None });
    }
    assert_eq!(tools.effects.total(), pool.len() as u64, "repeats must not run the body");
    assert_eq!(hand.effects.total(), pool.len() as u64);
}

/// Reserves `customer`'s key under the bench tool's namespace, as an unfinished call would.
fn reserve_in_progress(store: &impl Store, customer: &str) {
    let key = format!("invoice:{customer}:{PERIOD}");
    let id = RecordId { namespace: NAMESPACE, key: &key };
    let reserved = store.reserve(Reserve { id, request: REQUEST_JSON, lease: LONG_LEASE }).unwrap();
    assert!(matches!(reserved, Reservation::Acquired { .. }), "{key} was taken: {reserved:?}");
}

fn keys(settings: &Settings, report: &mut Report) {
    const NORMAL: FieldMode = FieldMode { normalize: true, hash: false };
    const HASH: FieldMode = FieldMode { normalize: true, hash: true };
    static INVOICE: [Segment; 4] = [
        Segment::Literal("invoice:"),
        Segment::Field("customer", NORMAL),
        Segment::Literal(":"),
        Segment::Field("period", NORMAL),
    ];
    static WELCOME: [Segment; 2] = [Segment::Literal("welcome:"), Segment::Field("email", HASH)];
    type Case = (&'static str, fn(u64) -> String, bool, &'static str);
    let cases: [Case; 3] = [
        ("key: typical", |i| format!("  Acme Corp {i} "), true, "format! + trim + to_lowercase"),
        ("key: non-ASCII", |i| format!(" Müller & Söhne {i} "), true, "format! + trim + to_lowercase"),
        ("key: hashed field", |i| format!("Ann.Lee{i}@Example.com"), false, "format! + trim + to_lowercase, no hash"),
    ];
    // Every input is new: both sides draw from one counter.
    let next = std::cell::Cell::new(0u64);
    for (call, value, invoice, baseline) in cases {
        let inputs = |n: usize| -> Vec<String> {
            let first = next.replace(next.get() + n as u64);
            (first..first + n as u64).map(value).collect()
        };
        let (mut idem_inputs, mut hand_inputs) = (Vec::new(), Vec::new());
        let idem_side = |n: usize| {
            // The previous batch's inputs are dropped here, before the clock starts.
            idem_inputs = inputs(n);
            let start = Instant::now();
            for text in &idem_inputs {
                let key = if invoice {
                    build_key("send_invoice", &INVOICE, &[black_box(text) as &dyn KeyPart, &PERIOD])
                } else {
                    build_key("send_welcome", &WELCOME, &[black_box(text) as &dyn KeyPart])
                };
                black_box(key.unwrap());
            }
            start.elapsed()
        };
        let hand_side = |n: usize| {
            hand_inputs = inputs(n);
            let start = Instant::now();
            for text in &hand_inputs {
                let key = if invoice {
                    format!("invoice:{}:{PERIOD}", black_box(text).trim().to_lowercase())
                } else {
                    format!("welcome:{}", black_box(text).trim().to_lowercase())
                };
                black_box(key);
            }
            start.elapsed()
        };
        let pair = compare(settings.plan(5000), idem_side, hand_side);
        report.rows.push(Row { store: "-", call, baseline, pair, target: Target::None });
    }
}

fn sqlite(settings: &Settings, sync: Synchronous, dir: &Path, report: &mut Report) {
    let (store_name, first_baseline, repeat_baseline, first_plan) = match sync {
        // Two disk syncs per call, whose time varies a lot from one to the next: many
        // small rounds.
        Synchronous::Full => {
            ("SQLite FULL", "rusqlite FULL: INSERT + UPDATE", "rusqlite FULL: SELECT", settings.plan_rounds(16, 61))
        }
        // Without a sync per commit, WAL checkpoints (every 1,000 pages written) are most of
        // a first call's cost: a batch spans several of them so that every batch pays its share.
        _ => ("SQLite NORMAL", "rusqlite NORMAL: INSERT + UPDATE", "rusqlite NORMAL: SELECT", settings.plan(1000)),
    };
    let name = sync_pragma(sync).to_lowercase();
    let store = SqliteStore::builder(dir.join(format!("idem-{name}.db"))).synchronous(sync).open().unwrap();
    let tools = Tools::new(store);
    let hand = HandSqlite::open(&dir.join(format!("hand-{name}.db")), sync, Arc::default());

    let first = compare(
        first_plan,
        |n| timed(fresh_customers(n), |c, p, a, m| tools.send_invoice(c, p, a, m), fresh),
        |n| timed(fresh_customers(n), |c, p, a, m| hand.send_invoice_new(c, p, a, m), fresh),
    );
    let first_calls = tools.effects.total();
    assert_eq!(first_calls, hand.effects.total(), "every first call runs its body once");
    report.rows.push(Row {
        store: store_name,
        call: "first call",
        baseline: first_baseline,
        pair: first,
        target: Target::RatioAtMost(1.15),
    });
    // The same first calls against a hand-written table with idem's schema: what the
    // schema's extra page writes cost, apart from idem's code.
    let like =
        HandSqlite::open_with(&dir.join(format!("hand-like-{name}.db")), sync, Arc::default(), HandSchema::IdemLike);
    let schema = compare(
        first_plan,
        |n| timed(fresh_customers(n), |c, p, a, m| tools.send_invoice(c, p, a, m), fresh),
        |n| timed(fresh_customers(n), |c, p, a, m| like.send_invoice_new(c, p, a, m), fresh),
    );
    assert_eq!(tools.effects.total(), first_calls + like.effects.total(), "every first call runs its body once");
    let idem_first_calls = tools.effects.total();
    report.rows.push(Row {
        store: store_name,
        call: "first call, same schema",
        baseline: if sync == Synchronous::Full {
            "rusqlite FULL: INSERT + UPDATE, idem's schema"
        } else {
            "rusqlite NORMAL: INSERT + UPDATE, idem's schema"
        },
        pair: schema,
        target: Target::None,
    });

    let pool: Vec<String> = fresh_customers(settings.pool()).into_iter().map(|a| a.customer).collect();
    let busy: Vec<String> = (0..settings.pool()).map(|i| format!("busy{i}")).collect();
    for customer in &pool {
        fresh(&tools.send_invoice(customer.clone(), PERIOD.into(), AMOUNT, String::new()));
        fresh(&hand.send_invoice(customer.clone(), PERIOD.into(), AMOUNT, String::new()));
    }
    for customer in &busy {
        reserve_in_progress(&tools.store, customer);
        hand.reserve_only(customer);
    }
    assert!(matches!(tools.send_invoice_status(busy[0].clone(), PERIOD.into()), Ok(Status::InProgress { .. })));
    let answers: [(&str, &[String], f64, Check, Target); 3] = [
        ("replay", &pool, AMOUNT, replayed, Target::RatioAtMost(1.5)),
        ("in progress", &busy, AMOUNT, in_progress, Target::None),
        ("conflict", &pool, OTHER_AMOUNT, conflict, Target::None),
    ];
    for (call, keys, amount, check, target) in answers {
        let (mut a, mut b) = (0, 0);
        let pair = compare(
            settings.plan(500),
            |n| timed(cycling(keys, &mut a, n, amount), |c, p, a, m| tools.send_invoice(c, p, a, m), check),
            |n| timed(cycling(keys, &mut b, n, amount), |c, p, a, m| hand.send_invoice(c, p, a, m), check),
        );
        report.rows.push(Row { store: store_name, call, baseline: repeat_baseline, pair, target });
    }
    assert_eq!(tools.effects.total(), idem_first_calls + pool.len() as u64, "repeats must not run the body");
    assert_eq!(hand.effects.total(), first_calls + pool.len() as u64);
}

/// A small deterministic shuffle (xorshift), so runs are comparable without a rand crate.
fn shuffled(mut items: Vec<usize>, seed: u64) -> Vec<usize> {
    let mut state = seed | 1;
    for i in (1..items.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        items.swap(i, (state % (i as u64 + 1)) as usize);
    }
    items
}

/// What one throughput run saw.
struct Run {
    seconds: f64,
    answers: (usize, usize, usize),
}

/// Makes every call of the shuffled list (each of `keys` keys [`DUPLICATES`] times) over
/// `threads` threads; each thread makes its calls with what `connect` gives it.
fn drive<C, F>(threads: usize, keys: usize, connect: C) -> Run
where
    C: Fn() -> F + Sync,
    F: Fn(usize) -> Result<Invoice, ToolError>,
{
    let order = shuffled((0..keys * DUPLICATES).map(|i| i % keys).collect(), 0x9e37_79b9_7f4a_7c15);
    let next = AtomicUsize::new(0);
    let barrier = Barrier::new(threads + 1);
    let (fresh, replayed, in_progress) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0));
    let start = std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let call = connect();
                barrier.wait();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&key) = order.get(i) else { break };
                    let counter = match call(key) {
                        Ok(invoice) if invoice.replayed => &replayed,
                        Ok(_) => &fresh,
                        Err(error) if error.is(ErrorCode::InProgress) => &in_progress,
                        Err(error) => panic!("call {i} (key {key}) failed: {error:?}"),
                    };
                    counter.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        barrier.wait();
        // The scope joins every thread before it returns; the clock is read after that.
        Instant::now()
    });
    let seconds = start.elapsed().as_secs_f64();
    let answers = (fresh.into_inner(), replayed.into_inner(), in_progress.into_inner());
    assert_eq!(answers.0 + answers.1 + answers.2, keys * DUPLICATES);
    assert_eq!(answers.0, keys, "one fresh call per key");
    Run { seconds, answers }
}

/// The arguments of a call for key number `key`: the memo carries the number so that the
/// body counts its effect on that key.
fn args_for(key: usize) -> Args {
    Args { memo: key.to_string(), ..Args::new(format!("Acme {key}"), AMOUNT) }
}

fn exactly_once(effects: &Effects) {
    for (key, count) in effects.per_key.iter().enumerate() {
        assert_eq!(count.load(Ordering::SeqCst), 1, "key {key} must have exactly one effect");
    }
}

fn throughput(settings: &Settings, sync: Synchronous, dir: &Path, report: &mut Report) {
    const THREADS: [usize; 3] = [1, 2, 8];
    static RUN: AtomicUsize = AtomicUsize::new(0);
    let keys = settings.keys;
    let calls = (keys * DUPLICATES) as f64;
    // Per thread count: calls per second of every repetition, idem's and hand-written.
    let mut rates = [(); THREADS.len()].map(|()| (Vec::new(), Vec::new()));
    let mut answers = [(0, 0, 0); THREADS.len()];
    // Each repetition runs every thread count, so that a thread count's ratio to one thread
    // is taken between runs made moments apart.
    for repetition in 0..settings.repetitions {
        for (slot, &threads) in THREADS.iter().enumerate() {
            let run = RUN.fetch_add(1, Ordering::Relaxed);
            let idem_run = || {
                let path = dir.join(format!("throughput-idem-{run}.db"));
                let store = SqliteStore::builder(path).synchronous(sync).open().unwrap();
                let tools = Tools { store, effects: Arc::new(Effects::numbered(keys)) };
                let result = drive(threads, keys, || {
                    |key| {
                        let a = args_for(key);
                        tools.send_invoice(a.customer, a.period, a.amount, a.memo)
                    }
                });
                exactly_once(&tools.effects);
                result
            };
            let hand_run = || {
                let path = dir.join(format!("throughput-hand-{run}.db"));
                let effects = Arc::new(Effects::numbered(keys));
                drop(HandSqlite::open(&path, sync, Arc::clone(&effects)));
                let result = drive(threads, keys, || {
                    // One connection per thread, as hand-written code would open.
                    let hand = HandSqlite::open(&path, sync, Arc::clone(&effects));
                    move |key| {
                        let a = args_for(key);
                        hand.send_invoice(a.customer, a.period, a.amount, a.memo)
                    }
                });
                exactly_once(&effects);
                result
            };
            let (idem_result, hand_result) = if (repetition + slot) % 2 == 0 {
                let i = idem_run();
                (i, hand_run())
            } else {
                let h = hand_run();
                (idem_run(), h)
            };
            rates[slot].0.push(calls / idem_result.seconds);
            rates[slot].1.push(calls / hand_result.seconds);
            let total = &mut answers[slot];
            (total.0, total.1, total.2) =
                (total.0 + idem_result.answers.0, total.1 + idem_result.answers.1, total.2 + idem_result.answers.2);
        }
    }
    let paired = |these: &[f64], one: &[f64]| {
        let ratios: Vec<f64> = these.iter().zip(one).map(|(n, one)| n / one).collect();
        harness::quantile(&ratios, 0.5)
    };
    for (slot, &threads) in THREADS.iter().enumerate() {
        report.throughput.push(ThroughputRow {
            sync: sync_pragma(sync),
            threads,
            idem_per_s: harness::quantile(&rates[slot].0, 0.5),
            hand_per_s: harness::quantile(&rates[slot].1, 0.5),
            idem_vs_one: paired(&rates[slot].0, &rates[0].0),
            hand_vs_one: paired(&rates[slot].1, &rates[0].1),
            idem_answers: answers[slot],
        });
    }
}

/// The calls that [`profile`] makes, in a function of their own so that a profiler can
/// count only them: `valgrind --tool=callgrind --toggle-collect='*profiled_calls*'`.
#[inline(never)]
fn profiled_calls(args: Vec<Args>, call: &dyn Fn(Args) -> Result<Invoice, ToolError>) -> usize {
    args.into_iter().map(|a| black_box(call(a)).is_ok() as usize).sum()
}

/// `IDEM_BENCH_PROFILE=<store>-<call>-<side>[:n]`: makes `n` (default 10,000) calls of one
/// bench on one side only, for a profiler. `store`: `memory`, `full`, `normal`; `call`:
/// `first`, `replay`, `busy` (in progress), `conflict`; `side`: `idem`, `hand`.
pub fn profile(spec: &str) {
    let (name, n) = spec.split_once(':').map_or((spec, 10_000), |(name, n)| (name, n.parse().unwrap()));
    let parts: Vec<&str> = name.split('-').collect();
    let [store, call, side] = parts[..] else {
        panic!("IDEM_BENCH_PROFILE={spec}: expected <store>-<call>-<side>[:n]")
    };
    let dir = tempfile::tempdir().unwrap();
    let pool: Vec<String> = fresh_customers(n.min(1000)).into_iter().map(|a| a.customer).collect();
    let busy: Vec<String> = (0..n.min(1000)).map(|i| format!("busy{i}")).collect();
    let args = match call {
        "first" => fresh_customers(n),
        "replay" | "busy" => cycling(if call == "replay" { &pool } else { &busy }, &mut 0, n, AMOUNT),
        "conflict" => cycling(&pool, &mut 0, n, OTHER_AMOUNT),
        other => panic!("unknown call {other}"),
    };
    let sync = if store == "full" { Synchronous::Full } else { Synchronous::Normal };
    let seed = |call: &dyn Fn(Args) -> Result<Invoice, ToolError>, reserve: &dyn Fn(&str)| {
        pool.iter().for_each(|c| fresh(&call(Args::new(c.clone(), AMOUNT))));
        busy.iter().for_each(|c| reserve(c));
    };
    let ok = match (store, side) {
        ("memory", "idem") => {
            let tools = Tools::new(MemoryStore::new());
            let call = |a: Args| tools.send_invoice(a.customer, a.period, a.amount, a.memo);
            seed(&call, &|c| reserve_in_progress(&tools.store, c));
            profiled_calls(args, &call)
        }
        ("memory", "hand") => {
            let hand = HandMemory::new();
            let call = |a: Args| hand.send_invoice(a.customer, a.period, a.amount, a.memo);
            seed(&call, &|c| hand.reserve_only(c));
            profiled_calls(args, &call)
        }
        ("full" | "normal", "idem") => {
            let store = SqliteStore::builder(dir.path().join("idem.db")).synchronous(sync).open().unwrap();
            let tools = Tools::new(store);
            let call = |a: Args| tools.send_invoice(a.customer, a.period, a.amount, a.memo);
            seed(&call, &|c| reserve_in_progress(&tools.store, c));
            profiled_calls(args, &call)
        }
        ("full" | "normal", "hand") => {
            let hand = HandSqlite::open(&dir.path().join("hand.db"), sync, Arc::default());
            let new = |a: Args| hand.send_invoice_new(a.customer, a.period, a.amount, a.memo);
            let repeat = |a: Args| hand.send_invoice(a.customer, a.period, a.amount, a.memo);
            seed(&new, &|c| hand.reserve_only(c));
            profiled_calls(args, if call == "first" { &new } else { &repeat })
        }
        other => panic!("unknown store and side {other:?}"),
    };
    println!("{name}: {n} calls, {ok} Ok");
}

fn main() {
    if let Ok(spec) = std::env::var("IDEM_BENCH_PROFILE") {
        return profile(&spec);
    }
    let settings = Settings::from_env();
    let report = run(&settings);
    report.print(&settings);
}
