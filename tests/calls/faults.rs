//! Crash and error policy through real tools: abandoned calls stay reserved until their
//! lease ends and are then reconciled, never re-run blindly; a late finisher is fenced;
//! a timeout answers in time while the work completes its key; kept errors replay;
//! records live as long as their retention.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Barrier, LazyLock, Mutex};
use std::time::{Duration, Instant};

use idem::store::Store;
use idem::store::block_on;
use idem::telemetry::Outcome;
use idem::{Abandoned, ErrorCode, MemoryStore, Reconciled, Status, idempotent};

/// Ends the lease of the reservation on `key` now, as the store's clock would once the
/// lease ran out. Leases here are long, so that no assertion depends on how fast the
/// machine is; lease expiry by the clock itself is checked by the store conformance suite.
fn end_lease(store: &MemoryStore, namespace: &str, key: &str) {
    let id = idem::store::RecordId { namespace, key };
    let record = block_on(store.read(id)).unwrap().expect("a reservation to end");
    block_on(store.abandon(id, record.token)).unwrap();
}

/// Waits until `done` holds, checking every millisecond, for work that finishes on
/// another thread. Fails the test after a generous deadline instead of hanging.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A stand-in provider: what it has done, by idempotency key.
#[derive(Default)]
struct Provider {
    sent: Mutex<HashMap<String, u32>>,
}

impl Provider {
    fn send(&self, key: &str, amount: u32) -> u32 {
        *self.sent.lock().unwrap().entry(key.to_owned()).or_insert(amount)
    }
    fn lookup(&self, key: &str) -> Reconciled<u32> {
        match self.sent.lock().unwrap().get(key) {
            Some(amount) => Reconciled::Done(*amount),
            None => Reconciled::NotDone,
        }
    }
    fn effects(&self) -> usize {
        self.sent.lock().unwrap().len()
    }
}

mod panics {
    use super::*;

    static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);
    static PROVIDER: LazyLock<Provider> = LazyLock::new(Provider::default);
    static CRASH_AFTER_SENDING: AtomicUsize = AtomicUsize::new(1);

    /// Sends, then (the first time) crashes before its completion is recorded.
    #[idempotent(key = "pay:<order>", namespace = "faults.pay", lease = "1h", store = *STORE,
        reconcile = |a: Abandoned| PROVIDER.lookup(a.key()))]
    fn pay(order: u32) -> Result<u32, idem::Error> {
        let sent = PROVIDER.send(&idem::current_key().unwrap(), 10);
        if CRASH_AFTER_SENDING.fetch_sub(1, Ordering::SeqCst) == 1 {
            panic!("crashed after the provider acted");
        }
        Ok(sent)
    }

    /// Without a hook, the abandoned key is OUTCOME_UNKNOWN: never re-run.
    #[idempotent(key = "ship:<order>", namespace = "faults.ship", lease = "1h", store = *STORE)]
    fn ship(order: u32) -> Result<u32, idem::Error> {
        panic!("the warehouse call crashed")
    }

    #[test]
    fn a_panic_is_in_progress_then_unknown_then_reconciled() {
        assert!(std::panic::catch_unwind(|| pay(1)).is_err());
        assert!(matches!(pay_status(1).unwrap(), Status::InProgress { .. }));
        assert_eq!(pay(1).unwrap_err().code(), ErrorCode::InProgress, "the lease holds: never re-run");
        end_lease(&STORE, "faults.pay", "pay:1");
        assert!(matches!(pay_status(1).unwrap(), Status::Unknown { .. }));
        let (answer, calls) = idem::telemetry::observe(|| pay(1));
        assert_eq!(answer.unwrap(), 10, "the hook found the payment and its result is replayed");
        assert_eq!(calls[0].outcome, Outcome::Reconciled);
        assert!(matches!(pay_status(1).unwrap(), Status::Completed(10)));
        assert_eq!(pay(1).unwrap(), 10);
        assert_eq!(PROVIDER.effects(), 1);
    }

    #[test]
    fn without_a_hook_an_abandoned_call_is_unknown() {
        assert!(std::panic::catch_unwind(|| ship(1)).is_err());
        end_lease(&STORE, "faults.ship", "ship:1");
        assert!(matches!(ship_status(1).unwrap(), Status::Unknown { .. }));
        let error = ship(1).unwrap_err();
        assert_eq!(error.code(), ErrorCode::OutcomeUnknown);
        assert!(!error.retryable());
        assert!(error.suggestion().unwrap().contains("ship_status"));
    }
}

mod cancellation {
    use super::*;

    static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);
    static PROVIDER: LazyLock<Provider> = LazyLock::new(Provider::default);
    static RUNS: AtomicUsize = AtomicUsize::new(0);

    /// The first run's answer never comes in time; the provider has acted by then.
    #[idempotent(key = "mail:<to>", namespace = "faults.mail", lease = "1h", store = *STORE,
        reconcile = |a: Abandoned| async move { PROVIDER.lookup(a.key()) })]
    async fn mail(to: String) -> Result<u32, idem::Error> {
        let sent = PROVIDER.send(&idem::current_key().unwrap(), 1);
        if RUNS.fetch_add(1, Ordering::SeqCst) == 0 {
            std::future::pending::<()>().await;
        }
        Ok(sent)
    }

    #[tokio::test]
    async fn a_dropped_future_is_in_progress_then_reconciled() {
        assert!(tokio::time::timeout(Duration::from_millis(10), mail("ann".into())).await.is_err());
        assert!(matches!(mail_status("ann".into()).await.unwrap(), Status::InProgress { .. }));
        assert_eq!(mail("ann".into()).await.unwrap_err().code(), ErrorCode::InProgress);
        end_lease(&STORE, "faults.mail", "mail:ann");
        assert!(matches!(mail_status("ann".into()).await.unwrap(), Status::Unknown { .. }));
        assert_eq!(mail("ann".into()).await.unwrap(), 1);
        assert_eq!(RUNS.load(Ordering::SeqCst), 1, "reconciled, not re-run");
        assert_eq!(PROVIDER.effects(), 1);
    }
}

mod fencing {
    use super::*;
    use crate::support::Gate;

    static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);
    static GATE: LazyLock<Gate> = LazyLock::new(Gate::closed);
    static CALLS: AtomicUsize = AtomicUsize::new(0);

    /// Call A waits at the gate past its lease; call B finds it abandoned, is told by the
    /// hook that nothing happened, and runs. Then A finishes late.
    #[idempotent(key = "book:<room>", namespace = "faults.book", lease = "1h", store = *STORE,
        reconcile = |_| Reconciled::NotDone)]
    fn book(room: u32) -> Result<String, idem::Error> {
        let call = CALLS.fetch_add(1, Ordering::SeqCst);
        if call == 0 {
            GATE.wait("a");
        }
        Ok(if call == 0 { "A".into() } else { "B".into() })
    }

    #[test]
    fn a_late_finisher_cannot_overwrite_the_new_holder() {
        let a = std::thread::spawn(|| idem::telemetry::observe(|| book(7)));
        // A's body has counted itself: the key is A's, and A is the call held at the gate.
        // (The key alone shows InProgress before the body runs, and B could count first.)
        wait_until("A is in its body", || CALLS.load(Ordering::SeqCst) == 1);
        assert!(matches!(book_status(7), Ok(Status::InProgress { .. })));
        end_lease(&STORE, "faults.book", "book:7"); // A is still running, past its lease
        let (b, b_calls) = idem::telemetry::observe(|| book(7));
        assert_eq!(b.unwrap(), "B");
        assert_eq!(b_calls[0].outcome, Outcome::Fresh);
        GATE.open("a");
        let (a, a_calls) = a.join().unwrap();
        assert_eq!(a.unwrap(), "A", "A's own caller still gets what its body returned");
        assert_eq!(a_calls[0].outcome, Outcome::Fenced, "A is told its completion was refused");
        assert_eq!(book_status(7).unwrap(), Status::Completed("B".to_owned()), "B's result stands");
        assert_eq!(book(7).unwrap(), "B");
    }
}

mod single_reconciler {
    use super::*;

    static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);
    static HOOK_CALLS: AtomicUsize = AtomicUsize::new(0);
    static STARTED: LazyLock<Barrier> = LazyLock::new(|| Barrier::new(2));
    static ANSWERED: LazyLock<Barrier> = LazyLock::new(|| Barrier::new(2));

    fn lookup(_: Abandoned) -> Reconciled<u32> {
        HOOK_CALLS.fetch_add(1, Ordering::SeqCst);
        STARTED.wait(); // the reconciler holds the key...
        ANSWERED.wait(); // ...until the other callers have been answered
        Reconciled::Done(5)
    }

    #[idempotent(key = "refund:<order>", namespace = "faults.refund", lease = "1h", store = *STORE, reconcile = lookup)]
    fn refund(order: u32) -> Result<u32, idem::Error> {
        panic!("crashed")
    }

    #[test]
    fn only_one_caller_reconciles_a_key() {
        assert!(std::panic::catch_unwind(|| refund(1)).is_err());
        end_lease(&STORE, "faults.refund", "refund:1");
        let reconciler = std::thread::spawn(|| refund(1));
        STARTED.wait();
        let others: Vec<_> = (0..4).map(|_| std::thread::spawn(|| refund(1).unwrap_err().code())).collect();
        let others: Vec<_> = others.into_iter().map(|t| t.join().unwrap()).collect();
        ANSWERED.wait();
        assert_eq!(reconciler.join().unwrap().unwrap(), 5);
        assert_eq!(others, [ErrorCode::InProgress; 4], "the others see the reconciler's fresh lease");
        assert_eq!(HOOK_CALLS.load(Ordering::SeqCst), 1);
        assert_eq!(refund(1).unwrap(), 5);
    }
}

mod timeouts {
    use super::*;

    static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);
    static PROVIDER: LazyLock<Provider> = LazyLock::new(Provider::default);
    static RELEASE: LazyLock<tokio::sync::Notify> = LazyLock::new(tokio::sync::Notify::new);

    /// Slower than its caller's patience: it waits until the test lets it finish.
    #[idempotent(key = "invoice:<customer>", timeout = "50ms", store = *STORE)]
    async fn send_invoice(customer: String) -> Result<u32, idem::Error> {
        RELEASE.notified().await;
        Ok(PROVIDER.send(&idem::current_key().unwrap(), 120))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_caller_gets_timeout_and_the_work_completes_the_key() {
        let (answer, calls) = idem::telemetry::observe_async(send_invoice("acme".into())).await;
        let error = answer.unwrap_err();
        assert_eq!(error.code(), ErrorCode::Timeout);
        assert!(!error.retryable(), "the work goes on: a retry cannot help");
        assert!(error.suggestion().unwrap().contains("send_invoice_status"));
        assert_eq!(calls[0].outcome, Outcome::TimedOut);
        assert_eq!(send_invoice("acme".into()).await.unwrap_err().code(), ErrorCode::InProgress);
        RELEASE.notify_one();
        let deadline = Instant::now() + Duration::from_secs(20);
        while !matches!(send_invoice_status("acme".into()).await, Ok(Status::Completed(_))) {
            assert!(Instant::now() < deadline, "the work never completed its key");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(send_invoice_status("acme".into()).await.unwrap(), Status::Completed(120));
        assert_eq!(send_invoice("acme".into()).await.unwrap(), 120, "a retry gets the same result");
        assert_eq!(PROVIDER.effects(), 1);
    }
}

mod kept_errors {
    use super::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    enum PayError {
        Declined(String),
        Idem(String),
    }

    impl From<idem::Error> for PayError {
        fn from(error: idem::Error) -> Self {
            PayError::Idem(error.code().to_string())
        }
    }

    static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);
    static RUNS: AtomicUsize = AtomicUsize::new(0);

    /// The card network answered "declined" after the charge attempt: final, not retried.
    #[idempotent(key = "charge:<order>", on_error = keep, store = *STORE)]
    fn charge(order: u32) -> Result<u32, PayError> {
        RUNS.fetch_add(1, Ordering::SeqCst);
        Err(PayError::Declined("insufficient funds".into()))
    }

    #[test]
    fn a_kept_error_is_replayed_not_retried() {
        assert_eq!(charge(1), Err(PayError::Declined("insufficient funds".into())));
        let (again, calls) = idem::telemetry::observe(|| charge(1));
        assert_eq!(again, Err(PayError::Declined("insufficient funds".into())));
        assert_eq!(calls[0].outcome, Outcome::Replayed);
        assert_eq!(RUNS.load(Ordering::SeqCst), 1);
        assert_eq!(charge_status(1).unwrap(), Status::Failed(serde_json::json!({"Declined": "insufficient funds"})));
    }
}

mod retention {
    use super::*;

    static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);
    static RUNS: AtomicUsize = AtomicUsize::new(0);

    #[idempotent(key = "digest:<day>", retain = "1ms", store = *STORE)]
    fn send_digest(day: u32) -> Result<usize, idem::Error> {
        Ok(RUNS.fetch_add(1, Ordering::SeqCst))
    }

    #[idempotent(key = "digest-running:<day>", store = *STORE)]
    fn stuck(day: u32) -> Result<(), idem::Error> {
        panic!("crashed")
    }

    /// Past its retention a record is purged and the same action runs again: keep records
    /// at least as long as any layer may retry.
    #[test]
    fn purge_removes_settled_records_past_retention_never_in_progress_ones() {
        assert!(std::panic::catch_unwind(|| stuck(1)).is_err());
        assert_eq!(send_digest(1).unwrap(), 0);
        let mut purged = 0;
        wait_until("the record is purged", || {
            purged += block_on(STORE.purge(100)).unwrap();
            purged > 0
        });
        assert_eq!(purged, 1, "only the settled record past its retention");
        assert_eq!(send_digest_status(1).unwrap(), Status::NotFound);
        assert!(matches!(stuck_status(1).unwrap(), Status::InProgress { .. }), "in progress: never purged");
        assert_eq!(send_digest(1).unwrap(), 1, "a retry after retention runs the action again");
    }
}

mod counters {
    use super::*;

    static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);

    #[idempotent(key = "counted:<id>", compare = [note], store = *STORE)]
    fn counted(id: u32, note: u32) -> Result<u32, idem::Error> {
        Ok(id)
    }

    #[test]
    fn every_call_is_counted_per_tool_and_outcome() {
        counted(1, 0).unwrap();
        counted(1, 0).unwrap();
        counted(1, 0).unwrap();
        counted(1, 9).unwrap_err();
        let all = idem::telemetry::metrics();
        let mine = all.iter().find(|m| m.tool == "counted").expect("the tool is registered on its first call");
        assert_eq!(mine.count(Outcome::Fresh), 1);
        assert_eq!(mine.count(Outcome::Replayed), 2);
        assert_eq!(mine.count(Outcome::Conflict), 1);
        assert_eq!(mine.total(), 4);
        assert!(mine.namespace.ends_with("::counted"));
    }
}
