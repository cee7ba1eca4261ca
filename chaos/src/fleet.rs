//! The worker processes: this binary run again as `idem-chaos worker ...`, one per slot. A
//! killed worker's slot gets a new process at once, as a supervisor would start one.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::worker::Setup;

pub struct Fleet {
    setup: Setup,
    /// Workers started so far: the next one's number, from which its calls are chosen.
    started: u64,
    slots: Vec<Child>,
    /// Workers that exited without being killed: a panic, or the harness failing.
    pub crashed: Vec<String>,
}

impl Fleet {
    pub fn start(setup: Setup, workers: usize) -> Fleet {
        let mut fleet = Fleet { setup, started: 0, slots: Vec::new(), crashed: Vec::new() };
        fleet.slots = (0..workers).map(|_| fleet.spawn()).collect();
        fleet
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn pid(&self, slot: usize) -> u32 {
        self.slots[slot].id()
    }

    /// SIGKILLs the slot's worker and starts another in its place; the killed pid.
    pub fn kill(&mut self, slot: usize) -> u32 {
        let child = &mut self.slots[slot];
        let pid = child.id();
        let _ = child.kill();
        let _ = child.wait();
        self.slots[slot] = self.spawn();
        pid
    }

    /// Starts a new worker in each slot whose worker exited on its own, noting it.
    pub fn replace_exited(&mut self) {
        for slot in 0..self.slots.len() {
            if let Ok(Some(status)) = self.slots[slot].try_wait() {
                self.crashed.push(format!("worker {} exited by itself: {status}", self.slots[slot].id()));
                self.slots[slot] = self.spawn();
            }
        }
    }

    /// Starts the next worker. Its number goes into its seed, so the same seed gives each
    /// worker the same choices of calls (when they happen is up to the machine).
    fn spawn(&mut self) -> Child {
        let number = self.started;
        self.started += 1;
        Command::new(std::env::current_exe().expect("this binary"))
            .args(Setup { number, ..self.setup.clone() }.args())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("a worker starts")
    }

    /// Asks every worker to finish its calls and exit (the stop file), and waits; a worker
    /// still running after `patience` is a worker stuck in a call, noted and killed.
    pub fn stop(&mut self, patience: Duration) {
        std::fs::write(Setup::stop_file(&self.setup.dir), b"").expect("the stop file");
        let started = Instant::now();
        for child in &mut self.slots {
            loop {
                match child.try_wait() {
                    Ok(Some(status)) if status.success() => break,
                    Ok(Some(status)) => {
                        self.crashed.push(format!("worker {} exited by itself: {status}", child.id()));
                        break;
                    }
                    _ if started.elapsed() > patience => {
                        self.crashed
                            .push(format!("worker {} was still in a call {patience:?} after the stop", child.id()));
                        let _ = child.kill();
                        let _ = child.wait();
                        break;
                    }
                    _ => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        }
    }
}

/// Sends `signal` to `pid` (a worker, maybe gone by now: then nothing happens).
pub fn signal(pid: u32, signal: i32) {
    // SAFETY: kill(2) on a worker this run started.
    unsafe { libc::kill(pid as i32, signal) };
}
