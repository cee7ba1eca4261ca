//! The Redis store's checks on the test server of `IDEM_TEST_REDIS_URL` (`bash .ci/redis
//! start DIR` prints one): the shared conformance suite, and the
//! field's Redis bugs, each as an interleaving that must change nothing.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::RedisStore;
use crate::store::budget::{Adjustment, BudgetChange, BudgetQuery, Charge, UNIT};
use crate::store::{
    Admin, BudgetStore, Completion, RecordId, RecordState, Reservation, Reserve, Store, StoreError, Token, block_on,
};
use crate::testing::conformance::{
    check_admin, check_approvals, check_budgets, check_exclusive_reserve, check_store, check_unknown_state,
};

const TEST_URL_ENV: &str = "IDEM_TEST_REDIS_URL";
const TEST_CLUSTER_URL_ENV: &str = "IDEM_TEST_REDIS_CLUSTER_URL";

/// The test server's URL, or `None` after saying loudly that `test` is skipped; under CI a
/// missing URL fails the test.
fn url(test: &str) -> Option<String> {
    url_in(TEST_URL_ENV, test, "redis://host:port/db (`bash .ci/redis start DIR` prints one)")
}

/// The test cluster's URL, as [`url`] does.
pub(super) fn cluster_url(test: &str) -> Option<String> {
    url_in(TEST_CLUSTER_URL_ENV, test, "redis+cluster://host:port,... (`bash .ci/redis-cluster start DIR` prints one)")
}

fn url_in(env: &str, test: &str, example: &str) -> Option<String> {
    match std::env::var(env) {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var("CI").is_ok_and(|ci| !ci.is_empty() && ci != "false" && ci != "0") => {
            panic!("{test}: {env} is not set under CI; CI must run the Redis tests (see .ci/run)")
        }
        _ => {
            let _ = writeln!(std::io::stderr(), "SKIPPED {test}: set {env}={example}");
            None
        }
    }
}

/// A prefix no other store of any run uses, so each store starts empty.
pub(super) fn fresh_prefix() -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("idem-test-{}-{nanos}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

fn store(url: &str) -> RedisStore {
    RedisStore::builder(url).prefix(&fresh_prefix()).build().unwrap()
}

/// Runs a raw command on a connection of its own.
fn command<T: redis::FromRedisValue>(url: &str, command: &redis::Cmd) -> T {
    let mut connection = redis::Client::open(url).unwrap().get_connection().unwrap();
    command.query(&mut connection).unwrap()
}

fn id(key: &str) -> RecordId<'_> {
    RecordId { namespace: "redis-test", key }
}

fn acquire(store: &RedisStore, key: &str, lease: Duration) -> Token {
    match block_on(store.reserve(Reserve { id: id(key), request: "{}", lease })) {
        Ok(Reservation::Acquired { token }) => token,
        other => panic!("reserve of new {key} must acquire it, got {other:?}"),
    }
}

/// Every conformance check, on stores of `url` (a server's or a cluster's).
fn conforms(url: &str) {
    check_store(|| store(url));
    check_unknown_state(&store(url));
    check_admin(|| store(url));
    check_approvals(|| store(url));
    check_budgets(|| store(url));
    // Three stores on one prefix stand for three workers: one connection each.
    let prefix = fresh_prefix();
    let stores = [0, 1, 2].map(|_| RedisStore::builder(url).prefix(&prefix).build().unwrap());
    check_exclusive_reserve(&stores);
}

#[test]
fn passes_the_conformance_checks_through_the_sync_entry() {
    let Some(url) = url("passes_the_conformance_checks_through_the_sync_entry") else { return };
    conforms(&url);
}

#[test]
fn passes_the_conformance_checks_on_a_cluster() {
    let Some(url) = cluster_url("passes_the_conformance_checks_on_a_cluster") else { return };
    conforms(&url);
}

/// The same checks with every reservation reading the record first (what a stretch of
/// repeats turns on), on one server and on a cluster.
#[test]
fn passes_the_conformance_checks_reading_first() {
    let urls = [
        url("passes_the_conformance_checks_reading_first"),
        cluster_url("passes_the_conformance_checks_reading_first (cluster)"),
    ];
    for url in urls.into_iter().flatten() {
        let reading_first = || {
            let store = store(&url);
            store.repeats.always_read_first.store(true, Ordering::Relaxed);
            store
        };
        check_store(reading_first);
        check_budgets(reading_first);
    }
}

/// A stretch of repeats turns reservations to reading first; a stretch of first calls
/// turns them back; every answer stays what it was, a running record's and a lapsed one's
/// included.
#[test]
fn reservations_read_first_after_repeats_and_not_after_first_calls() {
    let Some(url) = url("reservations_read_first_after_repeats_and_not_after_first_calls") else { return };
    let store = store(&url);
    let reserve =
        |key: &str| block_on(store.reserve(Reserve { id: id(key), request: "{}", lease: Duration::from_secs(60) }));
    let token = acquire(&store, "repeated", Duration::from_secs(60));
    block_on(store.complete(id("repeated"), token, Completion::Success("1"), Duration::from_secs(60))).unwrap();
    acquire(&store, "running", Duration::from_secs(60));
    for _ in 0..20 {
        assert!(matches!(reserve("repeated"), Ok(Reservation::Existing(_))));
    }
    assert!(store.repeats.read_first());
    let Ok(Reservation::Existing(running)) = reserve("running") else { panic!("the running record is found") };
    assert!(matches!(running.state, RecordState::InProgress { lease_expired: false, .. }), "{running:?}");
    acquire(&store, "lapsed", Duration::ZERO);
    let Ok(Reservation::Existing(lapsed)) = reserve("lapsed") else { panic!("the lapsed record is found") };
    assert!(matches!(lapsed.state, RecordState::InProgress { lease_expired: true, .. }), "{lapsed:?}");
    let Ok(Reservation::Existing(replayed)) = reserve("repeated") else { panic!("the settled record is found") };
    assert!(matches!(replayed.state, RecordState::Completed { ref result } if result == "1"), "{replayed:?}");
    for i in 0..20 {
        let key = format!("new-{i}");
        assert!(matches!(reserve(&key), Ok(Reservation::Acquired { .. })), "{key}");
    }
    assert!(!store.repeats.read_first());
    assert!(matches!(reserve("new-0"), Ok(Reservation::Existing(_))));
}

/// Powertools TypeScript #5714: a reader finds an abandoned call, the holder completes,
/// and the reader's take-over, based on what it read, must change nothing: no overwrite
/// of the result, no rerun.
#[test]
fn a_stale_readers_take_over_after_a_completion_changes_nothing() {
    let Some(url) = url("a_stale_readers_take_over_after_a_completion_changes_nothing") else { return };
    let store = store(&url);
    let holder = acquire(&store, "stale", Duration::ZERO);
    let Some(seen) = block_on(store.read(id("stale"))).unwrap() else { panic!("no record") };
    assert!(matches!(seen.state, RecordState::InProgress { lease_expired: true, .. }), "{seen:?}");
    block_on(store.complete(id("stale"), holder, Completion::Success("\"sent\""), Duration::from_secs(60))).unwrap();
    match block_on(store.take_over(id("stale"), seen.token, Duration::from_secs(60))) {
        Err(StoreError::Fenced) => {}
        other => panic!("a take-over of a completed record must be fenced, got {other:?}"),
    }
    let after = block_on(store.reserve(Reserve { id: id("stale"), request: "{}", lease: Duration::from_secs(60) }));
    match after {
        Ok(Reservation::Existing(record)) => {
            assert_eq!(record.state, RecordState::Completed { result: "\"sent\"".into() });
            assert_eq!(record.token, holder, "the completion stands as the holder wrote it");
        }
        other => panic!("the next call must replay the completion, got {other:?}"),
    }
}

/// Libraries that make the lease the key's TTL lose the record of an abandoned call, and
/// the next caller runs it blind. Here an in-progress key never expires: its lease ends
/// as a field, and the record stays for take-over.
#[test]
fn an_abandoned_reservation_outlives_its_lease() {
    let Some(url) = url("an_abandoned_reservation_outlives_its_lease") else { return };
    let store = store(&url);
    let token = acquire(&store, "abandoned", Duration::from_millis(1));
    let key = store.keys.record(id("abandoned")).1;
    let ttl: i64 = command(&url, redis::cmd("PTTL").arg(&key));
    assert_eq!(ttl, -1, "an in-progress record has no expiry");
    // Until the server's clock has passed the 1 ms lease (a read says so).
    while !matches!(
        block_on(store.read(id("abandoned"))).unwrap().map(|record| record.state),
        Some(RecordState::InProgress { lease_expired: true, .. })
    ) {
        std::thread::yield_now();
    }
    match block_on(store.reserve(Reserve { id: id("abandoned"), request: "{}", lease: Duration::from_secs(60) })) {
        Ok(Reservation::Existing(record)) => {
            assert!(matches!(record.state, RecordState::InProgress { lease_expired: true, .. }), "{record:?}")
        }
        other => panic!("an abandoned call must be found, not claimed fresh: {other:?}"),
    }
    let taken = block_on(store.take_over(id("abandoned"), token, Duration::from_secs(60))).unwrap();
    assert!(taken > token);
    block_on(store.complete(id("abandoned"), taken, Completion::Success("1"), Duration::from_secs(60))).unwrap();
    let ttl: i64 = command(&url, redis::cmd("PTTL").arg(&key));
    let (retain, grace) = (60_000, 3_600_000);
    assert!(ttl > retain && ttl <= retain + grace, "a settled record expires after its retention: {ttl} ms");
}

/// A released record's next token is larger, also once its tombstone is gone (deleted by
/// hand here, as its expiry would), and the old holder is fenced from the new record.
#[test]
fn tokens_never_repeat_after_delete_and_re_reserve() {
    let Some(url) = url("tokens_never_repeat_after_delete_and_re_reserve") else { return };
    let store = store(&url);
    let first = acquire(&store, "again", Duration::from_secs(60));
    block_on(store.release(id("again"), first)).unwrap();
    let second = acquire(&store, "again", Duration::from_secs(60));
    assert!(second > first, "{second:?} after {first:?}");
    block_on(store.release(id("again"), second)).unwrap();
    let key = store.keys.record(id("again")).1;
    let _: i64 = command(&url, redis::cmd("DEL").arg(&key));
    let third = acquire(&store, "again", Duration::from_secs(60));
    assert!(third > second, "{third:?} after {second:?}, the tombstone gone");
    for stale in [first, second] {
        let completed = block_on(store.complete(id("again"), stale, Completion::Success("0"), Duration::from_secs(1)));
        assert!(matches!(completed, Err(StoreError::Fenced)), "{stale:?}: {completed:?}");
    }
}

/// A record is one key through every transition, its token and tombstone included: so a
/// record's keys are all in one hash slot, whatever the server. Besides the records, a
/// store keeps its marker and the operator's index of records (and, with budgets, its
/// windows and their index), as the module docs say.
#[test]
fn a_record_is_one_key_through_every_transition() {
    let Some(url) = url("a_record_is_one_key_through_every_transition") else { return };
    let store = store(&url);
    let keys = |store: &RedisStore| -> Vec<String> {
        let mut keys: Vec<String> = command(&url, redis::cmd("KEYS").arg(format!("{}:*", store.keys.prefix)));
        keys.sort();
        keys
    };
    let record = store.keys.record(id("one")).1;
    let [running, settled, marker] =
        ["running", "settled", "store"].map(|name| format!("{}:{name}", store.keys.prefix));
    let token = acquire(&store, "one", Duration::ZERO);
    assert_eq!(keys(&store), [record.clone(), running.clone(), marker.clone()]);
    let token = block_on(store.take_over(id("one"), token, Duration::from_secs(60))).unwrap();
    block_on(store.abandon(id("one"), token)).unwrap();
    let token = block_on(store.take_over(id("one"), token, Duration::from_secs(60))).unwrap();
    block_on(store.release(id("one"), token)).unwrap();
    assert_eq!(keys(&store), [record.clone(), marker.clone()], "the tombstone is the record's own key, off the index");
    let token = acquire(&store, "one", Duration::from_secs(60));
    block_on(store.complete(id("one"), token, Completion::Success("1"), Duration::from_secs(60))).unwrap();
    assert_eq!(keys(&store), [record, settled, marker]);
}

/// A store whose server is unreachable answers at once with a message naming it, and the
/// async entry the same.
#[test]
fn an_unreachable_server_is_a_backend_error_naming_the_store() {
    let store = RedisStore::builder("redis://127.0.0.1:1/0").operation_timeout(Duration::from_secs(2)).build().unwrap();
    let error = block_on(store.read(id("x"))).unwrap_err();
    let said = error.to_string();
    assert!(matches!(error, StoreError::Backend(_)), "{said}");
    assert!(said.contains("Redis 127.0.0.1:1/0 (prefix idem): read: "), "{said}");
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let error = runtime.block_on(store.read(id("x"))).unwrap_err();
    assert!(error.to_string().contains("read: "), "{error}");
}

#[test]
fn passwords_are_not_in_the_stores_name() {
    let store = RedisStore::new("redis://app:s3cret@127.0.0.1:6390/2").unwrap();
    assert_eq!(crate::store::Admin::describe(&store), "Redis 127.0.0.1:6390/2 (prefix idem)");
}

/// Async callers on multi-threaded runtimes use a connection their runtime drives; one
/// that shuts down takes its connection with it and the next runtime opens its own. Sync
/// calls from a runtime's worker use the store's thread, and do not wait on the worker
/// they block.
#[test]
fn runtimes_come_and_go_and_sync_calls_inside_them_answer() {
    let Some(url) = url("runtimes_come_and_go_and_sync_calls_inside_them_answer") else { return };
    let store = std::sync::Arc::new(store(&url));
    let token = acquire(&store, "shared", Duration::from_secs(60));
    for _ in 0..3 {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let found = runtime.block_on(store.read(id("shared"))).unwrap().unwrap();
        assert_eq!(found.token, token);
        let inside = std::sync::Arc::clone(&store);
        let sync_read = runtime.block_on(runtime.spawn(async move { block_on(inside.read(id("shared"))) }));
        assert_eq!(sync_read.unwrap().unwrap().unwrap().token, token);
        drop(runtime);
    }
}

/// Settled records that Redis expires leave the settled index when the next record
/// settles: the index stays as large as what is kept, with no purge ever run.
#[test]
fn the_settled_index_forgets_what_redis_expired_without_a_purge() {
    let Some(url) = url("the_settled_index_forgets_what_redis_expired_without_a_purge") else { return };
    let store =
        RedisStore::builder(&url).prefix(&fresh_prefix()).expire_after_retention(Duration::ZERO).build().unwrap();
    for n in 0..10 {
        let key = format!("gone-{n}");
        let token = acquire(&store, &key, Duration::from_secs(60));
        block_on(store.complete(id(&key), token, Completion::Success("1"), Duration::ZERO)).unwrap();
        assert_eq!(block_on(store.read(id(&key))).unwrap(), None, "expired by Redis at the end of its retention");
    }
    // Until the server's clock has moved past every settling above (a 1 ms lease ends).
    acquire(&store, "clock", Duration::from_millis(1));
    while !matches!(
        block_on(store.read(id("clock"))).unwrap().map(|record| record.state),
        Some(RecordState::InProgress { lease_expired: true, .. })
    ) {
        std::thread::yield_now();
    }
    let token = acquire(&store, "kept", Duration::from_secs(60));
    block_on(store.complete(id("kept"), token, Completion::Success("1"), Duration::from_secs(60))).unwrap();
    let settled: i64 = command(&url, redis::cmd("ZCARD").arg(format!("{}:settled", store.keys.prefix)));
    assert_eq!(settled, 1, "only the kept record is indexed");
    assert_eq!(block_on(store.purge(100)).unwrap(), 0);
}

/// A count budget's charge of one call against `limit` calls, in a window of 1000 years
/// (it starts at the epoch: its name is known).
fn one_of<'a>(budget: &'a str, scope: &'a str, limit: i64) -> Charge<'a> {
    const AGES: i64 = 1000 * 365 * 24 * 3600 * 1000;
    Charge { budget, scope, window_ms: AGES, limit: limit * UNIT, amount: UNIT, past_limit: false }
}

/// Budget windows have names an operator can read and type (`redis-cli --scan` used to cut
/// them at a NUL byte): `<prefix>:b:<budget length>:<budget>:<scope length>:<scope>:<start>`.
#[test]
fn budget_windows_have_names_an_operator_can_read_and_type() {
    let Some(url) = url("budget_windows_have_names_an_operator_can_read_and_type") else { return };
    let store = store(&url);
    for (key, scope) in [("unscoped", ""), ("scoped", "0123456789abcdef0123456789abcdef/")] {
        let request = Reserve { id: id(key), request: "{}", lease: Duration::from_secs(60) };
        let reserved = block_on(store.reserve_charged(request, one_of("refunds", scope, 5))).unwrap();
        assert!(matches!(reserved, Reservation::Acquired { .. }), "{reserved:?}");
    }
    let mut windows: Vec<String> = command(&url, redis::cmd("KEYS").arg(format!("{}:b:*", store.keys.prefix)));
    windows.sort();
    let expected = [
        format!("{}:b:7:refunds:0::0", store.keys.prefix),
        format!("{}:b:7:refunds:33:0123456789abcdef0123456789abcdef/:0", store.keys.prefix),
    ];
    assert_eq!(windows, expected, "names of text, without NUL or other control characters");
    for name in &windows {
        let used: String = command(&url, redis::cmd("HGET").arg(name).arg("used"));
        assert_eq!(used, UNIT.to_string(), "{name} is the window charged");
    }
}

/// A window an older version named with NUL bytes (`<prefix>:b:<budget>\0<scope>\0<start>`)
/// is still the window: charged, refunded, listed and adjusted under its name until it
/// expires, never counted again from zero beside it.
#[test]
fn a_window_an_older_version_named_is_charged_listed_and_adjusted_under_its_name() {
    let Some(url) = url("a_window_an_older_version_named_is_charged_listed_and_adjusted_under_its_name") else {
        return;
    };
    let store = store(&url);
    let legacy = format!("{}:b:older\0\00", store.keys.prefix);
    let mut plant = redis::cmd("HSET");
    plant.arg(&legacy).arg("budget").arg("older").arg("scope").arg("").arg("start").arg(0);
    plant.arg("window").arg(1000_i64 * 365 * 24 * 3600 * 1000).arg("limit").arg(2 * UNIT).arg("raised").arg(0);
    plant.arg("used").arg(UNIT);
    let _: i64 = command(&url, &plant);
    let _: i64 = command(&url, redis::cmd("SADD").arg(format!("{}:budgets", store.keys.prefix)).arg(&legacy));

    let charge = |key| {
        block_on(store.reserve_charged(
            Reserve { id: id(key), request: "{}", lease: Duration::from_secs(60) },
            one_of("older", "", 2),
        ))
    };
    let Ok(Reservation::Acquired { token }) = charge("second") else { panic!("the older window has room for one") };
    assert!(matches!(charge("third"), Ok(Reservation::OverBudget(_))), "the older window's use counts");
    let query = BudgetQuery { budget: Some("older"), scope: Some(""), current: false };
    let listed = Admin::budgets(&store, &query).unwrap();
    assert_eq!(listed.iter().map(|window| window.used).collect::<Vec<_>>(), [2 * UNIT], "one window: {listed:?}");
    block_on(store.release(id("second"), token)).unwrap();
    let used: String = command(&url, redis::cmd("HGET").arg(&legacy).arg("used"));
    assert_eq!(used, UNIT.to_string(), "the release refunds the older window");
    let raise = Adjustment { window: ("older", "", 0), change: BudgetChange::Raise(UNIT), by: "ops", note: "upgrade" };
    let raised = Admin::adjust_budget(&store, &raise).unwrap();
    assert_eq!((raised.used, raised.raised), (UNIT, UNIT));
    let names: Vec<String> = command(&url, redis::cmd("KEYS").arg(format!("{}:b:*", store.keys.prefix)));
    assert_eq!(names, [legacy], "no second window beside the older one");
}
