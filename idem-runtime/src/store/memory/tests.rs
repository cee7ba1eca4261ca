//! MemoryStore against the conformance suite, and what is particular to it.

use std::time::Duration;

use super::*;
use crate::store::{Reservation, Reserve, Store, block_on};
use crate::testing::conformance::{check_store, check_unknown_state};

#[test]
fn passes_the_conformance_checks() {
    check_store(MemoryStore::new);
    check_unknown_state(&MemoryStore::new());
    crate::testing::conformance::check_admin(MemoryStore::new);
    crate::testing::conformance::check_approvals(MemoryStore::new);
    crate::testing::conformance::check_budgets(MemoryStore::new);
}

#[test]
fn tokens_grow_across_stores() {
    let id = RecordId { namespace: "memory-test", key: "k" };
    let reserve = Reserve { id, request: "{}", lease: Duration::from_secs(60) };
    let token = |store: &MemoryStore| match block_on(store.reserve(reserve)).unwrap() {
        Reservation::Acquired { token } => token,
        other => panic!("expected Acquired, got {other:?}"),
    };
    let first = token(&MemoryStore::new());
    let second = token(&MemoryStore::new());
    assert!(second > first, "a later store's token {second:?} must exceed {first:?}");
}

#[test]
fn is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<MemoryStore>();
}
