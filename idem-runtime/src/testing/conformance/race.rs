//! The races every store must win: one reservation per id, one take-over per abandoned
//! reservation, however many threads (or store handles on one backend) try at once.

use std::sync::Barrier;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;

use super::waited::Waited;
use super::{LONG, acquire_for, id, reserve_request};
use crate::store::{RecordState, Reservation, Store, StoreError, Token, block_on};

/// Threads racing for one id.
const RACERS: usize = 8;
/// Fresh ids raced for in `check_exclusive_reserve`.
const TRIALS: usize = 200;

/// Races 8 threads to reserve each of 200 fresh ids, spreading the threads
/// over `stores` (several handles on one shared backend simulate several processes), and
/// checks that exactly one thread acquires each id and all others see its reservation.
pub fn check_exclusive_reserve<S: Store>(stores: &[S]) {
    assert!(!stores.is_empty(), "check_exclusive_reserve needs at least one store");
    // Keys unique per run, so that stores shared between runs still start fresh.
    static RUN: AtomicU64 = AtomicU64::new(0);
    let run = RUN.fetch_add(1, Ordering::Relaxed);
    let keys: Vec<String> = (0..TRIALS).map(|t| format!("race-{run}-{t}")).collect();
    let barrier = Barrier::new(RACERS);
    let outcomes: Vec<Vec<Result<Reservation, StoreError>>> = thread::scope(|scope| {
        let racers: Vec<_> = (0..RACERS)
            .map(|i| {
                let (store, keys, barrier) = (&stores[i % stores.len()], &keys, &barrier);
                // Never panic inside the loop: the other racers would wait at the barrier.
                scope.spawn(move || {
                    keys.iter()
                        .map(|key| {
                            barrier.wait();
                            block_on(store.reserve(reserve_request(id(key), "{}", LONG)))
                        })
                        .collect()
                })
            })
            .collect();
        racers.into_iter().map(|racer| racer.join().expect("a racing thread panicked")).collect()
    });
    for (trial, key) in keys.iter().enumerate() {
        let results: Vec<&Reservation> = outcomes
            .iter()
            .map(|racer| match &racer[trial] {
                Ok(reservation) => reservation,
                Err(e) => panic!("trial {trial}: a concurrent reserve of {key} failed: {e}"),
            })
            .collect();
        let acquired: Vec<Token> = results
            .iter()
            .filter_map(|r| match r {
                Reservation::Acquired { token } => Some(*token),
                _ => None,
            })
            .collect();
        let [token] = acquired[..] else {
            panic!(
                "trial {trial}: {} of {RACERS} concurrent reserves of {key} acquired it; exactly one must",
                acquired.len()
            );
        };
        for result in results {
            if let Reservation::Existing(record) = result {
                assert!(
                    record.token == token && matches!(record.state, RecordState::InProgress { .. }),
                    "trial {trial}: a losing reserve of {key} must see the winner's in-progress \
                     record (token {token:?}), saw {record:?}"
                );
            }
        }
    }
}

/// Races 8 threads to take over each of 50 abandoned reservations: exactly one wins each.
pub(super) fn one_caller_takes_over_an_abandoned_key(store: &Waited<impl Store>) {
    const KEYS: usize = 50;
    let keys: Vec<String> = (0..KEYS).map(|k| format!("take-over-race-{k}")).collect();
    let expired: Vec<Token> =
        keys.iter().map(|key| acquire_for(store, id(key), "{}", std::time::Duration::ZERO)).collect();
    let barrier = Barrier::new(RACERS);
    let wins: Vec<Vec<bool>> = thread::scope(|scope| {
        let racers: Vec<_> = (0..RACERS)
            .map(|_| {
                let (keys, expired, barrier) = (&keys, &expired, &barrier);
                scope.spawn(move || {
                    keys.iter()
                        .zip(expired)
                        .map(|(key, token)| {
                            barrier.wait();
                            store.take_over(id(key), *token, LONG).is_ok()
                        })
                        .collect()
                })
            })
            .collect();
        racers.into_iter().map(|racer| racer.join().expect("a racing thread panicked")).collect()
    });
    for (k, key) in keys.iter().enumerate() {
        let winners = wins.iter().filter(|racer| racer[k]).count();
        assert_eq!(winners, 1, "{winners} of {RACERS} concurrent take-overs of {key} succeeded; exactly one must");
    }
}
