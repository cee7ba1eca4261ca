//! Approvals on a store: their records are the store's own (write-once records in the
//! namespace `idem.approvals`), so a store that keeps the protocol keeps approvals. These
//! checks hold it to what approvals add: one request per action however many callers race,
//! one decision that stands, the operator's listing, expiry by the store's clock, rounds.

use std::sync::Barrier;
use std::time::Duration;

use super::waited::Waited;
use crate::approval::{self, Action, Ask, DecideError, State, blocking};
use crate::store::once::Put;
use crate::store::{Admin, RecordId, Store, block_on};

const NS: &str = "idem-conformance-approvals";
/// The listing check's own namespace: a store made for it may share its backend with the
/// other checks' (one database schema), whose requests it must not count.
const LISTED_NS: &str = "idem-conformance-approvals-listed";
const DAY: Duration = Duration::from_secs(24 * 3600);
const RACERS: usize = 16;

/// Runs every approval check against stores made by `make_store` (each without records,
/// as for [`check_store`](super::check_store)).
pub fn check_approvals<S: Store + Admin>(make_store: impl Fn() -> S) {
    let make_store = || Waited(make_store());
    racing_first_calls_make_one_request(&make_store());
    one_decision_stands_against_racing_deciders(&make_store());
    pending_lists_undecided_requests_oldest_first(&make_store());
    an_expired_request_takes_no_decision_and_a_new_round_asks_anew(&make_store());
    a_reopened_decline_lets_the_next_call_ask_anew(&make_store());
}

fn ask(store: &Waited<impl Store>, key: &str, round: u32, ttl: Duration) -> Put {
    ask_in(store, (NS, key), round, ttl)
}

fn ask_in(store: &Waited<impl Store>, (namespace, key): (&str, &str), round: u32, ttl: Duration) -> Put {
    let asked = Ask { namespace, key, request: r#"{"amount":1200.0}"#, text: "pay acme 1200 EUR", ttl };
    block_on(Action::new(namespace, key).ask(&store.0, round, &asked))
        .unwrap_or_else(|e| panic!("asking for approval of {key} failed: {e}"))
}

fn id(key: &str) -> RecordId<'_> {
    RecordId { namespace: NS, key }
}

fn state(store: &Waited<impl Store>, key: &str) -> Option<State> {
    blocking::state(&store.0, id(key)).unwrap_or_else(|e| panic!("reading the approval of {key} failed: {e}"))
}

fn racing_first_calls_make_one_request<S: Store>(store: &Waited<S>) {
    let barrier = Barrier::new(RACERS);
    let puts: Vec<Put> = std::thread::scope(|scope| {
        let racers: Vec<_> = (0..RACERS)
            .map(|_| {
                scope.spawn(|| {
                    barrier.wait();
                    ask(store, "race", 0, DAY)
                })
            })
            .collect();
        racers.into_iter().map(|racer| racer.join().expect("a racer panicked")).collect()
    });
    let written = puts.iter().filter(|put| **put == Put::Written).count();
    assert_eq!(written, 1, "{RACERS} racing requests for one action must write one request: {puts:?}");
    assert!(matches!(state(store, "race"), Some(State::Pending(_))), "the one request must read as pending");
}

fn one_decision_stands_against_racing_deciders<S: Store>(store: &Waited<S>) {
    ask(store, "decide", 0, DAY);
    let barrier = Barrier::new(RACERS);
    let decided: Vec<_> = std::thread::scope(|scope| {
        let racers: Vec<_> = (0..RACERS)
            .map(|n| {
                let barrier = &barrier;
                scope.spawn(move || {
                    barrier.wait();
                    let by = format!("decider-{n}");
                    if n.is_multiple_of(2) {
                        blocking::approve(&store.0, id("decide"), &by, None)
                    } else {
                        blocking::decline(&store.0, id("decide"), &by, Some("no"))
                    }
                })
            })
            .collect();
        racers.into_iter().map(|racer| racer.join().expect("a decider panicked")).collect()
    });
    let won: Vec<usize> = (0..RACERS).filter(|n| decided[*n].is_ok()).collect();
    assert_eq!(won.len(), 1, "one of {RACERS} racing decisions must stand: {decided:?}");
    let winner = format!("decider-{}", won[0]);
    for lost in decided.iter().filter_map(|decided| decided.as_ref().err()) {
        match lost {
            DecideError::Decided(decision) => {
                assert_eq!(decision.by, winner, "a loser must be told the decision that stands")
            }
            other => panic!("a decider that lost the race must be told the decision that stands, got {other:?}"),
        }
    }
    let stands = match state(store, "decide") {
        Some(State::Approved(_, decision) | State::Declined(_, decision)) => decision,
        other => panic!("the decision must read back, got {other:?}"),
    };
    assert_eq!((stands.by.as_str(), stands.approved), (winner.as_str(), won[0].is_multiple_of(2)));
}

fn pending_lists_undecided_requests_oldest_first<S: Store + Admin>(store: &Waited<S>) {
    for key in ["scope-a/first", "scope-b/second", "scope-a/third"] {
        ask_in(store, (LISTED_NS, key), 0, DAY);
    }
    let listed = |prefix: Option<&str>| -> Vec<String> {
        let pending = approval::pending(&store.0, Some(LISTED_NS), prefix).expect("listing pending approvals");
        pending.into_iter().map(|request| request.key).collect()
    };
    assert_eq!(listed(None), ["scope-a/first", "scope-b/second", "scope-a/third"], "oldest first");
    assert_eq!(listed(Some("scope-a/")), ["scope-a/first", "scope-a/third"], "one key prefix (scope)");
    assert!(approval::pending(&store.0, Some("another-namespace"), None).unwrap().is_empty(), "one namespace");
    blocking::approve(&store.0, RecordId { namespace: LISTED_NS, key: "scope-a/first" }, "alice", None).unwrap();
    blocking::decline(&store.0, RecordId { namespace: LISTED_NS, key: "scope-a/third" }, "bob", None).unwrap();
    assert_eq!(listed(None), ["scope-b/second"], "decided requests are not pending");
}

fn an_expired_request_takes_no_decision_and_a_new_round_asks_anew<S: Store>(store: &Waited<S>) {
    assert_eq!(ask(store, "expiring", 0, Duration::ZERO), Put::Written);
    // A time to live of zero: expired from the moment the store recorded it.
    let Some(State::Expired(request)) = state(store, "expiring") else {
        panic!("a request past its time to live must read as expired")
    };
    assert_eq!(request.expires_at_ms, request.asked_at_ms);
    match blocking::approve(&store.0, id("expiring"), "alice", None) {
        Err(DecideError::Expired(_)) => {}
        other => panic!("approving an expired request must be refused as expired, got {other:?}"),
    }
    let closed = block_on(Action::new(NS, "expiring").expire(&store.0, 0)).unwrap();
    assert_eq!(closed, Put::Written);
    assert_eq!(ask(store, "expiring", 1, DAY), Put::Written, "the round after an expiry asks anew");
    assert!(matches!(state(store, "expiring"), Some(State::Pending(r)) if r.asked_at_ms >= request.asked_at_ms));
}

fn a_reopened_decline_lets_the_next_call_ask_anew<S: Store>(store: &Waited<S>) {
    ask(store, "reopen", 0, DAY);
    assert!(matches!(blocking::reopen(&store.0, id("reopen"), "ops", None), Err(DecideError::NotDeclined(_))));
    blocking::decline(&store.0, id("reopen"), "bob", Some("wrong IBAN")).unwrap();
    assert!(matches!(blocking::approve(&store.0, id("reopen"), "alice", None), Err(DecideError::Decided(_))));
    assert!(matches!(blocking::reopen(&store.0, id("reopen"), " ", None), Err(DecideError::Anonymous)));
    blocking::reopen(&store.0, id("reopen"), "ops", Some("IBAN fixed")).unwrap();
    assert_eq!(state(store, "reopen"), None, "a reopened action has no request until a call asks");
    assert_eq!(ask(store, "reopen", 1, DAY), Put::Written);
    blocking::approve(&store.0, id("reopen"), "alice", None).unwrap();
    assert!(matches!(state(store, "reopen"), Some(State::Approved(..))));
}
