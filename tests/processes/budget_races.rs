//! First calls of distinct keys race against one budget of 5 from several processes, each
//! running several threads, on one SQLite file, (with IDEM_TEST_DATABASE_URL) one
//! PostgreSQL schema, one Redis prefix and (with IDEM_TEST_REDIS_CLUSTER_URL) one prefix
//! on a Redis Cluster, where a window and the records it charges are in different slots:
//! in every one of 1,000 trials per store exactly 5 of them acquire, and
//! the window reads what they were charged. Even trials race a count budget (5 runs), odd
//! ones a sum budget (6.25 of amounts of 1.25 each: 5 fit).
//!
//! The children are this test binary run again, each with its own store. The parent is
//! their barrier between processes: a child's threads wait at an in-process barrier until
//! the child reads the parent's go for the trial from its standard input, then all race;
//! the child prints what its threads got, and the parent sends the next go once every
//! child has answered.

use crate::support;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdout, Stdio};
use std::sync::Barrier;
use std::time::Duration;

use idem::store::budget::{BudgetQuery, Charge, UNIT};
use idem::store::{Admin, BudgetStore, PgStore, RecordId, Reservation, Reserve, SqliteStore, StoreError, block_on};

use crate::support::postgres;
#[cfg(feature = "redis")]
use crate::support::redis;
use postgres::{fresh_schema, test_url};

const PROCESSES: usize = 4;
const THREADS: usize = 2;
/// 1,000 trials of 4 × 2 racing first calls (3 of them must be refused): 8,000 per store.
const TRIALS: usize = 1000;
const LIMIT: usize = 5;
/// A sum trial's amount per call, in millionths: 1.25, against a limit of 5 × 1.25.
const SUMMED: i64 = UNIT + UNIT / 4;
/// A window of 1000 years, which no trial sees end.
const WINDOW_MS: i64 = 1000 * 365 * 24 * 3600 * 1000;
const NAMESPACE: &str = "budget-races";
const STORE_ENV: &str = "IDEM_TEST_BUDGET_RACES_STORE";
const CHILD_ENV: &str = "IDEM_TEST_BUDGET_RACES_CHILD";
/// What a child's answer for a trial starts with, among the test harness's own lines.
const ANSWER: &str = "budget-race";

/// A store chosen at run time that keeps budgets, as the children race on it.
trait Racing: Admin {
    /// A charged reservation, waited for on this thread.
    fn charged(&self, request: Reserve<'_>, charge: Charge<'_>) -> Result<Reservation, StoreError>;
}

impl<S: BudgetStore + Admin> Racing for S {
    fn charged(&self, request: Reserve<'_>, charge: Charge<'_>) -> Result<Reservation, StoreError> {
        block_on(self.reserve_charged(request, charge))
    }
}

/// Where the children's store is: `sqlite <path>`, `postgres <schema> <url>` or `redis
/// <prefix> <url>`.
fn open(store: &str) -> Box<dyn Racing> {
    match store.split_once(' ') {
        // NORMAL: the race is between the store's writers, not the disk's syncs.
        Some(("sqlite", path)) => {
            Box::new(SqliteStore::builder(path).synchronous(idem::store::Synchronous::Normal).open().unwrap())
        }
        Some(("postgres", rest)) => {
            let (schema, url) = rest.split_once(' ').unwrap();
            Box::new(PgStore::builder(url).schema(schema).max_connections(THREADS).build().unwrap())
        }
        #[cfg(feature = "redis")]
        Some(("redis", rest)) => {
            let (prefix, url) = rest.split_once(' ').unwrap();
            Box::new(idem::RedisStore::builder(url).prefix(prefix).build().unwrap())
        }
        _ => panic!("unknown store {store:?}"),
    }
}

fn budget(trial: usize) -> String {
    format!("race-{trial}")
}

/// What each call of `trial` is charged: one run (a count budget) or 1.25 (a sum).
fn amount(trial: usize) -> i64 {
    if trial.is_multiple_of(2) { UNIT } else { SUMMED }
}

#[test]
#[ignore = "a child process of the budget race tests"]
fn budget_race_child() {
    let store = open(&std::env::var(STORE_ENV).unwrap());
    let child: usize = std::env::var(CHILD_ENV).unwrap().parse().unwrap();
    let mut go = [0u8];
    for trial in 0..TRIALS {
        let barrier = Barrier::new(THREADS + 1);
        let budget = budget(trial);
        let answers: Vec<Reservation> = std::thread::scope(|scope| {
            let racers: Vec<_> = (0..THREADS)
                .map(|thread| {
                    let (store, barrier, budget) = (&store, &barrier, &budget);
                    scope.spawn(move || {
                        let key = format!("{trial}/{child}/{thread}");
                        let request = Reserve {
                            id: RecordId { namespace: NAMESPACE, key: &key },
                            request: "{}",
                            lease: Duration::from_secs(3600),
                        };
                        let amount = amount(trial);
                        let charge = Charge {
                            budget,
                            scope: "",
                            window_ms: WINDOW_MS,
                            limit: LIMIT as i64 * amount,
                            amount,
                            past_limit: false,
                        };
                        barrier.wait();
                        store.charged(request, charge).unwrap_or_else(|e| panic!("{key}: {e}"))
                    })
                })
                .collect();
            // Every process's threads are ready: go when the parent says so.
            std::io::stdin().read_exact(&mut go).expect("the parent's go");
            barrier.wait();
            racers.into_iter().map(|racer| racer.join().expect("a racer panicked")).collect()
        });
        let acquired = answers.iter().filter(|a| matches!(a, Reservation::Acquired { .. })).count();
        let refused = answers.iter().filter(|a| matches!(a, Reservation::OverBudget(_))).count();
        assert_eq!(acquired + refused, THREADS, "a first call of a new key is acquired or refused: {answers:?}");
        println!("{ANSWER} {trial} {acquired}");
        std::io::stdout().flush().unwrap();
    }
}

/// Runs the trials with [`PROCESSES`] children on `store`, then checks the windows.
fn race(store: &str) {
    let mut children: Vec<(Child, BufReader<ChildStdout>)> = (0..PROCESSES)
        .map(|child| {
            let mut process = support::rerun(module_path!(), "budget_race_child")
                .env(STORE_ENV, store)
                .env(CHILD_ENV, child.to_string())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let stdout = BufReader::new(process.stdout.take().unwrap());
            (process, stdout)
        })
        .collect();
    let mut acquired_per_trial = Vec::with_capacity(TRIALS);
    for trial in 0..TRIALS {
        for (child, _) in &mut children {
            let stdin = child.stdin.as_mut().unwrap();
            stdin.write_all(b"g").and_then(|()| stdin.flush()).expect("a child went away");
        }
        let mut acquired = 0;
        for (_, stdout) in &mut children {
            acquired += answer(stdout, trial);
        }
        acquired_per_trial.push(acquired);
    }
    for (mut child, _) in children {
        drop(child.stdin.take());
        let status = child.wait().unwrap();
        assert!(status.success(), "a child process failed: {status}");
    }
    let wrong: Vec<(usize, usize)> =
        acquired_per_trial.iter().copied().enumerate().filter(|(_, acquired)| *acquired != LIMIT).collect();
    assert!(
        wrong.is_empty(),
        "{store}: in every trial exactly {LIMIT} of {} racing first calls must acquire against a budget of {LIMIT}; \
         (trial, acquired) that did not: {wrong:?}",
        PROCESSES * THREADS
    );
    // Every window in one listing: a listing by budget name reads every shard of a cluster,
    // and a thousand of them took longer than the race.
    let windows = open(store).budgets(&BudgetQuery::default()).unwrap();
    let mut used: HashMap<&str, Vec<i64>> = HashMap::new();
    for window in &windows {
        used.entry(window.budget.as_str()).or_default().push(window.used);
    }
    assert_eq!(windows.len(), TRIALS, "{store}: one window per trial, and no other: {windows:?}");
    for trial in 0..TRIALS {
        let charged = LIMIT as i64 * amount(trial);
        assert_eq!(
            used.get(budget(trial).as_str()).map(Vec::as_slice),
            Some(&[charged][..]),
            "trial {trial}: one window, charged for the {LIMIT} acquired calls"
        );
    }
}

/// How many of a child's threads acquired in `trial`, from its answer line.
fn answer(stdout: &mut BufReader<ChildStdout>, trial: usize) -> usize {
    let mut line = String::new();
    loop {
        line.clear();
        let read = stdout.read_line(&mut line).unwrap();
        assert!(read > 0, "a child process ended before answering trial {trial}");
        // The harness prints `test budget_race_child ... ` before the first answer, on its line.
        let Some(at) = line.find(ANSWER) else { continue };
        let rest = &line.trim_end()[at + ANSWER.len()..];
        let (answered, acquired) = rest.trim().split_once(' ').unwrap();
        assert_eq!(answered.parse::<usize>().unwrap(), trial, "a child answered another trial");
        return acquired.parse().unwrap();
    }
}

#[test]
fn processes_racing_on_one_sqlite_file_charge_exactly_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idem.db");
    // Created once here, so the children race on charges, not on creating the schema.
    drop(SqliteStore::open(&path).unwrap());
    race(&format!("sqlite {}", path.display()));
}

#[test]
fn workers_racing_on_one_postgres_schema_charge_exactly_the_budget() {
    let Some(url) = test_url("workers_racing_on_one_postgres_schema_charge_exactly_the_budget") else { return };
    let schema = fresh_schema("idem_budget_races");
    let store = PgStore::builder(&url).schema(&schema).build().unwrap();
    store.migrate_blocking().unwrap();
    drop(store);
    let raced = std::panic::catch_unwind(|| race(&format!("postgres {schema} {url}")));
    drop_schema(&url, &schema);
    if let Err(panic) = raced {
        std::panic::resume_unwind(panic);
    }
}

fn drop_schema(url: &str, schema: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        client.batch_execute(&format!("DROP SCHEMA {schema} CASCADE")).await.unwrap();
    });
}

#[cfg(feature = "redis")]
#[test]
fn workers_racing_on_one_redis_prefix_charge_exactly_the_budget() {
    // A server of the test's own without an append-only file, as SQLite runs at NORMAL
    // here: the race is between the store's writers, not the disk's syncs.
    let test = "workers_racing_on_one_redis_prefix_charge_exactly_the_budget";
    let Some(server) = redis::Server::start(test, &["--appendonly", "no"]) else { return };
    race(&format!("redis {} {}", fresh_schema("idem-budget-races"), server.url()));
}

/// On a cluster a charge and its reservation are two steps in two slots (the window's, the
/// record's): the race must still let exactly the limit through.
#[cfg(feature = "redis")]
#[test]
fn workers_racing_on_one_redis_cluster_prefix_charge_exactly_the_budget() {
    // A cluster of the test's own without append-only files, for the reason above.
    let test = "workers_racing_on_one_redis_cluster_prefix_charge_exactly_the_budget";
    let Some(cluster) = crate::support::redis_cluster::Cluster::start(test, &["--appendonly", "no"]) else { return };
    race(&format!("redis {} {}", fresh_schema("idem-budget-races"), cluster.url()));
}
