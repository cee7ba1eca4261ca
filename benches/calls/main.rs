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
//! - First calls only: 1, 2, 4 and 8 threads, 1,000 keys each called once, on SQLite,
//!   idem and hand-written side by side: calls per second, p50, p99 and max latency, disk
//!   syncs per call (counted by the `vfs` shim) and the WAL's size; every key's effect
//!   must happen exactly once.
//!
//! - PostgreSQL (when `IDEM_TEST_DATABASE_URL` names a server): the same calls on the
//!   PostgreSQL store against hand-written tokio-postgres.
//!
//! - Redis (`--features redis`, when `IDEM_TEST_REDIS_URL` names a server): first calls,
//!   replays and IN_PROGRESS on the Redis store against hand-written redis-rs.
//!
//! - Budgets: the same tool with and without `budget = ...` on the memory store and on
//!   SQLite `NORMAL`, first calls and replays: what charging a budget costs.
//!
//! - HTTP (`--features http`): the `Idempotency-Key` layer in front of an axum router, in
//!   process, against a hand-written middleware: first requests and replays.
//!
//! `IDEM_BENCH_QUICK=1 cargo bench` runs a few iterations of everything: the smoke mode
//! that `tests/docs/bench_smoke.rs` runs inside `cargo test --workspace`. `IDEM_BENCH_ROUNDS=1`
//! also prints every round's time per call of both sides, to see why a median moved.
//!
//! The modules: `tool` (the bench tool with idem, its arguments and the answer checks),
//! `hand` (the hand-written baselines), `per_call`, `throughput` and `postgres` (the
//! benches), `report` (the tables), `harness` (rounds and medians), `profile` (one kind of
//! call alone, for callgrind).

#[path = "budget.rs"]
mod budget;
#[path = "hand.rs"]
mod hand;
#[path = "harness.rs"]
mod harness;
#[cfg(feature = "http")]
#[path = "http.rs"]
mod http;
#[path = "per_call.rs"]
mod per_call;
#[path = "postgres.rs"]
mod postgres;
#[path = "profile.rs"]
mod profile;
#[cfg(feature = "redis")]
#[path = "redis.rs"]
mod redis_bench;
#[path = "report.rs"]
mod report;
#[path = "throughput.rs"]
mod throughput;
#[path = "tool.rs"]
mod tool;
#[path = "vfs.rs"]
mod vfs;

use std::time::Instant;

use idem::store::Synchronous;

use self::hand::sync_pragma;
use self::harness::Plan;
pub use self::report::Report;

/// How much to run.
#[derive(Clone, Debug)]
pub struct Settings {
    /// A smoke run (`IDEM_BENCH_QUICK`): shows that every group runs, its figures mean nothing.
    pub quick: bool,
    /// Keys of the throughput runs.
    pub keys: usize,
    /// Throughput runs per configuration.
    pub repetitions: usize,
    /// Rounds of every comparison.
    pub rounds: usize,
    /// Runs only the groups whose name contains this (`IDEM_BENCH_ONLY`): `memory`,
    /// `keys`, `sqlite-full`, `sqlite-normal`, `budget`, `postgres`, `redis`, `http`, `throughput`, `first-calls`; for profiling one of them.
    pub only: Option<String>,
    /// Prints every round's times too (`IDEM_BENCH_ROUNDS` set and not 0), to see why a
    /// median moved between runs.
    pub show_rounds: bool,
}

/// Calls per key in the throughput runs.
pub const DUPLICATES: usize = 4;

impl Settings {
    /// The run whose figures BENCHMARKS.md reports.
    pub fn full() -> Self {
        Settings { quick: false, keys: 1000, repetitions: 3, rounds: 31, only: None, show_rounds: false }
    }

    /// A few rounds of a few keys, for CI and tests/docs/bench_smoke.rs.
    pub fn quick() -> Self {
        Settings { quick: true, keys: 8, repetitions: 1, rounds: 3, only: None, show_rounds: false }
    }

    /// [`Settings::full`], or [`Settings::quick`] when `IDEM_BENCH_QUICK` is set and not 0;
    /// `IDEM_BENCH_ONLY` picks the groups, `IDEM_BENCH_ROUNDS` prints every round.
    pub fn from_env() -> Self {
        let set = |name: &str| std::env::var(name).is_ok_and(|value| !value.is_empty() && value != "0");
        let settings = if set("IDEM_BENCH_QUICK") { Settings::quick() } else { Settings::full() };
        Settings {
            only: std::env::var("IDEM_BENCH_ONLY").ok().filter(|only| !only.is_empty()),
            show_rounds: set("IDEM_BENCH_ROUNDS"),
            ..settings
        }
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
    group("memory".into(), &mut |report| per_call::memory(settings, report));
    group("keys".into(), &mut |report| per_call::keys(settings, report));
    for sync in [Synchronous::Full, Synchronous::Normal] {
        let name = format!("sqlite-{}", sync_pragma(sync).to_lowercase());
        group(name, &mut |report| per_call::sqlite(settings, sync, dir.path(), report));
    }
    group("budget".into(), &mut |report| budget::budget(settings, dir.path(), report));
    group("postgres".into(), &mut |report| postgres::postgres(settings, report));
    #[cfg(feature = "redis")]
    group("redis".into(), &mut |report| redis_bench::redis(settings, report));
    #[cfg(feature = "http")]
    group("http".into(), &mut |report| http::http(settings, report));
    for sync in [Synchronous::Full, Synchronous::Normal] {
        let name = format!("throughput-{}", sync_pragma(sync).to_lowercase());
        group(name, &mut |report| throughput::throughput(settings, sync, dir.path(), report));
    }
    for sync in [Synchronous::Full, Synchronous::Normal] {
        let name = format!("first-calls-{}", sync_pragma(sync).to_lowercase());
        group(name, &mut |report| throughput::first_calls(settings, sync, dir.path(), report));
    }
    report.wall = started.elapsed();
    report
}

/// `IDEM_BENCH_SUBSCRIBER`: a global `tracing` subscriber for the whole run, to see what
/// telemetry costs: `registry` (every span and event recorded, nothing printed) or `warn`
/// (a subscriber that takes WARN and above, so idem's INFO span is off). Unset: none.
fn install_subscriber() {
    use tracing_subscriber::layer::SubscriberExt;
    let subscriber: Box<dyn tracing::Subscriber + Send + Sync> = match std::env::var("IDEM_BENCH_SUBSCRIBER").as_deref()
    {
        Err(_) | Ok("") => return,
        Ok("registry") => Box::new(tracing_subscriber::registry()),
        Ok("warn") => Box::new(tracing_subscriber::registry().with(tracing_subscriber::filter::LevelFilter::WARN)),
        Ok(other) => panic!("IDEM_BENCH_SUBSCRIBER={other}: expected registry or warn"),
    };
    tracing::subscriber::set_global_default(subscriber).expect("the first subscriber");
}

fn main() {
    install_subscriber();
    if let Ok(spec) = std::env::var("IDEM_BENCH_PROFILE") {
        return profile::profile(&spec);
    }
    let settings = Settings::from_env();
    let report = run(&settings);
    report.print(&settings);
}
