//! The Redis store's checks on a cluster (`IDEM_TEST_REDIS_CLUSTER_URL`), beyond the
//! conformance suite (in `tests.rs`): where the keys go, and the charge protocol's repair
//! of what a caller left between its steps (see `charges.rs`).

use std::time::{Duration, Instant};

use super::RedisStore;
use super::charges::VOIDED;
use super::fields::CLUSTER_SHARDS;
use super::tests::{cluster_url, fresh_prefix};
use crate::store::budget::{BudgetQuery, Charge, UNIT};
use crate::store::{Admin, BudgetStore, RecordId, Reservation, Reserve, Store, StoreError, block_on};

/// A store whose purge voids a pending charge 100 ms after it was made (twice an
/// operation timeout would be 10 s).
fn quick(url: &str) -> RedisStore {
    let mut store = RedisStore::builder(url).prefix(&fresh_prefix()).build().unwrap();
    store.void_after = Duration::from_millis(100);
    store
}

fn id(key: &str) -> RecordId<'_> {
    RecordId { namespace: "cluster-test", key }
}

fn request(key: &str) -> Reserve<'_> {
    Reserve { id: id(key), request: "{}", lease: Duration::from_secs(60) }
}

/// A count budget of `limit` calls in a window of 1000 years.
fn one_of(budget: &str, limit: i64) -> Charge<'_> {
    Charge {
        budget,
        scope: "",
        window_ms: 1000 * 365 * 24 * 3600 * 1000,
        limit: limit * UNIT,
        amount: UNIT,
        past_limit: false,
    }
}

fn used(store: &RedisStore, budget: &str) -> i64 {
    let query = BudgetQuery { budget: Some(budget), ..BudgetQuery::default() };
    store.budgets(&query).unwrap().first().map_or(0, |window| window.used)
}

/// Purges until `budget`'s window uses `expected`, for at most 5 s (the server's clock has
/// to pass the purge's wait for a pending charge).
fn purge_until_used(store: &RedisStore, budget: &str, expected: i64) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while used(store, budget) != expected {
        assert!(Instant::now() < deadline, "{budget} still uses {} after 5 s of purges", used(store, budget));
        block_on(store.purge(100)).unwrap();
    }
}

#[test]
fn records_spread_over_every_shard_and_each_key_names_its_shard() {
    let Some(url) = cluster_url("records_spread_over_every_shard_and_each_key_names_its_shard") else { return };
    let store = quick(&url);
    let mut seen = [false; CLUSTER_SHARDS];
    for n in 0..2000 {
        let key = format!("order-{n}");
        let (shard, name) = store.keys.record(id(&key));
        assert!(name.starts_with(&format!("{}:{{{shard}}}:r:", store.keys.prefix)), "{name}");
        assert_eq!(store.keys.shard_in(&name), Some(shard));
        seen[shard] = true;
    }
    assert!(seen.iter().all(|seen| *seen), "2000 keys reach every one of the {CLUSTER_SHARDS} shards");
    assert!(RedisStore::builder(&url).prefix("a{b}").build().is_err(), "a prefix with a brace is refused");
}

/// A caller that died after charging, before reserving: the charge counts until a purge
/// finds no reservation holding it, voids it and refunds it; the reservation, should it
/// still arrive, is refused.
#[test]
fn a_charge_left_before_its_reservation_is_voided_and_refunded_by_a_purge() {
    let Some(url) = cluster_url("a_charge_left_before_its_reservation_is_voided_and_refunded_by_a_purge") else {
        return;
    };
    let store = quick(&url);
    let Ok(pending) = block_on(store.charge_pending(id("late"), one_of("late", 5))).unwrap() else {
        panic!("the window has room")
    };
    assert_eq!(used(&store, "late"), UNIT, "charged");
    purge_until_used(&store, "late", 0);
    match block_on(store.reserve_carrying(request("late"), one_of("late", 5), &pending, 0)) {
        Err(StoreError::Backend(e)) => assert!(e.to_string().contains(VOIDED), "{e}"),
        other => panic!("a reservation carrying a voided charge must be refused, got {other:?}"),
    }
    assert_eq!(block_on(store.read(id("late"))).unwrap(), None, "no record was made");
    block_on(store.purge(100)).unwrap();
    assert_eq!(used(&store, "late"), 0, "refunded once");
}

/// A caller that died after reserving, before confirming: the charge is held, so purges
/// confirm it and never refund it; the record's release refunds it, once.
#[test]
fn a_held_charge_left_unconfirmed_is_kept_by_purges_and_refunded_once_by_its_release() {
    let Some(url) = cluster_url("a_held_charge_left_unconfirmed_is_kept_by_purges_and_refunded_once_by_its_release")
    else {
        return;
    };
    let store = quick(&url);
    let Ok(pending) = block_on(store.charge_pending(id("held"), one_of("held", 5))).unwrap() else {
        panic!("the window has room")
    };
    let Reservation::Acquired { token } =
        block_on(store.reserve_carrying(request("held"), one_of("held", 5), &pending, 0)).unwrap()
    else {
        panic!("a new key is acquired")
    };
    // Past the purge's wait for young charges, by the server's clock: a purge then checks it.
    let deadline = Instant::now() + Duration::from_millis(500);
    while Instant::now() < deadline {
        block_on(store.purge(100)).unwrap();
    }
    assert_eq!(used(&store, "held"), UNIT, "a held charge stays charged");
    block_on(store.release(id("held"), token)).unwrap();
    assert_eq!(used(&store, "held"), 0, "the release refunds it");
    block_on(store.purge(100)).unwrap();
    assert_eq!(used(&store, "held"), 0, "once");
    // A second refund of the same charge (a caller and a purge both at it) changes nothing.
    block_on(store.charge_pending(id("other"), one_of("held", 5))).unwrap().unwrap();
    let (shard, _) = store.keys.record(id("held"));
    block_on(store.refund_released(shard, &format!("{}\n{}\n{UNIT}", pending.window, pending.id)));
    assert_eq!(used(&store, "held"), UNIT, "a refunded charge is not refunded again");
}

/// Racing first calls of one key on a cluster: one acquires, the others replay or are
/// refunded, and the window counts one charge.
#[test]
fn racing_first_calls_of_one_key_charge_once() {
    let Some(url) = cluster_url("racing_first_calls_of_one_key_charge_once") else { return };
    let store = quick(&url);
    for trial in 0..50 {
        let (budget, key) = (format!("same-{trial}"), format!("same-{trial}"));
        let barrier = std::sync::Barrier::new(4);
        let acquired: usize = std::thread::scope(|scope| {
            let racers: Vec<_> = (0..4)
                .map(|_| {
                    let (store, barrier, budget, key) = (&store, &barrier, &budget, &key);
                    scope.spawn(move || {
                        barrier.wait();
                        block_on(store.reserve_charged(request(key), one_of(budget, 5)))
                    })
                })
                .collect();
            racers
                .into_iter()
                .map(|racer| racer.join().unwrap())
                .filter(|answer| matches!(answer, Ok(Reservation::Acquired { .. })))
                .count()
        });
        assert_eq!(acquired, 1, "trial {trial}");
        assert_eq!(used(&store, &budget), UNIT, "trial {trial}: one charge");
    }
}
