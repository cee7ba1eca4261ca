//! The Redis store on a Redis Cluster of each test's own (`.ci/redis-cluster`: three
//! primaries, each with one replica), through a real tool, while a primary fails under
//! load: killed with SIGKILL once its replica stopped receiving its writes (the replica
//! takes over once the others agree the primary failed), or handed over with `CLUSTER
//! FAILOVER`. With `wait_for_replicas(1, ..)` a body runs only once a replica has its
//! reservation, so the promoted replica knows every call whose body ran: meanwhile calls
//! answer STORE_UNAVAILABLE (never anything else but IN_PROGRESS or OUTCOME_UNKNOWN), no
//! order has a second effect, no completion the store recorded is lost, and once the
//! cluster is whole again the store finds the shard's new primary and calls succeed.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use idem::telemetry::{Happened, LifecycleEvent, ObserverId, add_observer, remove_observer};
use idem::{ErrorCode, RedisStore, idempotent};

use crate::support::redis_cluster::{Cluster, Nodes, cli, primary_with_replica, role};

/// The record namespace of [`Shop::pay`], as the keys on the nodes name it.
const PAY: &str = "redis_cluster.pay";

/// A tool on one store, the effects its body had, by order, and the orders whose
/// completion the store did not record (`Happened::Unrecorded`: it failed, or fewer
/// replicas than asked acknowledged it).
struct Shop {
    store: RedisStore,
    /// In every key, for this test's events alone: the tests of this binary run at once,
    /// and an observer sees every call of the process.
    test: &'static str,
    effects: Mutex<HashMap<u32, u32>>,
    unrecorded: Arc<Mutex<BTreeSet<u32>>>,
    observer: ObserverId,
}

impl Shop {
    /// A store that waits for one replica (at most 500 ms) after each reservation and
    /// completion, and gives every operation 1 s.
    fn on(url: &str, test: &'static str) -> Shop {
        let store = RedisStore::builder(url)
            .wait_for_replicas(1, Duration::from_millis(500))
            .operation_timeout(Duration::from_secs(1))
            .build()
            .unwrap();
        let unrecorded = Arc::new(Mutex::new(BTreeSet::new()));
        let seen = Arc::clone(&unrecorded);
        let ours = format!("pay:{test}:");
        let observer = add_observer(move |event: &LifecycleEvent<'_>| {
            let order = event.key.as_str().strip_prefix(ours.as_str()).and_then(|order| order.parse().ok());
            if let (PAY, Some(order), Happened::Unrecorded) = (event.namespace, order, event.happened) {
                seen.lock().unwrap().insert(order);
            }
        });
        Shop { store, test, effects: Mutex::default(), unrecorded, observer }
    }

    fn pay(&self, order: u32) -> Result<u32, idem::Error> {
        self.pay_in(self.test, order)
    }

    #[idempotent(key = "pay:<test>:<order>", namespace = "redis_cluster.pay", lease = "1h", store = self.store)]
    fn pay_in(&self, test: &str, order: u32) -> Result<u32, idem::Error> {
        *self.effects.lock().unwrap().entry(order).or_default() += 1;
        Ok(order)
    }

    fn effects(&self, order: u32) -> u32 {
        self.effects.lock().unwrap().get(&order).copied().unwrap_or(0)
    }

    /// The orders whose body ran more than once, with how many times.
    fn doubles(&self) -> BTreeMap<u32, u32> {
        self.effects.lock().unwrap().iter().filter(|(_, n)| **n > 1).map(|(order, n)| (*order, *n)).collect()
    }
}

impl Drop for Shop {
    fn drop(&mut self) {
        remove_observer(self.observer);
    }
}

/// What the calls answered.
#[derive(Default)]
struct Answers {
    ok: AtomicUsize,
    unavailable: AtomicUsize,
    in_progress: AtomicUsize,
    unknown: AtomicUsize,
    /// STORE_UNAVAILABLE's reasons (see [`reason`]), with how many.
    reasons: Mutex<BTreeMap<String, usize>>,
    /// Any other answer: what the test fails on.
    anomalies: Mutex<Vec<String>>,
}

impl Answers {
    fn count(&self, order: u32, answer: Result<u32, idem::Error>) {
        match answer {
            Ok(n) if n == order => self.ok.fetch_add(1, Ordering::SeqCst),
            Ok(n) => {
                self.anomalies.lock().unwrap().push(format!("order {order}: answered {n}"));
                0
            }
            Err(e) => match e.code() {
                ErrorCode::StoreUnavailable => {
                    *self.reasons.lock().unwrap().entry(reason(&e)).or_default() += 1;
                    self.unavailable.fetch_add(1, Ordering::SeqCst)
                }
                ErrorCode::InProgress => self.in_progress.fetch_add(1, Ordering::SeqCst),
                ErrorCode::OutcomeUnknown => self.unknown.fetch_add(1, Ordering::SeqCst),
                code => {
                    self.anomalies.lock().unwrap().push(format!("order {order}: {code:?}: {e}"));
                    0
                }
            },
        };
    }

    fn calls(&self) -> usize {
        [&self.ok, &self.unavailable, &self.in_progress, &self.unknown].iter().map(|n| n.load(Ordering::SeqCst)).sum()
    }

    fn summary(&self) -> String {
        format!(
            "{} Ok, {} STORE_UNAVAILABLE {:?}, {} IN_PROGRESS, {} OUTCOME_UNKNOWN",
            self.ok.load(Ordering::SeqCst),
            self.unavailable.load(Ordering::SeqCst),
            self.reasons.lock().unwrap(),
            self.in_progress.load(Ordering::SeqCst),
            self.unknown.load(Ordering::SeqCst),
        )
    }
}

/// A STORE_UNAVAILABLE's reason, without the store's name and numbers: `reserve: ClusterDown:
/// The cluster is down`, `reserve: WAIT: N of N replicas acknowledged ...`.
fn reason(error: &idem::Error) -> String {
    let text = error.to_string();
    let reason = text.split_once("(prefix idem): ").map_or(text.as_str(), |(_, reason)| reason);
    let reason = reason.split_once("); the action").map_or(reason, |(reason, _)| reason);
    let mut words = String::new();
    for c in reason.chars() {
        match c.is_ascii_digit() {
            true if words.ends_with('N') => {}
            true => words.push('N'),
            false => words.push(c),
        }
    }
    words
}

/// Four threads call fresh orders, each until it is answered (a STORE_UNAVAILABLE is
/// retried: the body did not run, a retry is what idem makes safe), while `fault` runs
/// (once they made 200 calls): fresh orders keep reservations and completions coming, which
/// a failover could lose (replays write nothing). After it, each thread calls 25 more, and
/// then every order called is called once more, a STORE_UNAVAILABLE retried for 20 s.
/// Returns the threads' answers and the last pass's, by order.
fn under_load(shop: &Shop, fault: impl FnOnce(&Answers)) -> (Answers, BTreeMap<u32, Result<u32, ErrorCode>>) {
    let answers = Answers::default();
    let next = AtomicU32::new(0);
    let (whole, failed) = (OnceLock::<Instant>::new(), AtomicBool::new(false));
    std::thread::scope(|scope| {
        for _ in 0..4 {
            let (answers, next, whole, failed) = (&answers, &next, &whole, &failed);
            scope.spawn(move || {
                let mut after_fault = 0;
                while !failed.load(Ordering::SeqCst) && after_fault <= 25 {
                    after_fault += usize::from(whole.get().is_some());
                    let order = next.fetch_add(1, Ordering::SeqCst);
                    loop {
                        let answer = shop.pay(order);
                        let unavailable = answer.as_ref().err().filter(|e| e.code() == ErrorCode::StoreUnavailable);
                        if let (Some(e), Some(at)) = (unavailable, whole.get())
                            && at.elapsed() > Duration::from_secs(20)
                        {
                            answers.anomalies.lock().unwrap().push(format!(
                                "order {order} still answers STORE_UNAVAILABLE 20 s after the cluster was whole again \
                                 (the store does not find the shard's primary?): {e}"
                            ));
                            return;
                        }
                        let retry = unavailable.is_some() && !failed.load(Ordering::SeqCst);
                        answers.count(order, answer);
                        if !retry {
                            break;
                        }
                    }
                }
            });
        }
        // A failed assertion stops the threads at once, or the scope waits for them.
        struct Failed<'a>(&'a AtomicBool);
        impl Drop for Failed<'_> {
            fn drop(&mut self) {
                self.0.store(std::thread::panicking(), Ordering::SeqCst);
            }
        }
        let _failed = Failed(&failed);
        let deadline = Instant::now() + Duration::from_secs(30);
        while answers.calls() < 200 {
            assert!(Instant::now() < deadline, "no load: {} calls in 30 s ({})", answers.calls(), answers.summary());
            std::thread::sleep(Duration::from_millis(5));
        }
        fault(&answers);
        whole.set(Instant::now()).unwrap();
    });
    let mut last = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    for order in 0..next.load(Ordering::SeqCst) {
        let answer = loop {
            match shop.pay(order) {
                Err(e) if e.code() == ErrorCode::StoreUnavailable => {
                    assert!(
                        Instant::now() < deadline,
                        "order {order} still answers STORE_UNAVAILABLE 20 s after the cluster was whole again \
                         (the store does not find the shard's primary?): {e}"
                    );
                    std::thread::sleep(Duration::from_millis(20));
                }
                answer => break answer.map_err(|e| e.code()),
            }
        };
        last.insert(order, answer);
    }
    (answers, last)
}

/// Asserts what both tests promise: no answer but Ok, STORE_UNAVAILABLE, IN_PROGRESS and
/// OUTCOME_UNKNOWN; no second effect; in the last pass (after the failover), Ok or
/// IN_PROGRESS/OUTCOME_UNKNOWN (`under_load` retried STORE_UNAVAILABLE), Ok only for an
/// order whose body ran (once), and Ok for every order whose body ran and whose completion
/// the store recorded (a replica acknowledged it): the new primary lost none. IN_PROGRESS
/// is left to a call whose completion failed, or whose reservation landed without an answer
/// (its body did not run). Most orders on the shards that moved (`moved`, those the new
/// primary holds) answer Ok: the store found their new primary.
fn assert_promises(
    shop: &Shop,
    answers: &Answers,
    last: &BTreeMap<u32, Result<u32, ErrorCode>>,
    moved: &BTreeSet<u32>,
) {
    let anomalies = answers.anomalies.lock().unwrap();
    assert!(
        anomalies.is_empty(),
        "answers that are none of Ok, STORE_UNAVAILABLE, IN_PROGRESS, OUTCOME_UNKNOWN: {anomalies:?}"
    );
    assert_eq!(shop.doubles(), BTreeMap::new(), "orders whose body ran more than once (order: runs)");
    let unrecorded = shop.unrecorded.lock().unwrap().clone();
    for (&order, &answer) in last {
        let ran = shop.effects(order);
        match answer {
            Ok(n) => {
                assert_eq!(n, order);
                assert_eq!(ran, 1, "order {order} answered Ok: its body ran, once");
            }
            Err(code @ (ErrorCode::InProgress | ErrorCode::OutcomeUnknown)) => assert!(
                ran == 0 || unrecorded.contains(&order),
                "order {order}'s body ran and the store recorded its completion, yet after the failover it \
                 answers {code:?}: the completion was lost (unrecorded: {unrecorded:?})"
            ),
            Err(code) => panic!("order {order}'s last call answered {code:?}"),
        }
    }
    assert!(!moved.is_empty(), "the new primary holds none of the orders");
    let moved_ok = moved.iter().filter(|order| last[order].is_ok()).count();
    assert!(
        moved_ok * 2 > moved.len(),
        "after the failover, {moved_ok} of the {} orders on the moved shards answered Ok: {:?}",
        moved.len(),
        moved.iter().map(|order| (order, last[order])).collect::<Vec<_>>()
    );
}

/// What a failover test saw, on stderr: for a failure's context and a run's figures.
fn report(
    test: &str,
    timeline: &[String],
    (shop, answers, last): (&Shop, &Answers, &BTreeMap<u32, Result<u32, ErrorCode>>),
    moved: usize,
    began: Instant,
) {
    eprintln!(
        "{test}: {}; threads: {}; last pass: {:?}; completions unrecorded: {:?}; {moved} orders on the moved shards; \
         {:?} in all",
        timeline.join("; "),
        answers.summary(),
        tally(last),
        shop.unrecorded.lock().unwrap(),
        began.elapsed()
    );
}

/// The last pass's answers: how many of each.
fn tally(last: &BTreeMap<u32, Result<u32, ErrorCode>>) -> BTreeMap<String, usize> {
    let mut tally = BTreeMap::new();
    for answer in last.values() {
        let name = match answer {
            Ok(_) => "Ok".to_owned(),
            Err(code) => format!("{code:?}"),
        };
        *tally.entry(name).or_default() += 1;
    }
    tally
}

/// The orders whose records are on the node on `port`.
fn orders_on(port: u16) -> BTreeSet<u32> {
    let keys = cli(port, &["KEYS", &format!("idem:*:r:{}:{PAY}:pay:*", PAY.len())]).unwrap();
    keys.lines().map(|key| key.rsplit_once(':').unwrap().1.parse().unwrap()).collect()
}

/// SIGKILL on a primary while four threads call, at the worst moment for asynchronous
/// replication: its replica is frozen (SIGSTOP) and its link cut (`CLIENT KILL TYPE
/// replica`), so that what the primary writes from then on never reaches it, and the
/// primary is killed once calls went on for a while. The other primaries declare it failed
/// (cluster-node-timeout 2 s), the replica (thawed) takes over, and the killed node,
/// started again, follows it. Meanwhile calls answer STORE_UNAVAILABLE (`WAIT` falls
/// short; the dead node refuses connections; the cluster is down), nothing else but
/// IN_PROGRESS or OUTCOME_UNKNOWN; no order's body runs twice, and no completion the store
/// recorded is lost; after it, the store finds the new primary and calls succeed. Without
/// `wait_for_replicas`, the bodies of the calls after the cut would run on reservations the
/// new primary never had, and run again after the failover.
#[test]
fn a_killed_primarys_replica_takes_over_calls_answer_store_unavailable_meanwhile_and_none_runs_twice() {
    let test = "a_killed_primarys_replica_takes_over_calls_answer_store_unavailable_meanwhile_and_none_runs_twice";
    let began = Instant::now();
    let Some(cluster) = Cluster::start(test, &[]) else { return };
    let mut timeline = vec![format!("cluster up after {:?}", began.elapsed())];
    let nodes = Nodes::of(&cluster);
    let victim = nodes.ports[0];
    let replica = nodes.replica_of(victim);
    let witness = nodes.other_than(&[victim, replica]);
    let shop = Shop::on(cluster.url(), test);
    let mut unavailable = 0;
    let (answers, last) = under_load(&shop, |answers| {
        let started = Instant::now();
        let before = answers.calls();
        let settings = nodes.settings(victim);
        nodes.signal(replica, "-STOP");
        // Thawed however this ends: `.ci/redis-cluster stop` cannot stop a frozen node.
        struct Thaw<'a>(&'a Nodes, u16);
        impl Drop for Thaw<'_> {
            fn drop(&mut self) {
                self.0.signal(self.1, "-CONT");
            }
        }
        let thaw = Thaw(&nodes, replica);
        assert_eq!(cli(victim, &["CLIENT", "KILL", "TYPE", "replica"]).as_deref(), Some("1"), "cut {replica}'s link");
        let cut = answers.calls();
        let deadline = Instant::now() + Duration::from_secs(10);
        while answers.calls() < cut + 8 {
            assert!(Instant::now() < deadline, "no calls answered in 10 s once the replica's link was cut");
            std::thread::sleep(Duration::from_millis(1));
        }
        let unavailable_before = answers.unavailable.load(Ordering::SeqCst);
        nodes.kill(victim);
        drop(thaw);
        let (window, at_kill) = (started.elapsed(), answers.calls());
        nodes.wait_for(&format!("{replica} to take over from the killed {victim}"), Duration::from_secs(30), || {
            role(replica).is_some_and(|role| role[0] == "master")
                && cli(witness, &["CLUSTER", "INFO"]).is_some_and(|info| info.contains("cluster_state:ok"))
        });
        timeline.push(format!(
            "{before} calls before the cut; {} after it (over {window:?}) until the kill; failover after {:?}",
            at_kill - before,
            started.elapsed()
        ));
        // Without a replica, the new primary's `WAIT 1` falls short: its reservations answer
        // STORE_UNAVAILABLE until the killed node follows it. Its full sync need not wait for
        // other replicas to join (5 s by default).
        cli(replica, &["CONFIG", "SET", "repl-diskless-sync-delay", "0"]).unwrap();
        nodes.restart(victim, &settings);
        nodes.wait_for(&format!("the restarted {victim} to follow {replica}"), Duration::from_secs(30), || {
            primary_with_replica(replica)
        });
        unavailable = answers.unavailable.load(Ordering::SeqCst) - unavailable_before;
        timeline.push(format!(
            "{} calls by the time it had a replica again, after {:?}",
            answers.calls(),
            started.elapsed()
        ));
    });
    let moved = orders_on(replica);
    report(test, &timeline, (&shop, &answers, &last), moved.len(), began);
    assert!(unavailable > 0, "the kill must land under load: no STORE_UNAVAILABLE from the kill on");
    assert_promises(&shop, &answers, &last, &moved);
    assert_eq!(role(victim).unwrap()[0], "slave", "the killed node came back as a replica");
}

/// `CLUSTER FAILOVER` on a replica while four threads call: the primary holds writes back
/// until its replica has them all, then the two swap roles. The calls the old primary
/// held are told `MOVED` (they did not run there) and the store follows it; nothing is
/// lost and nothing runs twice.
#[test]
fn a_manual_failover_loses_nothing() {
    let test = "a_manual_failover_loses_nothing";
    let began = Instant::now();
    let Some(cluster) = Cluster::start(test, &[]) else { return };
    let mut timeline = vec![format!("cluster up after {:?}", began.elapsed())];
    let nodes = Nodes::of(&cluster);
    let primary = nodes.ports[1];
    let replica = nodes.replica_of(primary);
    let shop = Shop::on(cluster.url(), test);
    let (answers, last) = under_load(&shop, |answers| {
        let started = Instant::now();
        let before = answers.calls();
        assert_eq!(cli(replica, &["CLUSTER", "FAILOVER"]).as_deref(), Some("OK"), "CLUSTER FAILOVER on {replica}");
        nodes.wait_for(&format!("{replica} and {primary} to swap roles"), Duration::from_secs(30), || {
            role(replica).is_some_and(|role| role[0] == "master")
                && role(primary).is_some_and(|role| role[0] == "slave")
                && primary_with_replica(replica)
        });
        timeline.push(format!("{} calls before the failover; roles swapped after {:?}", before, started.elapsed()));
    });
    let moved = orders_on(replica);
    report(test, &timeline, (&shop, &answers, &last), moved.len(), began);
    assert_promises(&shop, &answers, &last, &moved);
}
