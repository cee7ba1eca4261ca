//! The nemesis: a fault every 200-900 ms, chosen from the seed, until the run's time is up;
//! then everything is healed (workers continued, the server thawed and running, the
//! network passing). The schedule (when, what, which slot, how long) depends only on the
//! seed: a fault that would overlap a store fault still under way is skipped by the
//! schedule, not by what the machine did.

use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::fleet::{self, Fleet};
use crate::proxy::{Mode, Proxy};
use crate::servers::Server;
use crate::{Rng, now_ms};

/// One fault, as the report and the checker read it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Fault {
    pub at_ms: i64,
    pub kind: String,
    /// The worker it hit, for the worker faults.
    pub pid: Option<u32>,
    pub for_ms: u64,
}

pub const KILL_WORKER: &str = "kill a worker (SIGKILL)";
pub const PAUSE_WORKER: &str = "pause a worker past its lease (SIGSTOP, SIGCONT)";
const KILL_SERVER: &str = "kill the store server (SIGKILL), start it again";
const RESTART_SERVER: &str = "restart the store server";
const FREEZE_SERVER: &str = "freeze the store server (SIGSTOP, SIGCONT)";
const LOCK_FILE: &str = "lock the store file (an exclusive transaction held)";
const CUT: &str = "cut every connection to the store";
const BLACKHOLE: &str = "black-hole the network (nothing moves)";
const SLOW: &str = "slow the network (each chunk delayed)";

/// What ends a fault that lasts.
enum Undo {
    Continue(u32),
    Thaw,
    StartServer,
    Pass,
}

/// What the nemesis works on.
pub struct Targets<'a> {
    pub fleet: &'a mut Fleet,
    pub server: &'a mut Server,
    pub proxy: Option<&'a Proxy>,
}

pub fn run(seed: u64, seconds: u64, targets: Targets<'_>) -> Vec<Fault> {
    let Targets { fleet, server, proxy } = targets;
    let mut rng = Rng::new(seed);
    let started = Instant::now();
    let end_ms = seconds * 1000;
    let mut faults = Vec::new();
    let mut undos: Vec<(u64, Undo)> = Vec::new();
    let mut paused = 0usize;
    let mut store_free_at = 0u64;
    let mut lock: Option<JoinHandle<()>> = None;
    let mut next = rng.between(200, 900);
    while next < end_ms {
        undos.sort_by_key(|(due, _)| std::cmp::Reverse(*due));
        if let Some((due, _)) = undos.last().filter(|(due, _)| *due <= next) {
            let due = *due;
            sleep_until(started, due);
            let (_, undo) = undos.pop().expect("a due undo");
            paused -= usize::from(matches!(undo, Undo::Continue(_)));
            apply(undo, server, proxy);
            continue;
        }
        sleep_until(started, next);
        fleet.replace_exited();
        // Every draw happens whatever is chosen, so the schedule depends on the seed alone.
        let (choice, slot, length) = (rng.below(100), rng.below(fleet.len() as u64) as usize, rng.below(1000));
        let store_fault = rng.below(6);
        let at_ms = now_ms();
        let mut record = |kind: &str, pid, for_ms| faults.push(Fault { at_ms, kind: kind.to_owned(), pid, for_ms });
        if choice < 30 {
            let pid = fleet.kill(slot);
            record(KILL_WORKER, Some(pid), 0);
        } else if choice < 50 {
            if paused * 2 < fleet.len() {
                let (pid, for_ms) = (fleet.pid(slot), 1500 + length * 3);
                fleet::signal(pid, libc::SIGSTOP);
                paused += 1;
                undos.push((next + for_ms, Undo::Continue(pid)));
                record(PAUSE_WORKER, Some(pid), for_ms);
            }
        } else if next >= store_free_at {
            let (kind, for_ms) = store_side(server, proxy, store_fault, 300 + length * 3, &mut undos, next, &mut lock);
            store_free_at = next + for_ms + 300;
            record(kind, None, for_ms);
        }
        next += rng.between(200, 900);
    }
    // Heal: every fault that lasts ends now.
    undos.sort_by_key(|(due, _)| *due);
    for (_, undo) in undos {
        apply(undo, server, proxy);
    }
    if let Some(lock) = lock {
        lock.join().expect("the lock holder ends");
    }
    sleep_until(started, end_ms);
    faults
}

/// Starts a fault on the store's side: the server's process, or the network to it.
fn store_side(
    server: &mut Server,
    proxy: Option<&Proxy>,
    choice: u64,
    for_ms: u64,
    undos: &mut Vec<(u64, Undo)>,
    at: u64,
    lock: &mut Option<JoinHandle<()>>,
) -> (&'static str, u64) {
    let Some(proxy) = proxy else {
        // SQLite has no server and no network: its fault is a file locked by someone else,
        // for up to 6.6 s: past the store's 5 s busy timeout one time in five.
        if let Some(old) = lock.take() {
            old.join().expect("the lock holder ends");
        }
        let Server::Sqlite { path } = server else { unreachable!("a server without a proxy is SQLite's file") };
        *lock = Some(hold_lock(path.clone(), Duration::from_millis(for_ms * 2)));
        return (LOCK_FILE, for_ms * 2);
    };
    let kind = match choice {
        0 => {
            server.kill();
            undos.push((at + for_ms, Undo::StartServer));
            KILL_SERVER
        }
        1 => {
            server.restart();
            RESTART_SERVER
        }
        2 => {
            server.signal(libc::SIGSTOP);
            undos.push((at + for_ms, Undo::Thaw));
            FREEZE_SERVER
        }
        3 => {
            proxy.cut();
            CUT
        }
        4 => {
            proxy.set(Mode::Blackhole);
            undos.push((at + for_ms, Undo::Pass));
            BLACKHOLE
        }
        _ => {
            proxy.set(Mode::Delay(20 + for_ms / 20));
            undos.push((at + for_ms, Undo::Pass));
            SLOW
        }
    };
    (kind, for_ms)
}

fn apply(undo: Undo, server: &mut Server, proxy: Option<&Proxy>) {
    match undo {
        Undo::Continue(pid) => fleet::signal(pid, libc::SIGCONT),
        Undo::Thaw => server.signal(libc::SIGCONT),
        Undo::StartServer => server.restart(),
        Undo::Pass => proxy.expect("network faults have a proxy").set(Mode::Pass),
    }
}

/// Holds an exclusive transaction on the SQLite store for `how_long`, on a thread.
fn hold_lock(path: PathBuf, how_long: Duration) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let conn = rusqlite::Connection::open(&path).expect("the store file opens");
        conn.busy_timeout(Duration::from_secs(30)).expect("busy timeout");
        // Before the first call created the file's tables there is nothing to hold.
        if conn.execute_batch("BEGIN EXCLUSIVE").is_ok() {
            std::thread::sleep(how_long);
            let _ = conn.execute_batch("COMMIT");
        }
    })
}

fn sleep_until(started: Instant, at_ms: u64) {
    let at = started + Duration::from_millis(at_ms);
    let now = Instant::now();
    if at > now {
        std::thread::sleep(at - now);
    }
}
