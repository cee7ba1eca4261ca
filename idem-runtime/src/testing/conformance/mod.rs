//! One set of behaviour checks that every [`Store`] must pass.
//!
//! The bundled stores run these checks in their own tests; a store of your own should run
//! them too, because the tool runtime relies on every promise they test (fencing, byte-exact
//! replay, atomic reservation, lease renewal). Each check panics with a message naming the
//! broken promise.

use std::time::Duration;

use crate::store::{Completion, Record, RecordId, RecordState, Reservation, Reserve, Store, StoreError, Token};
use waited::Waited;

mod admin;
mod approvals;
mod budget_edges;
mod budgets;
mod charges;
mod race;
mod renew;
mod unreadable;
mod waited;

pub use admin::check_admin;
pub use approvals::check_approvals;
pub use budgets::check_budgets;
pub use race::check_exclusive_reserve;
pub use unreadable::{PlantRecord, check_unknown_state};

const NS: &str = "idem-conformance";
const LONG: Duration = Duration::from_secs(3600);

/// Runs every check against stores made by `make_store`.
///
/// `make_store` is called once per check and must return a store without records (a
/// fresh file, a new schema, a truncated table), since some checks count what they find.
///
/// A store that can be given a record it did not write (see [`PlantRecord`]) should also
/// pass [`check_unknown_state`]: a record in a state this version does not know must read
/// as [`StoreError::Corrupt`], never as an outage and never as a free key.
///
/// ```
/// idem_runtime::testing::conformance::check_store(idem_runtime::store::MemoryStore::new);
/// ```
pub fn check_store<S: Store>(make_store: impl Fn() -> S) {
    let make_store = || Waited(make_store());
    reserve_twice_finds_in_progress(&make_store());
    completed_results_replay_byte_identical(&make_store());
    release_lets_a_retry_acquire_with_a_larger_token(&make_store());
    stale_token_is_fenced(&make_store());
    settled_record_is_fenced(&make_store());
    kept_error_reads_back_as_failed(&make_store());
    lease_expiry_is_judged_by_the_store(&make_store());
    read_never_creates(&make_store());
    namespaces_are_independent(&make_store());
    purge_removes_only_settled_records_past_retention(&make_store());
    take_over_needs_an_ended_lease_and_fences_the_old_holder(&make_store());
    abandon_ends_the_lease_at_once(&make_store());
    renew::renew_extends_the_lease(&make_store());
    renew::renew_after_the_lease_ended_revives_it(&make_store());
    renew::renew_keeps_progress_until_settled(&make_store());
    renew::renew_with_a_stale_token_is_fenced(&make_store());
    renew::renew_of_a_settled_record_is_fenced(&make_store());
    race::one_caller_takes_over_an_abandoned_key(&make_store());
    check_exclusive_reserve(&[make_store().0]);
}

fn id(key: &str) -> RecordId<'_> {
    RecordId { namespace: NS, key }
}

fn reserve_request<'a>(id: RecordId<'a>, request: &'a str, lease: Duration) -> Reserve<'a> {
    Reserve { id, request, lease }
}

fn reserve(store: &Waited<impl Store>, id: RecordId<'_>, request: &str, lease: Duration) -> Reservation {
    store.reserve(reserve_request(id, request, lease)).unwrap_or_else(|e| panic!("reserve of {id:?} failed: {e}"))
}

fn acquire(store: &Waited<impl Store>, id: RecordId<'_>, request: &str) -> Token {
    acquire_for(store, id, request, LONG)
}

fn acquire_for(store: &Waited<impl Store>, id: RecordId<'_>, request: &str, lease: Duration) -> Token {
    match reserve(store, id, request, lease) {
        Reservation::Acquired { token } => token,
        other => panic!("reserve of new {id:?} must acquire it, found {other:?}"),
    }
}

fn existing(store: &Waited<impl Store>, id: RecordId<'_>, request: &str) -> Record {
    match reserve(store, id, request, LONG) {
        Reservation::Existing(record) => {
            let read = read(store, id);
            assert_eq!(read.as_ref(), Some(&record), "read of {id:?} must match what reserve found");
            record
        }
        other => panic!("reserve of {id:?} must find the existing record, got {other:?} instead"),
    }
}

fn read(store: &Waited<impl Store>, id: RecordId<'_>) -> Option<Record> {
    store.read(id).unwrap_or_else(|e| panic!("read of {id:?} failed: {e}"))
}

fn settle(store: &Waited<impl Store>, id: RecordId<'_>, token: Token, completion: Completion<'_>) {
    settle_for(store, id, token, completion, LONG);
}

fn settle_for(
    store: &Waited<impl Store>,
    id: RecordId<'_>,
    token: Token,
    completion: Completion<'_>,
    retain: Duration,
) {
    store
        .complete(id, token, completion, retain)
        .unwrap_or_else(|e| panic!("complete of {id:?} with its own {token:?} failed: {e}"));
}

fn assert_fenced(result: Result<(), StoreError>, what: &str) {
    match result {
        Err(StoreError::Fenced) => {}
        Ok(()) => panic!("{what} must be Fenced, but it succeeded"),
        Err(e) => panic!("{what} must be Fenced, got the error {e}"),
    }
}

fn purge(store: &Waited<impl Store>, limit: usize) -> usize {
    store.purge(limit).unwrap_or_else(|e| panic!("purge failed: {e}"))
}

fn reserve_twice_finds_in_progress(store: &Waited<impl Store>) {
    let id = id("in-progress");
    let token = acquire(store, id, r#"{"amount":"12.50"}"#);
    let record = existing(store, id, r#"{"amount":"99.00"}"#);
    assert_eq!(record.request, r#"{"amount":"12.50"}"#, "a repeat must see the first call's request");
    assert_eq!(record.token, token, "the existing record must carry its holder's token");
    assert!(
        matches!(record.state, RecordState::InProgress { lease_expired: false, .. }),
        "a fresh reservation must be in progress with a live lease, got {:?}",
        record.state
    );
    assert!(record.created_at_ms <= record.updated_at_ms, "created after updated: {record:?}");
}

fn completed_results_replay_byte_identical(store: &Waited<impl Store>) {
    let results = ["0", "false", "\"\"", "[]", "{}", "null", "\"  spaced  \"", "{ \"b\": 1, \"a\": [1.50, \"é\\n\"] }"];
    for (i, result) in results.into_iter().enumerate() {
        let key = format!("result-{i}");
        let id = id(&key);
        let token = acquire(store, id, "{}");
        settle(store, id, token, Completion::Success(result));
        let record = existing(store, id, "{}");
        assert_eq!(
            record.state,
            RecordState::Completed { result: result.to_owned() },
            "the result {result:?} must replay byte for byte"
        );
        assert_eq!(record.token, token, "completion must keep the holder's token");
    }
}

fn release_lets_a_retry_acquire_with_a_larger_token(store: &Waited<impl Store>) {
    let id = id("released");
    let first = acquire(store, id, "{}");
    store.release(id, first).unwrap_or_else(|e| panic!("release with the holder's token failed: {e}"));
    assert_eq!(read(store, id), None, "a released record must be gone");
    let second = acquire(store, id, "{}");
    assert!(second > first, "tokens must only grow: {second:?} after {first:?}");
}

fn stale_token_is_fenced(store: &Waited<impl Store>) {
    let id = id("stale");
    let stale = acquire(store, id, r#"{"v":1}"#);
    store.release(id, stale).expect("release failed");
    let holder = acquire(store, id, r#"{"v":2}"#);
    let before = read(store, id);
    assert_fenced(store.complete(id, stale, Completion::Success("1"), LONG), "complete with a stale token");
    assert_fenced(store.release(id, stale), "release with a stale token");
    assert_fenced(
        store.complete(id, Token(u64::MAX), Completion::Success("1"), LONG),
        "complete with a token never handed out",
    );
    let other = RecordId { namespace: NS, key: "stale-other" };
    acquire(store, other, "{}");
    assert_fenced(
        store.complete(other, holder, Completion::Success("1"), LONG),
        "complete of one record with another record's token",
    );
    assert_fenced(store.release(other, holder), "release of one record with another record's token");
    assert_eq!(read(store, id), before, "a fenced call must change nothing");
    settle(store, id, holder, Completion::Success("2"));
}

fn settled_record_is_fenced(store: &Waited<impl Store>) {
    let id = id("settled");
    let token = acquire(store, id, "{}");
    settle(store, id, token, Completion::Success("\"first\""));
    assert_fenced(store.complete(id, token, Completion::Success("\"second\""), LONG), "a second complete");
    assert_fenced(
        store.complete(id, token, Completion::KeptError("\"second\""), LONG),
        "a kept error after completion",
    );
    assert_fenced(store.release(id, token), "release after completion");
    let record = existing(store, id, "{}");
    assert_eq!(
        record.state,
        RecordState::Completed { result: "\"first\"".into() },
        "fenced calls must not change a completed record"
    );
}

fn kept_error_reads_back_as_failed(store: &Waited<impl Store>) {
    let id = id("kept-error");
    let error = r#"{"code":"DECLINED","message":"card declined"}"#;
    let token = acquire(store, id, "{}");
    settle(store, id, token, Completion::KeptError(error));
    let record = existing(store, id, "{}");
    assert_eq!(
        record.state,
        RecordState::Failed { error: error.into() },
        "a kept error must read back as Failed with its exact text"
    );
}

fn lease_expiry_is_judged_by_the_store(store: &Waited<impl Store>) {
    let ended = id("lease-ended");
    let token = acquire_for(store, ended, "{}", Duration::ZERO);
    let record = existing(store, ended, "{}");
    assert!(
        matches!(record.state, RecordState::InProgress { lease_expired: true, .. }),
        "a zero lease must read as expired, got {:?}",
        record.state
    );
    assert_eq!(record.token, token, "an expired reservation must be returned as it is, never taken over");

    let live = id("lease-live");
    acquire(store, live, "{}");
    let record = existing(store, live, "{}");
    let RecordState::InProgress { lease_until_ms, lease_expired, .. } = record.state else {
        panic!("a reservation must be in progress, got {:?}", record.state);
    };
    assert!(!lease_expired, "a one-hour lease must not read as expired");
    assert_eq!(
        lease_until_ms - record.created_at_ms,
        LONG.as_millis() as i64,
        "the lease must end `lease` after the reservation"
    );
}

fn read_never_creates(store: &Waited<impl Store>) {
    let id = id("never-reserved");
    assert_eq!(read(store, id), None, "an unknown id must read as None");
    assert_eq!(read(store, id), None, "a read must not create a record");
    acquire(store, id, "{}");
}

fn namespaces_are_independent(store: &Waited<impl Store>) {
    let a = RecordId { namespace: "idem-conformance-a", key: "shared" };
    let b = RecordId { namespace: "idem-conformance-b", key: "shared" };
    let token_a = acquire(store, a, "{}");
    let token_b = acquire(store, b, "{}");
    assert_ne!(token_a, token_b, "two records must not share a token");
    settle(store, a, token_a, Completion::Success("\"a\""));
    let record_b = existing(store, b, "{}");
    assert!(
        matches!(record_b.state, RecordState::InProgress { .. }),
        "completing one namespace must not settle another, got {:?}",
        record_b.state
    );
    store.release(b, token_b).expect("release failed");
    let record_a = existing(store, a, "{}");
    assert_eq!(
        record_a.state,
        RecordState::Completed { result: "\"a\"".into() },
        "releasing one namespace must not touch another"
    );
    assert_eq!(read(store, b), None, "the released record must be gone");
}

fn purge_removes_only_settled_records_past_retention(store: &Waited<impl Store>) {
    let settled = ["purge-c1", "purge-c2", "purge-c3", "purge-f1"];
    for key in settled {
        let id = id(key);
        let token = acquire(store, id, "{}");
        let completion = if key.contains("-f") { Completion::KeptError("\"e\"") } else { Completion::Success("0") };
        settle_for(store, id, token, completion, Duration::ZERO);
    }
    let kept = id("purge-kept");
    let token = acquire(store, kept, "{}");
    settle(store, kept, token, Completion::Success("1"));
    acquire_for(store, id("purge-expired"), "{}", Duration::ZERO);
    acquire(store, id("purge-live"), "{}");

    let record = existing(store, kept, "{}");
    assert!(
        record.retain_until_ms.is_some_and(|until| until - record.updated_at_ms == LONG.as_millis() as i64),
        "a settled record must be kept `retain` after it settled, got {record:?}"
    );
    assert_eq!(purge(store, 0), 0, "purge must respect a limit of 0");
    assert_eq!(purge(store, 3), 3, "purge must delete up to `limit` records");
    assert_eq!(purge(store, 100), 1, "purge must delete the remaining record past its retention");
    assert_eq!(purge(store, 100), 0, "nothing past its retention is left to purge");
    for key in settled {
        assert_eq!(read(store, id(key)), None, "purge must delete settled {key} past its retention");
    }
    assert!(read(store, kept).is_some(), "purge must keep a record within its retention");
    for key in ["purge-expired", "purge-live"] {
        assert!(read(store, id(key)).is_some(), "purge must never delete in-progress {key}, even past its lease");
    }
}

fn take_over_needs_an_ended_lease_and_fences_the_old_holder(store: &Waited<impl Store>) {
    let live = id("take-over-live");
    let holder = acquire(store, live, "{}");
    match store.take_over(live, holder, LONG) {
        Err(StoreError::Fenced) => {}
        other => panic!("taking over a live lease must be Fenced, got {other:?}"),
    }

    let ended = id("take-over-ended");
    let old = acquire_for(store, ended, r#"{"v":1}"#, Duration::ZERO);
    let new = store.take_over(ended, old, LONG).unwrap_or_else(|e| panic!("take over of an ended lease failed: {e}"));
    assert!(new > old, "a take-over must hand out a larger token: {new:?} after {old:?}");
    let record = existing(store, ended, r#"{"v":1}"#);
    assert_eq!(record.token, new, "the record must carry the new holder's token");
    assert_eq!(record.request, r#"{"v":1}"#, "a take-over must keep the first call's request");
    assert!(
        matches!(record.state, RecordState::InProgress { lease_expired: false, .. }),
        "a taken-over record must hold a fresh lease, got {:?}",
        record.state
    );
    assert!(matches!(store.take_over(ended, old, LONG), Err(StoreError::Fenced)), "a second take-over must be Fenced");
    assert_fenced(store.complete(ended, old, Completion::Success("\"late\""), LONG), "the old holder's complete");
    assert_fenced(store.release(ended, old), "the old holder's release");
    assert_fenced(store.abandon(ended, old), "the old holder's abandon");
    settle(store, ended, new, Completion::Success("\"new\""));
    assert_eq!(
        existing(store, ended, r#"{"v":1}"#).state,
        RecordState::Completed { result: "\"new\"".into() },
        "the new holder's result must stand"
    );
}

fn abandon_ends_the_lease_at_once(store: &Waited<impl Store>) {
    let id = id("abandoned");
    let token = acquire(store, id, "{}");
    store.abandon(id, token).unwrap_or_else(|e| panic!("abandon by the holder failed: {e}"));
    let record = existing(store, id, "{}");
    assert!(
        matches!(record.state, RecordState::InProgress { lease_expired: true, .. }),
        "an abandoned reservation must read as in progress with an ended lease, got {:?}",
        record.state
    );
    assert_eq!(record.token, token, "abandon must keep the holder's token");
    let next = store.take_over(id, token, LONG).unwrap_or_else(|e| panic!("take over after abandon failed: {e}"));
    assert!(next > token);
}
