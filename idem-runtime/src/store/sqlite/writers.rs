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
//! Only at `synchronous = FULL`. At `NORMAL` a commit syncs nothing and takes some 40 us,
//! while a checkpoint syncs twice and copies the WAL (some 20 ms here, every ~250 commits):
//! holding the turn through it stopped every writer meanwhile, and halved the first calls
//! per second of 2 to 8 threads (4,300-6,000 against 6,400-8,800). Without turns the
//! checkpoint runs beside the next commits, as before, at the price of a WAL that seldom
//! starts over (22 MB after 1,000 first calls over 8 threads, the hand-written code's 13 MB)
//! and of the polling's tail.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::store::StoreError;

#[derive(Debug, Default)]
pub(super) struct Writers {
    line: Mutex<Line>,
    turn: Condvar,
}

#[derive(Debug, Default)]
struct Line {
    /// Someone writes now.
    busy: bool,
    /// How many sleep, waiting for their turn.
    waiting: usize,
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
                return Err(StoreError::Backend(
                    format!(
                        "database is locked: waited the whole busy timeout ({timeout:?}) for this process's other \
                         writers to the store"
                    )
                    .into(),
                ));
            }
        }
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut line = self.0.line();
        line.busy = false;
        let anyone = line.waiting > 0;
        drop(line);
        if anyone {
            self.0.turn.notify_one();
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
