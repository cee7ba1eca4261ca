//! A worker process: the run starts it as `idem-chaos worker ...`, and it calls the tools from
//! several threads until the run's stop file appears, writing every call and answer to its
//! history.

use std::path::{Path, PathBuf};
use std::time::Duration;

use idem::store::{Admin, BudgetStore, Store};
use idem::{PgStore, RedisStore, SqliteStore};

use crate::events::{self, Answer, Event, THREAD};
use crate::ledger::Ledger;
use crate::tools::{self, Tool, Tools};
use crate::{Rng, now_ms};

/// The first argument that makes the binary a worker.
pub const COMMAND: &str = "worker";
/// How long each key is new: every this often the window of hot orders moves on by one.
pub const WINDOW_MS: i64 = 1500;
/// Orders hot at once, per tool.
pub const HOT: u64 = 8;
/// Free text that varies between repeats of one action: never compared, never a CONFLICT.
const MEMOS: [&str; 4] = ["as agreed", "As agreed.", "per the ticket", "retry"];

/// The store a run is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Sqlite,
    Postgres,
    Redis,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Sqlite => "sqlite",
            Kind::Postgres => "postgres",
            Kind::Redis => "redis",
        }
    }

    pub fn named(name: &str) -> Option<Kind> {
        [Kind::Sqlite, Kind::Postgres, Kind::Redis].into_iter().find(|kind| kind.name() == name)
    }
}

/// How long a store operation may take before the call answers STORE_UNAVAILABLE: a frozen
/// server or a black-holed connection costs a call this, not the client's default.
const OPERATION_TIMEOUT: Duration = Duration::from_secs(3);

pub fn sqlite(url: &str) -> SqliteStore {
    SqliteStore::open(url).expect("the SQLite store opens")
}

pub fn postgres(url: &str) -> PgStore {
    PgStore::builder(url)
        .max_connections(4)
        .checkout_timeout(Duration::from_secs(2))
        .lock_timeout(Duration::from_secs(2))
        .operation_timeout(OPERATION_TIMEOUT)
        .build()
        .expect("the PostgreSQL store's URL")
}

pub fn redis(url: &str) -> RedisStore {
    RedisStore::builder(url).operation_timeout(OPERATION_TIMEOUT).build().expect("the Redis store's URL")
}

/// What a worker is told on its command line.
#[derive(Clone, Debug)]
pub struct Setup {
    pub kind: Kind,
    pub url: String,
    pub dir: PathBuf,
    pub threads: u32,
    pub start_ms: i64,
    pub seed: u64,
    pub lying_hook: bool,
    /// Which worker of the run this is (0, 1, ...; a restarted one gets the next number),
    /// so that its calls are chosen from the seed.
    pub number: u64,
}

impl Setup {
    /// The worker's command line.
    pub fn args(&self) -> Vec<String> {
        vec![
            COMMAND.into(),
            self.kind.name().into(),
            self.url.clone(),
            self.dir.display().to_string(),
            self.threads.to_string(),
            self.start_ms.to_string(),
            self.seed.to_string(),
            u8::from(self.lying_hook).to_string(),
            self.number.to_string(),
        ]
    }

    fn parse(args: &[String]) -> Setup {
        let [kind, url, dir, threads, start_ms, seed, lying_hook, number] = args else {
            panic!("a worker takes 8 arguments, got {args:?}")
        };
        Setup {
            kind: Kind::named(kind).expect("a store kind"),
            url: url.clone(),
            dir: PathBuf::from(dir),
            threads: threads.parse().expect("threads"),
            start_ms: start_ms.parse().expect("start"),
            seed: seed.parse().expect("seed"),
            lying_hook: lying_hook == "1",
            number: number.parse().expect("number"),
        }
    }

    /// The file whose existence tells workers to finish their calls and exit.
    pub fn stop_file(dir: &Path) -> PathBuf {
        dir.join("stop")
    }
}

pub fn main(args: &[String]) {
    let setup = Setup::parse(args);
    // A stopped worker whose process group loses its last link to the session (the shell
    // that started the run exits) gets SIGHUP from the kernel: a worker ends only when
    // killed by the nemesis, or told to stop.
    // SAFETY: signal(2) with SIG_IGN, before any thread starts.
    unsafe { libc::signal(libc::SIGHUP, libc::SIG_IGN) };
    events::open(&setup.dir);
    tools::init(Ledger::at(&setup.dir), setup.lying_hook);
    match setup.kind {
        Kind::Sqlite => work(&Tools { store: sqlite(&setup.url) }, &setup),
        Kind::Postgres => work(&Tools { store: postgres(&setup.url) }, &setup),
        Kind::Redis => work(&Tools { store: redis(&setup.url) }, &setup),
    }
}

fn work<S: Store + BudgetStore + Admin + Sync>(tools: &Tools<S>, setup: &Setup) {
    std::thread::scope(|scope| {
        for thread in 0..setup.threads {
            scope.spawn(move || calls(tools, setup, thread));
        }
    });
}

/// One thread's calls: a tool, an order among the hot ones, its amount (changed one time in
/// ten), the order's case and a memo varied; one call in ten is a status read instead.
fn calls<S: Store + BudgetStore>(tools: &Tools<S>, setup: &Setup, thread: u32) {
    THREAD.set(thread);
    let seed = setup.seed ^ (setup.number << 20) ^ u64::from(thread);
    let mut rng = Rng::new(seed);
    let stop = Setup::stop_file(&setup.dir);
    // A run that ends without stopping its workers (Ctrl-C, a crash) leaves them orphaned:
    // they notice their new parent and end too.
    let parent = std::os::unix::process::parent_id();
    while !stop.exists() && std::os::unix::process::parent_id() == parent {
        let window = ((now_ms() - setup.start_ms).max(0) / WINDOW_MS) as u64;
        let k = window + rng.below(HOT);
        let tool = Tool::ALL[rng.below(4) as usize];
        let order = if rng.below(2) == 0 { format!("o{k}") } else { format!("O{k}") };
        let amount = tool.amount(k) + u32::from(rng.below(10) == 0);
        let memo = MEMOS[rng.below(MEMOS.len() as u64) as usize].to_owned();
        let action = tools::action(tool, &order);
        let started_ms = now_ms();
        let (amount, answer) = if rng.below(10) == 0 {
            (0, tools.status(tool, order))
        } else {
            events::write(Event::Start { tool: tool.name().into(), action: action.clone(), amount, thread });
            (amount, tools.call(tool, order, amount, memo))
        };
        // A caller told the store is unavailable waits a moment before it tries again.
        let unavailable = matches!(&answer, Answer::Refused { code } if code == "STORE_UNAVAILABLE");
        events::write(Event::Answered { tool: tool.name().into(), action, amount, thread, started_ms, answer });
        let pause = if unavailable { rng.between(100, 400) } else { rng.between(10, 60) };
        std::thread::sleep(Duration::from_millis(pause));
    }
}
