//! The store's writers: the connections of one [`SqliteStore`](super::SqliteStore) take
//! turns at writing, sleeping while another writes, instead of polling SQLite's write lock.
//!
//! SQLite lets one connection write at a time; a connection that finds the lock taken
//! gets SQLITE_BUSY and polls through its busy handler. Between the threads of one
//! process that polling costs twice (issue 16, first calls at `FULL` over 8 threads):
//!
//! - The tail: a poller wakes at moments unrelated to the holder's commit, so under steady
//!   contention it keeps finding the lock taken, backs off to its longest pause and
//!   loses again (at 8 threads a p99 of 150-360 ms and a max of 0.3-0.9 s, where one commit
//!   takes 0.5 ms).
//! - The WAL: after the commit that brings the WAL to 1,000 frames, the committing
//!   connection checkpoints it, after it has let go of the write lock. Pollers write their
//!   frames meanwhile, so the checkpoint seldom ends with the WAL wholly copied and no
//!   writer on it, which is what lets the next writer start the WAL over; so the WAL grew
//!   to 6-14 MB and every later commit checkpointed again: 2.4-4.2 disk syncs per first
//!   call, where a call needs 2 (its two commits).
//!
//! Here a writer that finds another writing sleeps until that one is done (woken, not
//! polling), and holds its turn through its statement and the checkpoint SQLite runs at its
//! end. Writers are woken one at a time; one that arrives while nobody writes goes ahead,
//! as with a mutex, even if others sleep: handing each turn to the oldest sleeper instead
//! left SQLite's lock idle while that sleeper was scheduled, which at `NORMAL` (a commit
//! takes some 40 us) cost 45 % of the throughput of 2 to 8 threads. Writers of other
//! processes still meet this one at SQLite's lock and its busy handler. Readers never
//! queue.
//!
//! # Shared commits (group commit)
//!
//! At `FULL` every commit waits for a disk sync, and SQLite commits one writer at a time,
//! so more threads cannot make more commits. The writes every first call makes (the
//! reservation's `INSERT`, the completion's `UPDATE`, and renewals and releases) are
//! therefore shared: a writer hands its statement to [`Writers::write_shared`] and sleeps;
//! the first writer to find nobody writing leads, takes every write waiting at that moment
//! and runs them in one transaction on its connection (one sync for all of them), and
//! each caller returns only after that transaction's `COMMIT` has returned. So a
//! reservation is on disk before its body runs, and a completion before its tool returns,
//! exactly as when each commits alone. A write that fails alone fails its own caller; a
//! transaction that fails fails every write of it (nothing of it was committed); a lone
//! writer commits alone, in autocommit, as before. Transactions of
//! [`transaction`](super::SqliteStore::transaction), take-overs, purges and an operator's
//! changes take a turn of their own ([`Writers::wait_turn`]).
//!
//! Only at `synchronous = FULL`. At `NORMAL` a commit syncs nothing and takes some 40 us,
//! while a checkpoint syncs twice and copies the WAL (some 20 ms here, every ~250 commits):
//! holding the turn through it stopped every writer meanwhile, and halved the first calls
//! per second of 2 to 8 threads (4,300-6,000 against 6,400-8,800). Without turns the
//! checkpoint runs beside the next commits, as before, at the price of a WAL that seldom
//! starts over (22 MB after 1,000 first calls over 8 threads, the hand-written code's 13 MB)
//! and of the polling's tail.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rusqlite::types::Value;

use crate::store::StoreError;

/// A write that may share a commit with other callers' (a reservation's `INSERT`, a
/// completion, a renewal, a release): its statement and parameters, owned, since another
/// caller's thread and connection may run it.
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) sql: &'static str,
    pub(super) params: Vec<Value>,
    /// A reservation: its file is checked first, and the new row's id is its answer.
    pub(super) insert: bool,
}

/// What a shared write did: the rows it changed and, for an insert, the new row's id.
pub(super) type Written = Result<(usize, i64), StoreError>;

#[derive(Debug, Default)]
pub(super) struct Writers {
    line: Mutex<Line>,
    turn: Condvar,
    /// Writes committed in a group of more than one, for the tests.
    #[cfg(test)]
    pub(super) shared: std::sync::atomic::AtomicUsize,
}

#[derive(Debug, Default)]
struct Line {
    /// Someone writes now.
    busy: bool,
    /// How many sleep, waiting for their turn or their shared write.
    waiting: usize,
    /// Shared writes that no writer has taken yet, by number.
    pending: Vec<(u64, Shared)>,
    /// What taken writes did, by number, until their callers collect it.
    done: HashMap<u64, Written>,
    next: u64,
}

/// One writer's turn: the next one's starts when this is dropped.
#[derive(Debug)]
pub(super) struct Turn<'a>(&'a Writers);

impl Writers {
    fn line(&self) -> MutexGuard<'_, Line> {
        self.line.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for this writer's turn, for at most `timeout`: a writer that waits longer
    /// (a body in [`transaction`](super::SqliteStore::transaction) that calls a tool of the
    /// same store, say) fails as SQLite's busy timeout would make it fail.
    pub(super) fn wait_turn(&self, timeout: Duration) -> Result<Turn<'_>, StoreError> {
        let mut line = self.line();
        if !line.busy {
            line.busy = true;
            return Ok(Turn(self));
        }
        line.waiting += 1;
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            line = self.turn.wait_timeout(line, left).unwrap_or_else(PoisonError::into_inner).0;
            if !line.busy {
                line.busy = true;
                line.waiting -= 1;
                return Ok(Turn(self));
            }
            if Instant::now() >= deadline {
                line.waiting -= 1;
                return Err(timed_out(timeout));
            }
        }
    }
}

impl Writers {
    /// Runs `write` in a commit shared with the writes that wait at the same moment, and
    /// returns what it did once that commit has returned (so on disk, at `FULL`).
    ///
    /// The first of them to find nobody writing leads: it takes every write waiting then
    /// (its own among them) and hands them to `commit`, which runs them on its connection
    /// in one transaction and answers for each; the others sleep until their answer is
    /// there. A write still waiting when `timeout` has passed leaves and fails; one that a
    /// leader took is always answered.
    pub(super) fn write_shared(
        &self,
        write: Shared,
        timeout: Duration,
        commit: impl FnOnce(Vec<Shared>) -> Vec<Written>,
    ) -> Written {
        let mut line = self.line();
        let number = line.next;
        line.next += 1;
        line.pending.push((number, write));
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(written) = line.done.remove(&number) {
                return written;
            }
            let waiting = line.pending.iter().any(|(n, _)| *n == number);
            if waiting && !line.busy {
                line.busy = true;
                let group = std::mem::take(&mut line.pending);
                drop(line);
                return self.lead(number, group, commit);
            }
            let now = Instant::now();
            if waiting && now >= deadline {
                line.pending.retain(|(n, _)| *n != number);
                return Err(timed_out(timeout));
            }
            // A taken write is answered by its leader, which holds no lock meanwhile but
            // SQLite's (bounded by the busy timeout): wait for it as long as it takes.
            let left = if waiting { deadline - now } else { Duration::from_secs(1) };
            line.waiting += 1;
            line = self.turn.wait_timeout(line, left).unwrap_or_else(PoisonError::into_inner).0;
            line.waiting -= 1;
        }
    }

    /// Commits `group` as the leader of `own`, answers the others, and ends the turn; a
    /// `commit` that panics leaves every write of the group answered with an error.
    fn lead(&self, own: u64, group: Vec<(u64, Shared)>, commit: impl FnOnce(Vec<Shared>) -> Vec<Written>) -> Written {
        /// Answers the group and ends the turn, on return or unwind.
        struct Leading<'a> {
            writers: &'a Writers,
            own: u64,
            numbers: Vec<u64>,
            answers: Vec<Written>,
        }
        impl Drop for Leading<'_> {
            fn drop(&mut self) {
                let mut line = self.writers.line();
                let mut answers = std::mem::take(&mut self.answers).into_iter();
                // A leader that unwinds never collects its own answer.
                let unwinding = std::thread::panicking();
                for &number in self.numbers.iter().filter(|&&n| !(unwinding && n == self.own)) {
                    let answer = answers.next().unwrap_or_else(|| {
                        Err(StoreError::Backend("the writer that committed for this call failed".into()))
                    });
                    line.done.insert(number, answer);
                }
                line.busy = false;
                drop(line);
                self.writers.turn.notify_all();
            }
        }
        let (numbers, writes): (Vec<u64>, Vec<Shared>) = group.into_iter().unzip();
        #[cfg(test)]
        if writes.len() > 1 {
            self.shared.fetch_add(writes.len(), std::sync::atomic::Ordering::Relaxed);
        }
        let mut leading = Leading { writers: self, own, numbers, answers: Vec::new() };
        leading.answers = commit(writes);
        drop(leading);
        self.line().done.remove(&own).expect("the leader's own write is in its group")
    }
}

fn timed_out(timeout: Duration) -> StoreError {
    StoreError::Backend(
        format!("database is locked: waited the whole busy timeout ({timeout:?}) for this process's other writers to the store")
            .into(),
    )
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut line = self.0.line();
        line.busy = false;
        let anyone = line.waiting > 0;
        drop(line);
        if anyone {
            // Both a writer waiting for a turn and one waiting to lead a group may go now.
            self.0.turn.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn writers_take_turns_one_at_a_time() {
        let writers = Arc::new(Writers::default());
        let inside = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (writers, inside) = (Arc::clone(&writers), Arc::clone(&inside));
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        let _turn = writers.wait_turn(Duration::from_secs(10)).unwrap();
                        assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two writers at once");
                        std::hint::spin_loop();
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
    }

    fn write(n: i64) -> Shared {
        Shared { sql: "", params: vec![Value::Integer(n)], insert: false }
    }

    fn number(write: &Shared) -> i64 {
        match write.params[0] {
            Value::Integer(n) => n,
            _ => unreachable!(),
        }
    }

    /// Writes that wait while another commits are committed together by one of them, and
    /// each caller gets its own answer.
    #[test]
    fn waiting_writes_share_the_next_commit_and_get_their_own_answers() {
        let writers = Writers::default();
        let commits = AtomicUsize::new(0);
        let held = writers.wait_turn(Duration::from_secs(10)).unwrap();
        std::thread::scope(|scope| {
            let callers: Vec<_> = (0..4)
                .map(|n| {
                    let (writers, commits) = (&writers, &commits);
                    scope.spawn(move || {
                        writers.write_shared(write(n), Duration::from_secs(10), |group| {
                            commits.fetch_add(1, Ordering::SeqCst);
                            group.iter().map(|w| Ok((1, number(w) * 10))).collect()
                        })
                    })
                })
                .collect();
            while writers.line().pending.len() < 4 {
                std::thread::yield_now();
            }
            drop(held);
            for (n, caller) in callers.into_iter().enumerate() {
                assert_eq!(caller.join().unwrap().unwrap(), (1, n as i64 * 10));
            }
        });
        assert_eq!(commits.load(Ordering::SeqCst), 1, "the four writes waited together");
        assert_eq!(writers.shared.load(Ordering::SeqCst), 4);
    }

    /// A leader whose commit panics answers every write of its group with an error and
    /// ends its turn: nobody waits forever.
    #[test]
    fn a_commit_that_panics_fails_its_group_and_frees_the_turn() {
        let writers = Writers::default();
        let held = writers.wait_turn(Duration::from_secs(10)).unwrap();
        std::thread::scope(|scope| {
            let follower = scope.spawn(|| writers.write_shared(write(1), Duration::from_secs(10), |_| unreachable!()));
            while writers.line().pending.is_empty() {
                std::thread::yield_now();
            }
            let leader = scope
                .spawn(|| writers.write_shared(write(2), Duration::from_secs(10), |_| panic!("the disk caught fire")));
            while writers.line().pending.len() < 2 {
                std::thread::yield_now();
            }
            drop(held);
            // Whichever of the two leads panics; the other is answered with an error.
            let answers = [follower.join(), leader.join()];
            assert_eq!(answers.iter().filter(|a| a.is_err()).count(), 1, "one leader panicked");
            assert!(answers.iter().flatten().all(|written| written.is_err()));
        });
        drop(writers.wait_turn(Duration::from_millis(100)).unwrap());
        assert!(writers.line().done.is_empty());
    }

    #[test]
    fn a_writer_that_waits_past_the_timeout_fails_and_leaves_the_line() {
        let writers = Writers::default();
        let held = writers.wait_turn(Duration::from_secs(1)).unwrap();
        let error = writers.wait_turn(Duration::from_millis(20)).unwrap_err();
        assert!(error.to_string().contains("busy timeout"), "{error}");
        drop(held);
        // The writer that gave up is not counted as waiting any more.
        assert_eq!(writers.line().waiting, 0);
        drop(writers.wait_turn(Duration::from_millis(20)).unwrap());
    }
}
