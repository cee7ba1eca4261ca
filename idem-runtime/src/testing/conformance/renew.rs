//! Renewal: a holder whose body is still running keeps its key, and its progress message,
//! for as long as it renews; anyone else's renewal changes nothing.

use std::thread;
use std::time::{Duration, Instant};

use super::waited::Waited;
use super::{LONG, NS, acquire, acquire_for, assert_fenced, existing, id, read, settle};
use crate::store::{Completion, Record, RecordId, RecordState, Renew, Store, StoreError, Token};

/// A lease short enough for a check to wait out.
const SHORT: Duration = Duration::from_millis(300);
/// How long a check waits for the store to judge a [`SHORT`] lease ended.
const PATIENCE: Duration = Duration::from_secs(10);

fn renewal<'a>(id: RecordId<'a>, token: Token, lease: Duration, progress: Option<&'a str>) -> Renew<'a> {
    Renew { id, token, lease, progress }
}

/// Renews as the holder, which must succeed.
fn renew(store: &Waited<impl Store>, id: RecordId<'_>, token: Token, lease: Duration, progress: Option<&str>) {
    store
        .renew(renewal(id, token, lease, progress))
        .unwrap_or_else(|e| panic!("renew of {id:?} by its holder {token:?} failed: {e}"));
}

/// The lease's end, whether it ended, and the progress message of an in-progress record.
fn in_progress<'a>(record: &'a Record, what: &str) -> (i64, bool, Option<&'a str>) {
    match &record.state {
        RecordState::InProgress { lease_until_ms, lease_expired, progress } => {
            (*lease_until_ms, *lease_expired, progress.as_deref())
        }
        other => panic!("{what} must be in progress, got {other:?}"),
    }
}

/// The record at `id`, which must exist.
fn record(store: &Waited<impl Store>, id: RecordId<'_>) -> Record {
    read(store, id).unwrap_or_else(|| panic!("the record {id:?} must exist"))
}

/// Waits until the store judges the lease of the reservation at `id` ended.
fn wait_for_lease_end(store: &Waited<impl Store>, id: RecordId<'_>) {
    let started = Instant::now();
    loop {
        let record = record(store, id);
        let (_, expired, _) = in_progress(&record, "an unrenewed reservation");
        if expired {
            return;
        }
        assert!(
            started.elapsed() < PATIENCE,
            "a {SHORT:?} lease must read as ended, by the store's clock, within {PATIENCE:?}; {id:?} still reads \
             live: {record:?}"
        );
        thread::sleep(Duration::from_millis(20));
    }
}

/// Renewal moves the lease's end to `lease` after now, by the store's clock, so the key
/// stays the holder's after the lease it replaced has ended.
pub(super) fn renew_extends_the_lease(store: &Waited<impl Store>) {
    let renewed = id("renew-extended");
    let control = id("renew-control");
    let token = acquire_for(store, renewed, r#"{"v":1}"#, SHORT);
    acquire_for(store, control, "{}", SHORT);
    let before = record(store, renewed);
    let (lease_before, _, _) = in_progress(&before, "a fresh reservation");

    renew(store, renewed, token, LONG, None);
    let after = record(store, renewed);
    let (lease_after, expired, _) = in_progress(&after, "a renewed reservation");
    assert!(!expired, "a renewed reservation must hold a live lease, got {after:?}");
    assert!(lease_after > lease_before, "renew must move the lease's end later: {lease_after} after {lease_before}");
    assert!(
        after.updated_at_ms >= before.updated_at_ms,
        "renew must set updated_at to now: {after:?} after {before:?}"
    );
    assert_eq!(
        lease_after - after.updated_at_ms,
        LONG.as_millis() as i64,
        "the renewed lease must end `lease` after the renewal, by the store's clock: {after:?}"
    );
    assert_eq!(
        (after.token, &after.request, after.created_at_ms, after.retain_until_ms),
        (token, &before.request, before.created_at_ms, None),
        "renew must change only the lease, updated_at and progress"
    );

    // The control reservation, made with the same short lease, tells when it has passed.
    wait_for_lease_end(store, control);
    let later = existing(store, renewed, r#"{"v":1}"#);
    let (_, expired, _) = in_progress(&later, "a renewed reservation");
    assert!(!expired, "a renewed lease must still be live after the lease it replaced ended, got {later:?}");
    match store.take_over(renewed, token, LONG) {
        Err(StoreError::Fenced) => {}
        other => panic!("a renewed lease must not be taken over, got {other:?}"),
    }
}

/// A holder whose lease ended may renew it as long as nobody took the key over: the lease
/// is live again and a take-over is refused.
pub(super) fn renew_after_the_lease_ended_revives_it(store: &Waited<impl Store>) {
    let id = id("renew-ended");
    let token = acquire_for(store, id, "{}", Duration::ZERO);
    renew(store, id, token, LONG, None);
    let record = existing(store, id, "{}");
    let (_, expired, _) = in_progress(&record, "a renewed reservation");
    assert!(!expired, "renew after the lease ended, before any take-over, must make it live again: {record:?}");
    assert_eq!(record.token, token, "renew must keep the holder's token");
    match store.take_over(id, token, LONG) {
        Err(StoreError::Fenced) => {}
        other => panic!("a lease renewed after it ended must not be taken over, got {other:?}"),
    }
}

/// The progress message: none at first, set by renew, kept by a renew without one,
/// replaced by the next, byte for byte; gone once the record settles or is taken over.
pub(super) fn renew_keeps_progress_until_settled(store: &Waited<impl Store>) {
    let key = id("renew-progress");
    let token = acquire(store, key, "{}");
    let progress = |what: &str| -> Option<String> {
        let record = existing(store, key, "{}");
        in_progress(&record, what).2.map(str::to_owned)
    };
    assert_eq!(progress("a new reservation"), None, "a new reservation must have no progress message");
    renew(store, key, token, LONG, Some("rendering"));
    assert_eq!(progress("a renewed reservation").as_deref(), Some("rendering"), "renew must keep its message");
    renew(store, key, token, LONG, None);
    assert_eq!(
        progress("a renewed reservation").as_deref(),
        Some("rendering"),
        "renew without a message must keep the stored one"
    );
    let next = "uploading 2/3 — é, \"quoted\"";
    renew(store, key, token, LONG, Some(next));
    assert_eq!(progress("a renewed reservation").as_deref(), Some(next), "a new message must replace the old one");
    settle(store, key, token, Completion::Success("1"));
    assert_eq!(
        existing(store, key, "{}").state,
        RecordState::Completed { result: "1".into() },
        "a record with progress must complete like any other"
    );

    let fresh = id("renew-progress-fresh");
    acquire(store, fresh, "{}");
    let record = existing(store, fresh, "{}");
    assert_eq!(in_progress(&record, "a new reservation").2, None, "a new key must have no progress message");

    let handed = id("renew-progress-taken-over");
    let old = acquire(store, handed, "{}");
    renew(store, handed, old, LONG, Some("step 1"));
    store.abandon(handed, old).unwrap_or_else(|e| panic!("abandon by the holder failed: {e}"));
    let new = store.take_over(handed, old, LONG).unwrap_or_else(|e| panic!("take over after abandon failed: {e}"));
    let record = existing(store, handed, "{}");
    assert_eq!(record.token, new);
    assert_eq!(
        in_progress(&record, "a taken-over reservation").2,
        None,
        "a take-over must start without the old holder's progress message"
    );
}

/// A renewal by a token that does not hold the record (taken over, released, another
/// record's, never handed out) is Fenced and changes nothing, message included.
pub(super) fn renew_with_a_stale_token_is_fenced(store: &Waited<impl Store>) {
    let stale_renew = |id: RecordId<'_>, token: Token, what: &str| {
        let before = read(store, id);
        assert_fenced(store.renew(renewal(id, token, LONG, Some("stale"))), what);
        assert_eq!(read(store, id), before, "{what}: a fenced renew must change nothing");
    };

    let taken = id("renew-taken-over");
    let old = acquire_for(store, taken, "{}", Duration::ZERO);
    let new = store.take_over(taken, old, LONG).unwrap_or_else(|e| panic!("take over of an ended lease failed: {e}"));
    renew(store, taken, new, LONG, Some("new holder"));
    stale_renew(taken, old, "renew by the holder a take-over replaced");

    let released = id("renew-released");
    let first = acquire(store, released, "{}");
    store.release(released, first).unwrap_or_else(|e| panic!("release by the holder failed: {e}"));
    stale_renew(released, first, "renew of a released record");
    assert_eq!(read(store, released), None, "a fenced renew must not create a record");
    let second = acquire(store, released, "{}");
    stale_renew(released, first, "renew by the holder of a released record, now held by another");

    for (token, what) in [
        (Token(0), "renew with the token 0, never handed out"),
        (Token(i64::MAX as u64), "renew with a token never handed out"),
        (Token(u64::MAX), "renew with a token beyond any store's range"),
        (Token(second.0 + 1_000_000), "renew with a token that is not the holder's"),
    ] {
        stale_renew(released, token, what);
    }
    let other = RecordId { namespace: NS, key: "renew-other" };
    acquire(store, other, "{}");
    stale_renew(other, second, "renew of one record with another record's token");
    let unreserved = id("renew-never-reserved");
    stale_renew(unreserved, second, "renew of a key never reserved");
    assert_eq!(read(store, unreserved), None, "a fenced renew must not create a record");
    renew(store, released, second, LONG, None);
}

/// A settled record is no one's to renew: Fenced, and it stays as it settled.
pub(super) fn renew_of_a_settled_record_is_fenced(store: &Waited<impl Store>) {
    for (key, completion) in [
        ("renew-settled-completed", Completion::Success("\"done\"")),
        ("renew-settled-failed", Completion::KeptError("{}")),
    ] {
        let id = id(key);
        let token = acquire(store, id, "{}");
        renew(store, id, token, LONG, Some("almost"));
        settle(store, id, token, completion);
        let before = existing(store, id, "{}");
        assert!(
            matches!(before.state, RecordState::Completed { .. } | RecordState::Failed { .. }),
            "{key}: a settled record must read as settled, got {before:?}"
        );
        assert_fenced(store.renew(renewal(id, token, LONG, Some("late"))), "renew of a settled record");
        assert_fenced(store.renew(renewal(id, token, LONG, None)), "renew of a settled record without a message");
        assert_eq!(existing(store, id, "{}"), before, "{key}: a fenced renew must not change a settled record");
    }
}
