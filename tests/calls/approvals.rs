//! Approvals bound to the business action (`approval`), counted: requests made, the
//! hook's calls and the body's runs, through real tools on real stores.

use crate::support::postgres;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, LazyLock, Mutex};
use std::time::Duration;

use idem::approval::{self, DecideError, State};
use idem::store::{RecordId, Store};
use idem::{ErrorCode, MemoryStore, SqliteStore, Status, idempotent};

/// Payments made: (supplier, invoice, amount).
static PAID: LazyLock<Mutex<Vec<(String, String, u64)>>> = LazyLock::new(Mutex::default);
/// Requests the hook was told of.
static ASKED: LazyLock<Mutex<Vec<approval::Request>>> = LazyLock::new(Mutex::default);

fn notify(request: &approval::Request) {
    ASKED.lock().unwrap().push(request.clone());
}

fn paid(supplier: &str) -> usize {
    PAID.lock().unwrap().iter().filter(|(s, ..)| s == supplier).count()
}

fn asked(supplier: &str) -> usize {
    ASKED.lock().unwrap().iter().filter(|request| request.key.contains(&format!(":{supplier}:"))).count()
}

struct Payments<S> {
    store: S,
}

impl<S: idem::store::Store> Payments<S> {
    /// Pay a supplier's invoice. Needs a person's approval above 1,000 EUR.
    #[idempotent(
        key = "payment:<supplier>:<invoice>",
        compare = [amount, iban],
        approval(
            when = amount > 1000.0,
            text = "Pay <supplier> <amount> EUR for <invoice> to <iban>",
            notify = notify
        ),
        namespace = "tests::pay_invoice",
        store = self.store
    )]
    fn pay_invoice(&self, supplier: String, invoice: String, amount: f64, iban: String) -> Result<u64, idem::Error> {
        let cents = (amount * 100.0) as u64;
        PAID.lock().unwrap().push((supplier, invoice, cents));
        Ok(cents)
    }
}

fn pay<S: idem::store::Store>(p: &Payments<S>, supplier: &str, amount: f64) -> Result<u64, idem::Error> {
    p.pay_invoice(supplier.into(), "inv-7".into(), amount, "DE02".into())
}

fn id(supplier: &str) -> String {
    format!("payment:{supplier}:inv-7")
}

fn code(result: Result<u64, idem::Error>) -> ErrorCode {
    result.expect_err("an idem answer").code()
}

/// Runs a future on a store whose futures are ready at once (memory, SQLite) or that
/// drives itself (PostgreSQL): the approval API is async.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(future)
}

fn decide<S: Store>(store: &S, supplier: &str, approve: bool) -> Result<approval::Request, DecideError> {
    let key = id(supplier);
    let id = RecordId { namespace: "tests::pay_invoice", key: &key };
    block_on(async {
        if approve {
            approval::approve(store, id, "alice", Some("checked the invoice")).await
        } else {
            approval::decline(store, id, "bob", Some("wrong IBAN")).await
        }
    })
}

#[test]
fn retries_while_pending_make_one_request_and_no_run() {
    let p = Payments { store: MemoryStore::new() };
    for _ in 0..10 {
        let answer = pay(&p, "acme", 1200.0).unwrap_err();
        assert_eq!(answer.code(), ErrorCode::ApprovalRequired);
        assert!(!answer.retryable());
        let details = answer.approval().expect("the approval it is about");
        assert_eq!(details.text, "Pay acme 1200 EUR for inv-7 to DE02");
        assert_eq!((details.namespace.as_str(), details.key.as_str()), ("tests::pay_invoice", "payment:acme:inv-7"));
        assert!(answer.suggestion().unwrap().contains("pay_invoice_status"), "{answer}");
    }
    assert_eq!((asked("acme"), paid("acme")), (1, 0), "one request, no run");
    match p.pay_invoice_status("acme".into(), "inv-7".into()).unwrap() {
        Status::AwaitingApproval { text, .. } => assert_eq!(text, "Pay acme 1200 EUR for inv-7 to DE02"),
        other => panic!("{other:?}"),
    }
    // Below the threshold, an action of its own runs at once.
    assert_eq!(p.pay_invoice("acme".into(), "inv-8".into(), 500.0, "DE02".into()).unwrap(), 50_000);
}

#[test]
fn concurrent_first_calls_make_one_request_and_the_hook_hears_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idem.db");
    const CALLERS: usize = 16;
    let barrier = Barrier::new(CALLERS);
    let codes: Vec<ErrorCode> = std::thread::scope(|scope| {
        let callers: Vec<_> = (0..CALLERS)
            .map(|_| {
                let (path, barrier) = (&path, &barrier);
                scope.spawn(move || {
                    let p = Payments { store: SqliteStore::open(path).unwrap() };
                    barrier.wait();
                    code(pay(&p, "barrier", 5000.0))
                })
            })
            .collect();
        callers.into_iter().map(|caller| caller.join().unwrap()).collect()
    });
    assert!(codes.iter().all(|code| *code == ErrorCode::ApprovalRequired), "{codes:?}");
    assert_eq!(asked("barrier"), 1, "one request, one notification");
    assert_eq!(paid("barrier"), 0);
}

#[test]
fn after_approval_racing_callers_run_it_once_then_replay() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idem.db");
    assert_eq!(
        code(pay(&Payments { store: SqliteStore::open(&path).unwrap() }, "approved", 2000.0)),
        ErrorCode::ApprovalRequired
    );
    // A restart between request and decision: a new store on the same file.
    let store = SqliteStore::open(&path).unwrap();
    let approved = decide(&store, "approved", true).unwrap();
    assert_eq!(approved.request, r#"{"amount":2000.0,"iban":"DE02"}"#);
    let p = Payments { store };
    match p.pay_invoice_status("approved".into(), "inv-7".into()).unwrap() {
        Status::Approved { by, .. } => assert_eq!(by, "alice"),
        other => panic!("{other:?}"),
    }
    const CALLERS: usize = 8;
    let barrier = Barrier::new(CALLERS);
    let results: Vec<Result<u64, idem::Error>> = std::thread::scope(|scope| {
        let callers: Vec<_> = (0..CALLERS)
            .map(|_| {
                let (path, barrier) = (&path, &barrier);
                scope.spawn(move || {
                    let p = Payments { store: SqliteStore::open(path).unwrap() };
                    barrier.wait();
                    pay(&p, "approved", 2000.0)
                })
            })
            .collect();
        callers.into_iter().map(|caller| caller.join().unwrap()).collect()
    });
    assert_eq!(paid("approved"), 1, "one run: {results:?}");
    assert!(
        results.iter().all(|r| r.is_ok() || r.as_ref().unwrap_err().code() == ErrorCode::InProgress),
        "{results:?}"
    );
    assert_eq!(pay(&p, "approved", 2000.0).unwrap(), 200_000, "a repeat replays");
    assert_eq!(paid("approved"), 1);
    assert!(matches!(decide(&p.store, "approved", false), Err(DecideError::Decided(_))), "a decision stands");
}

#[test]
fn a_declined_action_never_runs_until_reopened() {
    let p = Payments { store: MemoryStore::new() };
    assert_eq!(code(pay(&p, "declined", 3000.0)), ErrorCode::ApprovalRequired);
    decide(&p.store, "declined", false).unwrap();
    for _ in 0..3 {
        let answer = pay(&p, "declined", 3000.0).unwrap_err();
        assert_eq!(answer.code(), ErrorCode::Declined);
        assert!(answer.message().contains("bob") && answer.message().contains("wrong IBAN"), "{answer}");
        assert_eq!(answer.approval().unwrap().declined_by.as_deref(), Some("bob"));
    }
    assert_eq!(paid("declined"), 0);
    match p.pay_invoice_status("declined".into(), "inv-7".into()).unwrap() {
        Status::Declined { by, note, .. } => assert_eq!((by.as_str(), note.as_deref()), ("bob", Some("wrong IBAN"))),
        other => panic!("{other:?}"),
    }
    let key = id("declined");
    let record = RecordId { namespace: "tests::pay_invoice", key: &key };
    assert!(matches!(block_on(approval::approve(&p.store, record, "alice", None)), Err(DecideError::Decided(_))));
    block_on(approval::reopen(&p.store, record, "carol", Some("IBAN fixed"))).unwrap();
    assert_eq!(code(pay(&p, "declined", 3000.0)), ErrorCode::ApprovalRequired, "asked anew");
    assert_eq!(asked("declined"), 2, "a second request, a second notification");
}

#[test]
fn other_values_while_pending_are_a_conflict_and_no_new_request() {
    let p = Payments { store: MemoryStore::new() };
    assert_eq!(code(pay(&p, "conflict", 1500.0)), ErrorCode::ApprovalRequired);
    let answer = pay(&p, "conflict", 1800.0).unwrap_err();
    assert_eq!(answer.code(), ErrorCode::Conflict);
    assert_eq!(answer.differences()[0].field, "amount");
    // Not even a call below the threshold slips past the pending request.
    assert_eq!(code(pay(&p, "conflict", 10.0)), ErrorCode::Conflict);
    assert_eq!((asked("conflict"), paid("conflict")), (1, 0));
    // Approving binds the first values: a run with others is still a conflict.
    decide(&p.store, "conflict", true).unwrap();
    assert_eq!(code(pay(&p, "conflict", 1800.0)), ErrorCode::Conflict);
    assert_eq!(pay(&p, "conflict", 1500.0).unwrap(), 150_000);
}

struct Quick {
    store: MemoryStore,
}

static QUICK_RUNS: AtomicUsize = AtomicUsize::new(0);
static QUICK_ASKED: AtomicUsize = AtomicUsize::new(0);

fn quick_asked(_: &approval::Request) {
    QUICK_ASKED.fetch_add(1, Ordering::SeqCst);
}

impl Quick {
    /// Delete an account.
    #[idempotent(key = "delete:<account>", approval(always, ttl = "300ms", notify = quick_asked), store = self.store)]
    fn delete(&self, account: String) -> Result<(), idem::Error> {
        QUICK_RUNS.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

#[test]
fn an_unanswered_request_expires_once_and_the_next_call_asks_anew() {
    let q = Quick { store: MemoryStore::new() };
    let first = q.delete("a1".into()).unwrap_err();
    assert_eq!(first.code(), ErrorCode::ApprovalRequired);
    assert_eq!(first.approval().unwrap().text, "Delete an account. (delete:a1)", "the default text");
    std::thread::sleep(Duration::from_millis(350));
    assert!(matches!(q.delete_status("a1".into()).unwrap(), Status::ApprovalExpired { .. }));
    assert_eq!(q.delete("a1".into()).unwrap_err().code(), ErrorCode::ApprovalExpired, "once");
    assert_eq!(q.delete("a1".into()).unwrap_err().code(), ErrorCode::ApprovalRequired, "then a new request");
    assert_eq!(QUICK_ASKED.load(Ordering::SeqCst), 2);
    assert_eq!(QUICK_RUNS.load(Ordering::SeqCst), 0);
}

struct Tenanted {
    store: Arc<MemoryStore>,
    tenant: String,
}

static TENANT_RUNS: LazyLock<Mutex<Vec<String>>> = LazyLock::new(Mutex::default);

impl Tenanted {
    /// Refund an order.
    #[idempotent(key = "refund:<order>", scope = self.tenant, approval, namespace = "tests::refund", store = *self.store)]
    fn refund(&self, order: String) -> Result<(), idem::Error> {
        TENANT_RUNS.lock().unwrap().push(self.tenant.clone());
        Ok(())
    }
}

#[test]
fn a_tenants_approval_never_runs_another_tenants_action() {
    let store = Arc::new(MemoryStore::new());
    let acme = Tenanted { store: store.clone(), tenant: "acme".into() };
    let beta = Tenanted { store: store.clone(), tenant: "beta".into() };
    assert_eq!(acme.refund("o1".into()).unwrap_err().code(), ErrorCode::ApprovalRequired);
    let acme_key = format!("{}refund:o1", idem::store::scope_prefix("acme"));
    block_on(approval::approve(&*store, RecordId { namespace: "tests::refund", key: &acme_key }, "ops", None)).unwrap();
    assert_eq!(beta.refund("o1".into()).unwrap_err().code(), ErrorCode::ApprovalRequired, "beta asks for its own");
    acme.refund("o1".into()).unwrap();
    assert_eq!(*TENANT_RUNS.lock().unwrap(), ["acme"]);
    let waiting = approval::pending(&*store, Some("tests::refund"), None).unwrap();
    assert_eq!(waiting.len(), 1, "beta's request waits: {waiting:?}");
    assert!(waiting[0].key.starts_with(&idem::store::scope_prefix("beta")));
}

struct TenantBilling {
    store: MemoryStore,
    tenant: String,
}

impl TenantBilling {
    /// Send an invoice.
    #[idempotent(key = "invoice:<customer>:<period>", compare = [amount], scope = self.tenant,
        approval(when = amount > 1000.0), namespace = "tests::tenant_invoice", store = self.store)]
    fn send_invoice(&self, customer: String, period: String, amount: f64) -> Result<f64, idem::Error> {
        Ok(amount)
    }
}

/// What a person approving and a model reading see names the action in words: the doc
/// line, the key's fields as they read (no percent-escapes) and the compared fields. A
/// scope's hash is for operators: it stays in the request's key (what `idem approve` takes),
/// never in a text or a message.
#[test]
fn texts_a_person_or_a_model_reads_name_the_action_without_the_scopes_hash() {
    let billing = TenantBilling { store: MemoryStore::new(), tenant: "acme".into() };
    let hash = idem::store::scope_prefix("acme");
    let hash = hash.trim_end_matches('/');
    let asked = billing.send_invoice("Zoë & Co".into(), "2026/10".into(), 2000.0).unwrap_err();
    assert_eq!(asked.code(), ErrorCode::ApprovalRequired);
    let request = asked.approval().unwrap();
    assert_eq!(request.text, "Send an invoice. (invoice:zoë & co:2026/10, amount 2000.0)");
    assert_eq!(request.key, format!("{hash}/invoice:zoë%20%26%20co:2026%2F10"), "the operator's key, as stored");
    assert!(!asked.message().contains(hash) && !asked.message().contains('%'), "{asked}");

    billing.send_invoice("c1".into(), "2026-10".into(), 120.0).unwrap();
    let conflict = billing.send_invoice("c1".into(), "2026-10".into(), 150.0).unwrap_err();
    assert_eq!(conflict.code(), ErrorCode::Conflict);
    assert_eq!(
        conflict.message(),
        "send_invoice: invoice:c1:2026-10 was already requested with other values: amount was 120.0, now 150.0"
    );
}

/// The request made, the process gone, a decision by another handle (an operator's), a
/// new process: it runs once the approval is there, once.
fn restart_between_request_and_approval<S: idem::store::Store + idem::store::Admin>(
    open: impl Fn() -> S,
    supplier: &str,
) {
    let p = Payments { store: open() };
    assert_eq!(code(pay(&p, supplier, 4000.0)), ErrorCode::ApprovalRequired);
    drop(p);
    let store = open();
    let waiting = approval::pending(&store, Some("tests::pay_invoice"), None).unwrap();
    assert!(waiting.iter().any(|request| request.key == id(supplier)), "{waiting:?}");
    let key = id(supplier);
    let action = RecordId { namespace: "tests::pay_invoice", key: &key };
    approval::blocking::approve(&store, action, "alice", Some("checked after the restart")).unwrap();
    drop(store);
    let p = Payments { store: open() };
    assert_eq!(pay(&p, supplier, 4000.0).unwrap(), 400_000);
    assert_eq!(pay(&p, supplier, 4000.0).unwrap(), 400_000);
    assert_eq!(paid(supplier), 1);
    let state = approval::blocking::state(&p.store, RecordId { namespace: "tests::pay_invoice", key: &key }).unwrap();
    assert!(matches!(state, Some(State::Approved(..))), "{state:?}");
}

#[test]
fn a_restart_between_request_and_approval_loses_nothing_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    restart_between_request_and_approval(|| SqliteStore::open(dir.path().join("idem.db")).unwrap(), "sqlite");
}

#[test]
fn a_restart_between_request_and_approval_loses_nothing_on_postgres() {
    let Some(url) = postgres::test_url("approvals on PostgreSQL") else { return };
    let schema = postgres::fresh_schema("approvals");
    let open = || {
        let store = idem::PgStore::builder(&url).schema(&schema).build().unwrap();
        block_on(store.read(RecordId { namespace: "x", key: "y" })).unwrap(); // migrates
        store
    };
    restart_between_request_and_approval(open, "pg");
}
