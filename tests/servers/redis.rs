//! The Redis store through real tools and real servers: an abandoned call is never run
//! again blindly, a killed server (SIGKILL, restarted under load) makes no double effect
//! where its persistence keeps what it acknowledged (and the one it must, where it keeps
//! nothing, as the docs say), a frozen one (SIGSTOP) answers STORE_UNAVAILABLE within the
//! store's deadline, a body never runs without a reservation, and `wait_for_replicas`
//! runs no body whose reservation no replica has.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use idem::store::block_on;
use idem::store::{RecordId, Reservation, Reserve, Store};
use idem::{ErrorCode, RedisStore, idempotent};

use crate::support::redis;

use redis::Server;

/// Tools on one store, and the effects their bodies had, by order.
struct Shop {
    store: RedisStore,
    effects: Mutex<HashMap<u32, u32>>,
    held: AtomicUsize,
}

impl Shop {
    fn on(url: &str) -> Shop {
        Shop::with(RedisStore::builder(url).operation_timeout(Duration::from_millis(500)).build().unwrap())
    }

    fn with(store: RedisStore) -> Shop {
        Shop { store, effects: Mutex::default(), held: AtomicUsize::new(0) }
    }

    /// A body that waits at `go` once `entered` says it runs (lease 1 s: renewed while it
    /// waits, so it stays live however long the test takes).
    #[idempotent(key = "hold:<order>", namespace = "redis.hold", lease = "1s", store = self.store)]
    fn hold(&self, order: u32, entered: &std::sync::Barrier, go: &std::sync::Barrier) -> Result<u32, idem::Error> {
        self.held.fetch_add(1, Ordering::SeqCst);
        entered.wait();
        go.wait();
        Ok(order)
    }

    #[idempotent(key = "pay:<order>", namespace = "redis.pay", lease = "1h", store = self.store)]
    fn pay(&self, order: u32) -> Result<u32, idem::Error> {
        *self.effects.lock().unwrap().entry(order).or_default() += 1;
        Ok(order)
    }

    /// `pay`, as an async tool: its calls on a multi-threaded runtime use a connection that
    /// runtime drives.
    #[idempotent(key = "pay:<order>", namespace = "redis.pay_async", lease = "1h", store = self.store)]
    async fn pay_async(&self, order: u32) -> Result<u32, idem::Error> {
        *self.effects.lock().unwrap().entry(1000 + order).or_default() += 1;
        Ok(order)
    }

    /// `pay`, and then `then` (which stops the server, say) before the body returns.
    #[idempotent(key = "pay:<order>", namespace = "redis.pay_then", lease = "1h", store = self.store)]
    fn pay_then(&self, order: u32, then: &dyn Fn()) -> Result<u32, idem::Error> {
        *self.effects.lock().unwrap().entry(order).or_default() += 1;
        then();
        Ok(order)
    }

    fn effects(&self, order: u32) -> u32 {
        self.effects.lock().unwrap().get(&order).copied().unwrap_or(0)
    }

    fn most_effects(&self) -> u32 {
        self.effects.lock().unwrap().values().copied().max().unwrap_or(0)
    }
}

/// Powertools #8386 and #5678: a call in progress (its lease live) was taken for an
/// orphan, and an overlapping call ran too. Here the overlapping call is told IN_PROGRESS
/// while the first one's body runs, and the body runs once.
#[test]
fn an_overlapping_call_is_in_progress_and_never_runs() {
    let Some(url) = redis::test_url("an_overlapping_call_is_in_progress_and_never_runs") else { return };
    let shop = Shop::with(RedisStore::builder(&url).prefix(&prefix()).build().unwrap());
    let (entered, go) = (std::sync::Barrier::new(2), std::sync::Barrier::new(2));
    std::thread::scope(|scope| {
        let first = scope.spawn(|| shop.hold(5, &entered, &go));
        entered.wait(); // the first call's body runs
        let error = shop.hold(5, &entered, &go).unwrap_err();
        assert_eq!(error.code(), ErrorCode::InProgress, "{error}");
        go.wait();
        assert_eq!(first.join().unwrap().unwrap(), 5);
    });
    assert_eq!(shop.held.load(Ordering::SeqCst), 1);
    assert_eq!(shop.hold(5, &std::sync::Barrier::new(1), &std::sync::Barrier::new(1)).unwrap(), 5, "a replay");
    assert_eq!(shop.held.load(Ordering::SeqCst), 1);
}

/// An abandoned call (its holder gone, its lease ended) answers OUTCOME_UNKNOWN without a
/// reconcile hook: the body does not run again.
#[test]
fn an_abandoned_call_is_outcome_unknown_never_a_blind_rerun() {
    let Some(url) = redis::test_url("an_abandoned_call_is_outcome_unknown_never_a_blind_rerun") else { return };
    let shop = Shop::with(RedisStore::builder(&url).prefix(&prefix()).build().unwrap());
    let id = RecordId { namespace: "redis.pay", key: "pay:7" };
    let Ok(Reservation::Acquired { token }) =
        block_on(shop.store.reserve(Reserve { id, request: "{}", lease: Duration::from_secs(3600) }))
    else {
        panic!("a fresh key")
    };
    block_on(shop.store.abandon(id, token)).unwrap(); // the holder died; its lease ends now
    assert_eq!(shop.pay(7).unwrap_err().code(), ErrorCode::OutcomeUnknown);
    assert_eq!(shop.effects(7), 0);
}

fn prefix() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("idem-tools-test-{}-{nanos}", std::process::id())
}

/// Four threads call the same 150 orders while the server is killed with SIGKILL and
/// restarted; then every order is called once more. Returns the shop, and how many calls
/// answered STORE_UNAVAILABLE (the kill happened under load).
fn kill_under_load(server: &mut Server) -> (Shop, usize) {
    const ORDERS: u32 = 150;
    let shop = Arc::new(Shop::on(&server.url()));
    let (calls, unavailable, killed) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicBool::new(false));
    std::thread::scope(|scope| {
        for thread in 0..4 {
            let (shop, calls, unavailable) = (&shop, &calls, &unavailable);
            let killed = &killed;
            scope.spawn(move || {
                // Until the server was killed and every order was gone through once after it.
                let mut order = thread;
                let mut after_kill = None;
                loop {
                    if after_kill.is_none() && killed.load(Ordering::SeqCst) {
                        after_kill = Some(0);
                    }
                    if let Some(n) = after_kill.as_mut() {
                        *n += 1;
                        if *n > ORDERS {
                            break;
                        }
                    }
                    match shop.pay(order % ORDERS) {
                        Ok(_) => {}
                        Err(e) if e.code() == ErrorCode::StoreUnavailable => {
                            unavailable.fetch_add(1, Ordering::SeqCst);
                        }
                        Err(e) => assert!(matches!(e.code(), ErrorCode::InProgress | ErrorCode::OutcomeUnknown), "{e}"),
                    }
                    calls.fetch_add(1, Ordering::SeqCst);
                    order += 1;
                }
            });
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        while calls.load(Ordering::SeqCst) < 200 {
            assert!(Instant::now() < deadline, "no load");
            std::thread::yield_now();
        }
        server.kill();
        let at_kill = calls.load(Ordering::SeqCst);
        while calls.load(Ordering::SeqCst) < at_kill + 20 {
            std::thread::yield_now(); // calls meet the dead server
        }
        server.restart();
        killed.store(true, Ordering::SeqCst);
    });
    for order in 0..ORDERS {
        match shop.pay(order) {
            Ok(_) => {}
            Err(e) => assert!(matches!(e.code(), ErrorCode::InProgress | ErrorCode::OutcomeUnknown), "{e}"),
        }
    }
    let unavailable = unavailable.load(Ordering::SeqCst);
    (Arc::into_inner(shop).unwrap(), unavailable)
}

/// `appendfsync always`: nothing acknowledged is lost, so no order has two effects.
#[test]
fn a_killed_server_with_appendfsync_always_makes_no_double_effect() {
    let test = "a_killed_server_with_appendfsync_always_makes_no_double_effect";
    let Some(mut server) = Server::start(test, &["--appendonly", "yes", "--appendfsync", "always"]) else { return };
    let (shop, unavailable) = kill_under_load(&mut server);
    assert!(unavailable > 0, "the kill must land under load");
    assert_eq!(shop.most_effects(), 1, "one effect per order at most");
}

/// `appendfsync everysec` on a disk that keeps up: a killed process loses nothing it
/// acknowledged either (its writes reached the operating system before the answer). On a
/// busy disk it can: while its background fsync runs, Redis holds writes back (up to 2 s)
/// yet answers them, and a kill loses them (about one kill in ten on this machine's disk
/// while other builds ran); a crash of the machine loses up to a second, which a test
/// cannot make here. The docs say all three. Its files are on a tmpfs, so the test checks
/// the first, whatever else the machine writes.
#[test]
fn a_killed_server_with_appendfsync_everysec_makes_no_double_effect_while_its_disk_keeps_up() {
    let test = "a_killed_server_with_appendfsync_everysec_makes_no_double_effect_while_its_disk_keeps_up";
    let options = ["--appendonly", "yes", "--appendfsync", "everysec"];
    let Some(mut server) = Server::start_on_tmpfs(test, &options) else { return };
    let (shop, unavailable) = kill_under_load(&mut server);
    assert!(unavailable > 0, "the kill must land under load");
    assert_eq!(shop.most_effects(), 1, "one effect per order at most");
}

/// Without persistence a restart forgets every key, and the calls after it run again: the
/// docs' table says so, and this is why.
#[test]
fn a_killed_server_without_persistence_runs_actions_again_as_documented() {
    let test = "a_killed_server_without_persistence_runs_actions_again_as_documented";
    let Some(mut server) = Server::start(test, &["--appendonly", "no"]) else { return };
    let (shop, _) = kill_under_load(&mut server);
    assert_eq!(shop.most_effects(), 2, "orders completed before the restart ran again after it");
}

/// SIGSTOP: the server accepts and answers nothing. A call answers STORE_UNAVAILABLE
/// within the store's deadline and its body does not run; once the server runs again, the
/// reservation it received while frozen holds the key (IN_PROGRESS, never a second run),
/// and other keys work.
#[test]
fn a_frozen_server_is_store_unavailable_within_the_deadline() {
    let Some(server) = Server::start("a_frozen_server_is_store_unavailable_within_the_deadline", &[]) else { return };
    let shop = Shop::on(&server.url()); // operation_timeout: 500 ms
    assert_eq!(shop.pay(1).unwrap(), 1);
    server.freeze();
    let started = Instant::now();
    let error = shop.pay(2).unwrap_err();
    let waited = started.elapsed();
    server.thaw();
    assert_eq!(error.code(), ErrorCode::StoreUnavailable, "{error}");
    assert!(error.to_string().contains("no answer within 500 ms"), "{error}");
    assert!(waited < Duration::from_secs(5), "answered after {waited:?}, past the 500 ms deadline");
    assert_eq!(shop.effects(2), 0, "the body must not run without a reservation");
    assert_eq!(shop.pay(2).unwrap_err().code(), ErrorCode::InProgress, "the frozen call's reservation landed");
    assert_eq!(shop.pay(3).unwrap(), 3);
    assert_eq!((shop.effects(2), shop.effects(3)), (0, 1));
}

/// A server that restarts (SIGTERM, then SIGKILL, each time started again): the next call
/// on each connection (the store's thread's, for sync calls, and a runtime's, for async
/// ones) connects again and runs, as the docs say, instead of answering STORE_UNAVAILABLE
/// "broken pipe"; nothing runs twice.
#[test]
fn after_a_restart_the_next_call_on_each_connection_connects_again() {
    let test = "after_a_restart_the_next_call_on_each_connection_connects_again";
    let Some(mut server) = Server::start(test, &["--appendonly", "yes", "--appendfsync", "always"]) else { return };
    let shop = Shop::on(&server.url());
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    assert_eq!(shop.pay(1).unwrap(), 1);
    assert_eq!(runtime.block_on(shop.pay_async(1)).unwrap(), 1);
    for (round, how) in [(2, "SIGTERM"), (3, "SIGKILL")] {
        match how {
            "SIGTERM" => server.stop(),
            _ => server.kill(),
        }
        server.restart();
        let sync = shop.pay(round);
        assert_eq!(sync.map_err(|e| e.to_string()), Ok(round), "the first sync call after a {how} and a start");
        let async_ = runtime.block_on(shop.pay_async(round));
        assert_eq!(async_.map_err(|e| e.to_string()), Ok(round), "the first async call after a {how} and a start");
        assert_eq!((shop.pay(1).unwrap(), runtime.block_on(shop.pay_async(1)).unwrap()), (1, 1), "replays");
    }
    assert_eq!(shop.most_effects(), 1, "nothing ran twice");
}

/// A completion the server does not answer (frozen while the body ran) answers within
/// `operation_timeout`, as the failure table says, not after one wait per attempt: the
/// caller gets the body's result. The completion it sent lands once the server answers
/// again, and the call then replays.
#[test]
fn a_completion_the_server_does_not_answer_returns_within_the_deadline() {
    let test = "a_completion_the_server_does_not_answer_returns_within_the_deadline";
    let Some(server) = Server::start(test, &[]) else { return };
    let timeout = Duration::from_secs(1);
    let shop = Shop::with(RedisStore::builder(&server.url()).operation_timeout(timeout).build().unwrap());
    assert_eq!(shop.pay_then(1, &|| {}).unwrap(), 1, "the scripts are loaded");
    let frozen_at = Mutex::new(None);
    let answer = shop.pay_then(2, &|| {
        server.freeze();
        *frozen_at.lock().unwrap() = Some(Instant::now());
    });
    let waited = frozen_at.lock().unwrap().expect("the body ran").elapsed();
    server.thaw();
    assert_eq!(answer.unwrap(), 2, "the caller gets the body's result");
    assert!(waited >= timeout, "the completion waited for the server: {waited:?}");
    assert!(
        waited < timeout * 2,
        "answered after {waited:?}: past operation_timeout ({timeout:?}), one wait per attempt"
    );
    let id = RecordId { namespace: "redis.pay_then", key: "pay:2" };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !matches!(
        block_on(shop.store.read(id)).unwrap().map(|record| record.state),
        Some(idem::store::RecordState::Completed { .. })
    ) {
        assert!(Instant::now() < deadline, "the completion sent to the frozen server never landed");
        std::thread::yield_now();
    }
    assert_eq!(shop.pay_then(2, &|| {}).unwrap(), 2, "a replay");
    assert_eq!(shop.effects(2), 1);
}

/// `wait_for_replicas`: a completion its replica did not acknowledge (frozen while the body
/// ran) is a failed completion, as the docs say: the caller gets the body's result and the
/// lifecycle event says `Unrecorded`, never `Fenced` ("the newer holder's record stands"),
/// since no one took the key over. The primary has it: the next call replays.
#[test]
fn a_completion_no_replica_acknowledged_is_unrecorded_not_fenced() {
    let test = "a_completion_no_replica_acknowledged_is_unrecorded_not_fenced";
    let Some(primary) = Server::start(test, &["--repl-diskless-sync-delay", "0"]) else { return };
    let port = primary.port().to_string();
    let Some(replica) = Server::start(test, &["--replicaof", "127.0.0.1", &port]) else { return };
    let deadline = Instant::now() + Duration::from_secs(30);
    // Until a write reaches the replica and is acknowledged: its first sync is over.
    while primary.commands(&[&["SET", "probe", "1"], &["WAIT", "1", "100"]])[1] != ":1" {
        assert!(Instant::now() < deadline, "the replica never caught up");
    }
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&events);
    let observer = idem::telemetry::add_observer(move |event: &idem::telemetry::LifecycleEvent<'_>| {
        // This test's call only: the other tests of this binary run at the same time.
        if event.namespace == "redis.pay_then" && event.key.as_str() == "pay:77" {
            seen.lock().unwrap().push(event.happened);
        }
    });
    // A wait long enough for a live replica on a busy machine; a frozen one never answers.
    let store = RedisStore::builder(&primary.url()).wait_for_replicas(1, Duration::from_secs(2)).build().unwrap();
    let shop = Shop::with(store);
    let answer = shop.pay_then(77, &|| replica.freeze());
    replica.thaw();
    let events = std::mem::take(&mut *events.lock().unwrap());
    idem::telemetry::remove_observer(observer);
    assert_eq!(answer.unwrap(), 77, "the caller gets the body's result");
    use idem::telemetry::Happened;
    assert!(events.contains(&Happened::Unrecorded), "a failed completion: {events:?}");
    assert!(!events.contains(&Happened::Fenced), "nothing fenced the completion: {events:?}");
    assert_eq!(shop.pay_then(77, &|| {}).unwrap(), 77, "a replay: the primary has the completion");
    assert_eq!(shop.effects(77), 1);
}

/// A server that is gone: STORE_UNAVAILABLE, and the body does not run.
#[test]
fn a_body_never_runs_without_a_reservation() {
    let Some(mut server) = Server::start("a_body_never_runs_without_a_reservation", &[]) else { return };
    let shop = Shop::on(&server.url());
    server.kill();
    for order in 0..3 {
        assert_eq!(shop.pay(order).unwrap_err().code(), ErrorCode::StoreUnavailable);
    }
    assert_eq!(shop.most_effects(), 0);
}

/// `wait_for_replicas(1, 300 ms)`: without a replica, a call answers STORE_UNAVAILABLE, its
/// body does not run and its key is let go; once a replica follows, calls run and the
/// replica holds their records.
#[test]
fn a_reservation_no_replica_acknowledged_runs_no_body() {
    let test = "a_reservation_no_replica_acknowledged_runs_no_body";
    // No delay before the full sync a new replica needs (Redis waits 5 s for more by default).
    let Some(primary) = Server::start(test, &["--repl-diskless-sync-delay", "0"]) else { return };
    // Without a replica, no wait is long enough: a short one tells it as well as a long one.
    let store = RedisStore::builder(&primary.url())
        .wait_for_replicas(1, Duration::from_millis(300))
        .operation_timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let shop = Shop::with(store);
    let error = shop.pay(1).unwrap_err();
    assert_eq!(error.code(), ErrorCode::StoreUnavailable, "{error}");
    assert!(error.to_string().contains("WAIT: 0 of 1 replicas"), "{error}");
    assert_eq!(shop.effects(1), 0);
    let id = RecordId { namespace: "redis.pay", key: "pay:1" };
    assert_eq!(block_on(shop.store.read(id)).unwrap(), None, "the reservation was released");

    let port = primary.port().to_string();
    let Some(replica) = Server::start(test, &["--replicaof", "127.0.0.1", &port]) else { return };
    let deadline = Instant::now() + Duration::from_secs(30);
    // Until a write reaches the replica and is acknowledged: its first sync is over.
    while primary.commands(&[&["SET", "probe", "1"], &["WAIT", "1", "100"]])[1] != ":1" {
        assert!(Instant::now() < deadline, "the replica never caught up");
    }
    // With one, the acknowledgement is a replica's turn to run: on a loaded machine (two
    // cores, the rest of the suite beside it) a replica took longer than 300 ms about one run
    // in seven. The wait a store is given bounds a slow replica, not a missing one: this
    // store gives it 10 s, on the same server and records.
    let patient = RedisStore::builder(&primary.url())
        .wait_for_replicas(1, Duration::from_secs(10))
        .operation_timeout(Duration::from_secs(15))
        .build()
        .unwrap();
    let shop = Shop { store: patient, ..shop };
    assert_eq!(shop.pay(1).unwrap(), 1);
    assert_eq!(shop.pay(1).unwrap(), 1, "a replay");
    assert_eq!(shop.effects(1), 1);
    assert_eq!(replica.command(&["HEXISTS", "idem:r:9:redis.pay:pay:1", "state"]), ":1");
}
