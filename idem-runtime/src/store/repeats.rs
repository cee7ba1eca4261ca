//! Which way a network store's reservation starts, learnt from its last ones.
//!
//! A reservation that finds no record is served best by the store's one-step reservation
//! (PostgreSQL's `Sql::Reserve` statement, Redis's `RESERVE` script: read, and create if
//! there is none, in one round trip). A repeat is served best by a plain read: the
//! reservation is planned and run as a write even when it writes nothing. On PostgreSQL
//! the statement runs as an `INSERT` (the table's and its indexes' locks, the `ON CONFLICT`
//! machinery): about 40 us more than a `SELECT` per replay on this machine (issue 16,
//! `cargo bench`, durable server: a replay at 1.67-1.73x a hand-written `SELECT`,
//! 1.26-1.33x reading first). On Redis the script costs about 20 us of the server's time
//! where `TIME` and `HMGET`, pipelined, cost 1 each (`INFO commandstats`, issue 43). Reading first costs a first
//! call a round trip (on PostgreSQL 1.14-1.28x a hand-written first call, 1.24-1.39x
//! reading first).
//!
//! So the store keeps a score of its recent reservations: up for each that found a record,
//! down for each that made one, within `0..=MAX`; above the middle it reads first (and
//! runs the reservation only when the read found nothing it can answer from), otherwise it
//! starts with the reservation. Traffic of first calls keeps the one round trip; a stretch
//! of retries (a client that replays a batch, a redelivery storm) turns to reads within a
//! few calls. Either way the answer is the same: only the commands differ.

use std::sync::atomic::{AtomicU32, Ordering};

/// The score of a store's recent reservations: see the module's docs.
#[derive(Debug, Default)]
pub(crate) struct Repeats {
    score: AtomicU32,
    /// Tests run the conformance checks with every reservation reading first.
    #[cfg(test)]
    pub(crate) always_read_first: std::sync::atomic::AtomicBool,
}

impl Repeats {
    const MAX: u32 = 16;

    /// Whether the next reservation should read first.
    pub(crate) fn read_first(&self) -> bool {
        #[cfg(test)]
        if self.always_read_first.load(Ordering::Relaxed) {
            return true;
        }
        self.score.load(Ordering::Relaxed) > Self::MAX / 2
    }

    /// Counts a reservation that found a record (`existing`) or made one.
    pub(crate) fn saw(&self, existing: bool) {
        let _ = self.score.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |score| {
            Some(if existing { (score + 1).min(Self::MAX) } else { score.saturating_sub(1) })
        });
    }
}
