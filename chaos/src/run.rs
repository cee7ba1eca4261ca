//! One run: for each store, start it (and the proxy), the workers, an approver and the
//! nemesis; when the time is up, heal, stop the workers, wait a lease, call every action
//! once more, and check.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use idem::approval;
use idem::store::{Admin, BudgetStore, RecordId, Store};

use crate::checker::{self, Report};
use crate::events::{self, Answer, Event};
use crate::fleet::Fleet;
use crate::ledger::Ledger;
use crate::nemesis::{self, Fault, Targets};
use crate::proxy::Proxy;
use crate::servers::Server;
use crate::tools::{self, Tool, Tools};
use crate::worker::{self, Kind, Setup};

/// The tools' lease: a stopped worker or a frozen store outlasts it by design.
const LEASE: Duration = Duration::from_secs(1);

pub struct Options {
    stores: Vec<Kind>,
    seconds: u64,
    workers: usize,
    threads: u32,
    seed: u64,
    lying_hook: bool,
    keep: bool,
}

impl Options {
    pub fn parse(args: &[String]) -> Result<Options, String> {
        let mut options = Options {
            stores: vec![Kind::Sqlite, Kind::Postgres, Kind::Redis],
            seconds: 60,
            workers: 4,
            threads: 3,
            seed: crate::now_ms() as u64,
            lying_hook: false,
            keep: false,
        };
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            let mut value = || args.next().ok_or(format!("{arg} needs a value"));
            let number = |text: &String| text.parse::<u64>().map_err(|_| format!("{arg}: not a number: {text}"));
            match arg.as_str() {
                "--store" => {
                    let store = value()?;
                    options.stores = match store.as_str() {
                        "all" => vec![Kind::Sqlite, Kind::Postgres, Kind::Redis],
                        name => vec![Kind::named(name).ok_or(format!("--store: no store named {name}"))?],
                    };
                }
                "--seconds" => options.seconds = number(value()?)?.max(1),
                "--workers" => options.workers = number(value()?)?.clamp(2, 16) as usize,
                "--threads" => options.threads = number(value()?)?.clamp(1, 8) as u32,
                "--seed" => options.seed = number(value()?)?,
                "--lying-hook" => options.lying_hook = true,
                "--keep" => options.keep = true,
                "--help" | "-h" => return Err(String::new()),
                other => return Err(format!("unknown argument {other}")),
            }
        }
        Ok(options)
    }
}

pub fn main(options: &Options) -> ExitCode {
    let stores: Vec<&str> = options.stores.iter().map(|kind| kind.name()).collect();
    println!(
        "idem-chaos: seed {}, {} s per store on {}, {} workers x {} threads{}",
        options.seed,
        options.seconds,
        stores.join(", "),
        options.workers,
        options.threads,
        if options.lying_hook { ", refund's hook lying (the broken variant)" } else { "" }
    );
    let (mut anomalies, mut faults) = (0, 0);
    for &kind in &options.stores {
        let started = Instant::now();
        let (report, dir) = run_store(options, kind);
        print(kind, options, &report, started.elapsed());
        anomalies += report.anomalies.len();
        faults += report.faults.values().sum::<usize>();
        if report.anomalies.is_empty() && !options.keep {
            let _ = std::fs::remove_dir_all(&dir);
        } else {
            println!("  the run's files are in {}", dir.display());
        }
    }
    println!("idem-chaos: {anomalies} anomalies in all, after {faults} faults (seed {})", options.seed);
    if anomalies == 0 { ExitCode::SUCCESS } else { ExitCode::from(3) }
}

fn run_store(options: &Options, kind: Kind) -> (Report, PathBuf) {
    let dir = PathBuf::from(format!("/tmp/idem-chaos-{}-{}", kind.name(), crate::now_ms()));
    // Not a private temporary directory: PostgreSQL's own user must reach its cluster in it.
    std::fs::create_dir_all(&dir).expect("the run's directory");
    let mut server = Server::start(kind, &dir);
    let proxy = server.port().map(Proxy::start);
    let ledger = Ledger::at(&dir);
    ledger.create();
    events::open(&dir);
    tools::init(ledger.clone(), options.lying_hook);
    let setup = Setup {
        kind,
        url: server.url(proxy.as_ref().map(Proxy::port)),
        dir: dir.clone(),
        threads: options.threads,
        start_ms: crate::now_ms(),
        seed: options.seed,
        lying_hook: options.lying_hook,
        number: 0,
    };
    let direct = server.url(None);
    let (faults, crashed) = match kind {
        Kind::Sqlite => drive(&Tools { store: worker::sqlite(&direct) }, options, setup, &mut server, proxy.as_ref()),
        Kind::Postgres => {
            drive(&Tools { store: worker::postgres(&direct) }, options, setup, &mut server, proxy.as_ref())
        }
        Kind::Redis => drive(&Tools { store: worker::redis(&direct) }, options, setup, &mut server, proxy.as_ref()),
    };
    server.remove();
    // What `--check DIR` needs to check the run again: the faults, and whose calls were final.
    let faults_text: String =
        faults.iter().map(|fault| serde_json::to_string(fault).expect("a fault") + "\n").collect();
    std::fs::write(dir.join("faults.jsonl"), faults_text).expect("the faults are written");
    std::fs::write(dir.join("run.json"), serde_json::json!({ "final_pid": std::process::id() }).to_string())
        .expect("the run's description is written");
    let mut report = checker::check(&events::read_all(&dir), &ledger, &faults, std::process::id());
    report.anomalies.extend(crashed);
    (report, dir)
}

/// `--check DIR`: the checker again, on a run's kept files (after a change to the checker).
pub fn check_again(dir: &Path) -> ExitCode {
    let lines = events::read_all(dir);
    let final_pid = std::fs::read_to_string(dir.join("run.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok()?["final_pid"].as_u64())
        // A run kept before run.json existed: the run's own calls come after every worker stopped.
        .map_or_else(|| lines.last().map_or(0, |line| line.pid), |pid| pid as u32);
    let faults: Vec<Fault> = std::fs::read_to_string(dir.join("faults.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).expect("a fault"))
        .collect();
    let report = checker::check(&lines, &Ledger::at(dir), &faults, final_pid);
    println!("idem-chaos: {} checked again ({} faults on record)", dir.display(), faults.len());
    print_report(&report, "");
    if report.anomalies.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(3) }
}

/// The run on one store, with `tools` on a direct connection for the approver and the
/// final calls: the faults, and the workers that failed by themselves.
fn drive<S: Store + BudgetStore + Admin + Sync>(
    tools: &Tools<S>,
    options: &Options,
    setup: Setup,
    server: &mut Server,
    proxy: Option<&Proxy>,
) -> (Vec<Fault>, Vec<String>) {
    let dir = setup.dir.clone();
    let ledger = Ledger::at(&dir);
    let mut fleet = Fleet::start(setup, options.workers);
    let approving = AtomicBool::new(true);
    std::thread::scope(|scope| {
        scope.spawn(|| approve(&tools.store, &ledger, &approving));
        let faults = nemesis::run(options.seed, options.seconds, Targets { fleet: &mut fleet, server, proxy });
        fleet.stop(Duration::from_secs(60));
        // Every holder is gone: one lease on, no key may still be in progress.
        std::thread::sleep(LEASE + Duration::from_millis(500));
        settle(tools, &dir);
        approving.store(false, Ordering::SeqCst);
        (faults, std::mem::take(&mut fleet.crashed))
    })
}

/// The approvers: every request for `pay` is decided within a moment of its notification,
/// approved unless the order's number is a multiple of 3 (the checker knows which). Now and
/// then they also look at idem's list of pending requests, for one whose notification was
/// lost with a killed worker or whose decision the store failed to take.
fn approve<S: Store + Admin>(store: &S, ledger: &Ledger, running: &AtomicBool) {
    let mut read = 0;
    for round in 0.. {
        if !running.load(Ordering::SeqCst) {
            break;
        }
        let mut keys: Vec<String> = ledger
            .notified_after(read)
            .into_iter()
            .map(|(number, key)| {
                read = number;
                key
            })
            .collect();
        if round % 25 == 0 {
            // A store that is down or frozen answers later; the approvers try again.
            let pending = approval::pending(store, Some("chaos::pay"), None).unwrap_or_default();
            keys.extend(pending.into_iter().map(|request| request.key));
        }
        for key in keys {
            let id = RecordId { namespace: "chaos::pay", key: &key };
            let k: u64 = key.rsplit(":o").next().and_then(|k| k.parse().ok()).unwrap_or(0);
            // A decision the store failed to take is taken at the next look at the list.
            let _ = if k.is_multiple_of(3) {
                approval::blocking::decline(store, id, "chaos", Some("declined by the run"))
            } else {
                approval::blocking::approve(store, id, "chaos", None)
            };
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Calls every action once more, as it was meant (its own amount), and reads its status:
/// the checker finds any that is still in progress.
fn settle<S: Store + BudgetStore>(tools: &Tools<S>, dir: &Path) {
    let mut actions = BTreeSet::new();
    for line in events::read_all(dir) {
        if let Event::Start { tool, action, .. } = line.event {
            let order = action.split_once(':').map(|(_, order)| order.to_owned()).unwrap_or_default();
            actions.insert((Tool::named(&tool).expect("a tool"), action, order));
        }
    }
    for (tool, action, order) in actions {
        let amount = tool.amount(order[1..].parse().expect("orders are o<number>"));
        let started_ms = crate::now_ms();
        let name = tool.name().to_owned();
        events::write(Event::Start { tool: name.clone(), action: action.clone(), amount, thread: 0 });
        let mut answer = tools.call(tool, order.clone(), amount, "final".into());
        // The store was down a moment ago: a client retries what is retryable, a few times.
        for _ in 0..5 {
            if !matches!(&answer, Answer::Refused { code } if code == "STORE_UNAVAILABLE") {
                break;
            }
            std::thread::sleep(Duration::from_millis(500));
            answer = tools.call(tool, order.clone(), amount, "final".into());
        }
        events::write(Event::Answered {
            tool: name.clone(),
            action: action.clone(),
            amount,
            thread: 0,
            started_ms,
            answer,
        });
        let answer = tools.status(tool, order);
        events::write(Event::Answered { tool: name, action, amount: 0, thread: 0, started_ms, answer });
    }
}

fn print(kind: Kind, options: &Options, report: &Report, took: Duration) {
    println!("\n== {} ({:.0} s, seed {})", kind.name(), took.as_secs_f64(), options.seed);
    print_report(report, &format!(" (seed {})", options.seed));
}

fn print_report(report: &Report, seed: &str) {
    println!("  operations: {}", report.operations);
    println!("  answers:");
    for (answer, count) in &report.answers {
        println!("    {count:>7}  {answer}");
    }
    println!("  reconcile hooks (a key taken over after its lease):");
    for (hook, count) in &report.hooks {
        println!("    {count:>7}  {hook}");
    }
    let faults: usize = report.faults.values().sum();
    println!("  faults: {faults}");
    for (fault, count) in &report.faults {
        println!("    {count:>7}  {fault}");
    }
    println!("  where idem alone cannot promise, or leaves a key to a person (RELIABILITY.md):");
    for (limit, count) in &report.limits {
        println!("    {count:>7}  {limit}");
    }
    println!("  anomalies: {}", report.anomalies.len());
    for anomaly in &report.anomalies {
        println!("  ANOMALY{seed} {anomaly}");
    }
}
