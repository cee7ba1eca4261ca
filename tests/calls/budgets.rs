//! Irreversible-action budgets (`budget = ...`), counted: the body's runs and the windows'
//! use, through real tools on each store (memory, SQLite, PostgreSQL, Redis).

use crate::support::postgres;
#[cfg(feature = "redis")]
use crate::support::redis;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, LazyLock, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use idem::budget::Budget;
use idem::store::block_on;
use idem::store::budget::{Adjustment, BudgetChange, BudgetQuery, BudgetWindow, UNIT};
use idem::store::{Admin, RecordId, Reserve};
use idem::{ErrorCode, MemoryStore, SqliteStore, idempotent};

/// At most 5 refunds and credits per tenant per day.
static REFUNDS: Budget = Budget::count("tests.refunds", 5).per_day();
/// At most 1,000 paid out per tenant per day.
static PAID_OUT: Budget = Budget::sum_of("tests.paid_out", "amount", 1000.0).per_day();
/// The most a sum budget allows: 9e12 per day.
static MOST: Budget = Budget::sum_of("tests.most", "amount", 9e12).per_day();
/// 9,010,000,000 per day: sums past 2^53 millionths.
static BILLIONS: Budget = Budget::sum_of("tests.billions", "amount", 9.01e9).per_day();
/// At most 1 gift per day; a person may allow more.
static GIFTS: Budget = Budget::count("tests.gifts", 1).per_day();
/// At most 2 pings per 300 ms window.
static PINGS: Budget = Budget::count("tests.pings", 2).per(Duration::from_millis(300));

/// Effects, by the order (or gift) they were made for: how often each body ran.
static RAN: LazyLock<Mutex<HashMap<String, usize>>> = LazyLock::new(Mutex::default);

fn ran(what: &str) -> usize {
    RAN.lock().unwrap().get(what).copied().unwrap_or(0)
}

fn ran_with_prefix(prefix: &str) -> usize {
    RAN.lock().unwrap().iter().filter(|(what, _)| what.starts_with(prefix)).map(|(_, n)| n).sum()
}

fn effect(what: &str) {
    *RAN.lock().unwrap().entry(what.to_owned()).or_default() += 1;
}

/// A refund's error: the bank's, or idem's answer.
#[derive(Debug)]
enum ShopError {
    BankRefused,
    Idem(idem::Error),
}

impl From<idem::Error> for ShopError {
    fn from(error: idem::Error) -> Self {
        ShopError::Idem(error)
    }
}

impl ShopError {
    fn idem(self) -> idem::Error {
        match self {
            ShopError::Idem(error) => error,
            ShopError::BankRefused => panic!("the bank's error, not an idem answer"),
        }
    }
}

struct Shop<S> {
    store: S,
    tenant: String,
}

impl<S: idem::store::BudgetStore> Shop<S> {
    /// Refund an order.
    #[idempotent(key = "refund:<order>", compare = [amount], scope = self.tenant, budget = REFUNDS,
        namespace = "tests::refund", store = self.store)]
    fn refund(&self, order: String, amount: f64, fail: bool) -> Result<String, ShopError> {
        effect(&order);
        if fail {
            return Err(ShopError::BankRefused);
        }
        Ok(format!("refunded {order}: {amount}"))
    }

    /// Credit an order: the same budget as refunds.
    #[idempotent(key = "credit:<order>", compare = [amount], scope = self.tenant, budget = REFUNDS,
        namespace = "tests::credit", store = self.store)]
    fn credit(&self, order: String, amount: f64) -> Result<String, idem::Error> {
        effect(&order);
        Ok(format!("credited {order}: {amount}"))
    }

    /// Pay out an amount.
    #[idempotent(key = "payout:<order>", compare = [amount], scope = self.tenant, budget = PAID_OUT,
        namespace = "tests::payout", store = self.store)]
    fn payout(&self, order: String, amount: f64) -> Result<f64, idem::Error> {
        effect(&order);
        Ok(amount)
    }

    /// Transfer the most a budget allows.
    #[idempotent(key = "most:<order>", compare = [amount], scope = self.tenant, budget = MOST,
        namespace = "tests::most", store = self.store)]
    fn most(&self, order: String, amount: f64) -> Result<f64, idem::Error> {
        effect(&order);
        Ok(amount)
    }

    /// Transfer billions.
    #[idempotent(key = "billions:<order>", compare = [amount], scope = self.tenant, budget = BILLIONS,
        namespace = "tests::billions", store = self.store)]
    fn billions(&self, order: String, amount: f64) -> Result<f64, idem::Error> {
        effect(&order);
        Ok(amount)
    }

    /// Send a gift.
    #[idempotent(key = "gift:<gift>", compare = [value], budget = GIFTS, approval(over_budget),
        namespace = "tests::gift", store = self.store)]
    fn gift(&self, gift: String, value: f64) -> Result<String, idem::Error> {
        effect(&gift);
        Ok(format!("sent {gift}"))
    }

    /// Ping.
    #[idempotent(key = "ping:<what>", budget = PINGS, namespace = "tests::ping", store = self.store)]
    fn ping(&self, what: String) -> Result<String, idem::Error> {
        effect(&what);
        Ok(what)
    }
}

/// One memory store, shared as workers of one process share it.
#[derive(Clone)]
struct SharedMemory(Arc<MemoryStore>);

/// Runs `check` on a fresh memory store, a fresh SQLite file and, when their servers are
/// there, a fresh PostgreSQL schema, a fresh Redis prefix and one on a Redis Cluster.
fn on_every_store(test: &str, check: impl Fn(&dyn Fn() -> Box<dyn Opened>, &str)) {
    let memory = SharedMemory(Arc::new(MemoryStore::new()));
    check(&|| Box::new(memory.clone()) as Box<dyn Opened>, &format!("{test}-memory"));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("idem.db");
    check(&|| Box::new(SqliteStore::open(&file).unwrap()) as Box<dyn Opened>, &format!("{test}-sqlite"));
    if let Some(url) = postgres::test_url(&format!("{test} on PostgreSQL")) {
        let schema = postgres::fresh_schema("budgets");
        let open = || idem::PgStore::builder(&url).schema(&schema).build().unwrap();
        check(&|| Box::new(open()) as Box<dyn Opened>, &format!("{test}-pg"));
    }
    #[cfg(feature = "redis")]
    if let Some(url) = redis::test_url(&format!("{test} on Redis")) {
        let prefix = postgres::fresh_schema("budgets");
        let open = || idem::RedisStore::builder(&url).prefix(&prefix).build().unwrap();
        check(&|| Box::new(open()) as Box<dyn Opened>, &format!("{test}-redis"));
    }
    #[cfg(feature = "redis")]
    if let Some(url) = redis::test_cluster_url(&format!("{test} on a Redis Cluster")) {
        let prefix = postgres::fresh_schema("budgets");
        let open = || idem::RedisStore::builder(&url).prefix(&prefix).build().unwrap();
        check(&|| Box::new(open()) as Box<dyn Opened>, &format!("{test}-redis-cluster"));
    }
}

/// A store handle the tests use through the tools and the admin interface.
trait Opened: Send + Sync {
    fn shop(self: Box<Self>, tenant: &str) -> Box<dyn ShopOps>;
    fn windows(&self, budget: &str) -> Vec<BudgetWindow>;
    fn adjust(&self, adjustment: &Adjustment<'_>) -> Result<BudgetWindow, idem::store::StoreError>;
    fn approve(&self, key: &str);
    /// Reserves `key` of the gift tool as a call in progress would.
    fn hold(&self, key: &str);
}

/// The tools of one shop, as trait objects over the store type.
trait ShopOps: Send + Sync {
    fn refund(&self, order: &str, amount: f64, fail: bool) -> Result<String, ShopError>;
    fn credit(&self, order: &str, amount: f64) -> Result<String, idem::Error>;
    fn payout(&self, order: &str, amount: f64) -> Result<f64, idem::Error>;
    fn most(&self, order: &str, amount: f64) -> Result<f64, idem::Error>;
    fn billions(&self, order: &str, amount: f64) -> Result<f64, idem::Error>;
    fn gift(&self, gift: &str, value: f64) -> Result<String, idem::Error>;
    fn ping(&self, what: &str) -> Result<String, idem::Error>;
}

impl<S: idem::store::BudgetStore + 'static> ShopOps for Shop<S> {
    fn refund(&self, order: &str, amount: f64, fail: bool) -> Result<String, ShopError> {
        Shop::refund(self, order.into(), amount, fail)
    }
    fn credit(&self, order: &str, amount: f64) -> Result<String, idem::Error> {
        Shop::credit(self, order.into(), amount)
    }
    fn payout(&self, order: &str, amount: f64) -> Result<f64, idem::Error> {
        Shop::payout(self, order.into(), amount)
    }
    fn most(&self, order: &str, amount: f64) -> Result<f64, idem::Error> {
        Shop::most(self, order.into(), amount)
    }
    fn billions(&self, order: &str, amount: f64) -> Result<f64, idem::Error> {
        Shop::billions(self, order.into(), amount)
    }
    fn gift(&self, gift: &str, value: f64) -> Result<String, idem::Error> {
        Shop::gift(self, gift.into(), value)
    }
    fn ping(&self, what: &str) -> Result<String, idem::Error> {
        Shop::ping(self, what.into())
    }
}

impl<S: Admin + idem::store::BudgetStore + 'static> Opened for S {
    fn shop(self: Box<Self>, tenant: &str) -> Box<dyn ShopOps> {
        Box::new(Shop { store: *self, tenant: tenant.to_owned() })
    }
    fn windows(&self, budget: &str) -> Vec<BudgetWindow> {
        windows(self, budget)
    }
    fn adjust(&self, adjustment: &Adjustment<'_>) -> Result<BudgetWindow, idem::store::StoreError> {
        Admin::adjust_budget(self, adjustment)
    }
    fn approve(&self, key: &str) {
        approve(self, key)
    }
    fn hold(&self, key: &str) {
        hold(self, key)
    }
}

impl Opened for SharedMemory {
    fn shop(self: Box<Self>, tenant: &str) -> Box<dyn ShopOps> {
        Box::new(Shop { store: self.0, tenant: tenant.to_owned() })
    }
    fn windows(&self, budget: &str) -> Vec<BudgetWindow> {
        windows(&*self.0, budget)
    }
    fn adjust(&self, adjustment: &Adjustment<'_>) -> Result<BudgetWindow, idem::store::StoreError> {
        Admin::adjust_budget(&*self.0, adjustment)
    }
    fn approve(&self, key: &str) {
        approve(&*self.0, key)
    }
    fn hold(&self, key: &str) {
        hold(&*self.0, key)
    }
}

fn hold(store: &impl idem::store::Store, key: &str) {
    let id = RecordId { namespace: "tests::gift", key };
    let request = Reserve { id, request: r#"{"value":5.0}"#, lease: Duration::from_secs(600) };
    assert!(matches!(block_on(store.reserve(request)).unwrap(), idem::store::Reservation::Acquired { .. }));
}

fn windows(store: &impl Admin, budget: &str) -> Vec<BudgetWindow> {
    Admin::budgets(store, &BudgetQuery { budget: Some(budget), ..BudgetQuery::default() }).unwrap()
}

/// A person approves the gift under `key`.
fn approve(store: &impl idem::store::Store, key: &str) {
    let id = RecordId { namespace: "tests::gift", key };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(idem::approval::approve(store, id, "alice", Some("one more"))).unwrap();
}

fn code<T: std::fmt::Debug, E: Into<ShopError>>(result: Result<T, E>) -> ErrorCode {
    result.map_err(Into::into).expect_err("an idem answer").idem().code()
}

/// The use of the one window of `budget` for `scope`'s tenant, in units.
fn used(store: &dyn Opened, budget: &str, tenant_scope: &str) -> f64 {
    let windows: Vec<_> = store.windows(budget).into_iter().filter(|w| w.scope == tenant_scope).collect();
    assert!(windows.len() <= 1, "one window: {windows:?}");
    windows.first().map_or(0.0, |w| w.used as f64 / UNIT as f64)
}

/// The scope a tenant's windows are kept under: the scope prefix of its keys.
fn scope_of(tenant: &str) -> String {
    idem::store::scope_prefix(tenant)
}

#[test]
fn thirty_two_racing_first_calls_against_a_budget_of_five_make_five_effects() {
    on_every_store("race", |open, run| {
        const CALLERS: usize = 32;
        let barrier = Barrier::new(CALLERS);
        let results: Vec<Result<String, ShopError>> = std::thread::scope(|scope| {
            let callers: Vec<_> = (0..CALLERS)
                .map(|i| {
                    let shop = open().shop(run);
                    let barrier = &barrier;
                    scope.spawn(move || {
                        barrier.wait();
                        shop.refund(&format!("{run}-{i}"), 10.0, false)
                    })
                })
                .collect();
            callers.into_iter().map(|caller| caller.join().unwrap()).collect()
        });
        assert_eq!(ran_with_prefix(&format!("{run}-")), 5, "five effects: {results:?}");
        let refused: Vec<_> = results.into_iter().filter_map(Result::err).map(ShopError::idem).collect();
        assert_eq!(refused.len(), CALLERS - 5);
        for answer in refused {
            assert_eq!(answer.code(), ErrorCode::BudgetExceeded, "{answer}");
            assert!(!answer.retryable());
            let over = answer.budget().expect("the budget's state");
            assert_eq!((over.name.as_str(), over.used, over.limit), ("tests.refunds", 5.0, 5.0));
            let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
            assert!(over.resets_at_ms > now && over.resets_at_ms - over.window_start_ms == 86_400_000, "{over:?}");
            assert_eq!(over.window_start_ms % 86_400_000, 0, "a day's window starts at 00:00 UTC");
            assert!(answer.message().contains("tests.refunds") && answer.message().contains("5 of 5"), "{answer}");
            assert!(answer.suggestion().unwrap().contains("ask"), "{answer}");
        }
        assert_eq!(used(&*open(), "tests.refunds", &scope_of(run)), 5.0);
    });
}

#[test]
fn replays_conflicts_and_calls_in_progress_never_spend() {
    on_every_store("repeats", |open, run| {
        let shop = open().shop(run);
        let first = shop.refund(&format!("{run}-a"), 10.0, false).unwrap();
        for _ in 0..5 {
            assert_eq!(shop.refund(&format!("{run}-a"), 10.0, false).unwrap(), first, "a replay");
        }
        assert_eq!(code(shop.refund(&format!("{run}-a"), 99.0, false)), ErrorCode::Conflict);
        assert_eq!(used(&*open(), "tests.refunds", &scope_of(run)), 1.0, "only the fresh run spent");
        for i in 0..4 {
            shop.credit(&format!("{run}-c{i}"), 1.0).unwrap();
        }
        assert_eq!(code(shop.refund(&format!("{run}-b"), 10.0, false)), ErrorCode::BudgetExceeded, "shared");
        // With the budget spent, a repeat of a done action still replays.
        assert_eq!(shop.refund(&format!("{run}-a"), 10.0, false).unwrap(), first);
        assert_eq!(shop.credit(&format!("{run}-c0"), 1.0).unwrap(), format!("credited {run}-c0: 1"));
        assert_eq!(ran(&format!("{run}-a")) + ran(&format!("{run}-b")), 1);
        assert_eq!(used(&*open(), "tests.refunds", &scope_of(run)), 5.0);
        // A call that finds its action in progress spends nothing: the gift budget's one
        // run is still there for a fresh gift.
        open().hold(&format!("gift:{run}-busy"));
        for _ in 0..3 {
            assert_eq!(code(shop.gift(&format!("{run}-busy"), 5.0)), ErrorCode::InProgress);
        }
        assert_eq!(used(&*open(), "tests.gifts", ""), 0.0, "in progress spends nothing");
    });
}

#[test]
fn a_failure_that_releases_its_key_refunds_its_charge() {
    on_every_store("refund", |open, run| {
        let shop = open().shop(run);
        for i in 0..5 {
            shop.refund(&format!("{run}-{i}"), 1.0, false).unwrap();
        }
        assert_eq!(code(shop.refund(&format!("{run}-x"), 1.0, false)), ErrorCode::BudgetExceeded);
        let store = open();
        let window = store.windows("tests.refunds").into_iter().find(|w| w.scope == scope_of(run)).unwrap();
        let raise = Adjustment {
            window: (&window.budget, &window.scope, window.start_ms),
            change: BudgetChange::Raise(UNIT),
            by: "ops",
            note: "one more today",
        };
        store.adjust(&raise).unwrap();
        // The failed body ran, then released its key: its charge is given back.
        assert!(matches!(shop.refund(&format!("{run}-x"), 1.0, true), Err(ShopError::BankRefused)));
        assert_eq!(used(&*open(), "tests.refunds", &scope_of(run)), 5.0, "refunded");
        assert_eq!(shop.refund(&format!("{run}-x"), 1.0, false).unwrap(), format!("refunded {run}-x: 1"));
        assert_eq!(ran(&format!("{run}-x")), 2, "the retry of a released failure runs");
        assert_eq!(code(shop.refund(&format!("{run}-y"), 1.0, false)), ErrorCode::BudgetExceeded);
    });
}

/// An abandoned call keeps its charge: its effect may have happened.
#[test]
fn an_abandoned_call_keeps_its_charge() {
    static PANIC: AtomicBool = AtomicBool::new(true);
    struct Panicky<S> {
        store: S,
    }
    impl<S: idem::store::BudgetStore> Panicky<S> {
        #[idempotent(key = "ping:<what>", budget = PINGS_ABANDONED, namespace = "tests::abandoned", store = self.store)]
        fn ping(&self, what: String) -> Result<String, idem::Error> {
            assert!(!PANIC.load(Ordering::SeqCst), "the body stops halfway");
            Ok(what)
        }
    }
    static PINGS_ABANDONED: Budget = Budget::count("tests.abandoned", 1).per_day();
    let p = Panicky { store: MemoryStore::new() };
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| p.ping("a".into())));
    assert!(panicked.is_err());
    PANIC.store(false, Ordering::SeqCst);
    assert_eq!(code(p.ping("b".into())), ErrorCode::BudgetExceeded, "the abandoned call kept its charge");
    let windows = Admin::budgets(&p.store, &BudgetQuery::default()).unwrap();
    assert_eq!(windows[0].used, UNIT);
}

#[test]
fn a_sum_budget_adds_up_the_compared_amount_exactly() {
    on_every_store("sums", |open, run| {
        let shop = open().shop(run);
        assert_eq!(shop.payout(&format!("{run}-1"), 600.1).unwrap(), 600.1);
        assert_eq!(shop.payout(&format!("{run}-2"), 299.9).unwrap(), 299.9);
        let answer = shop.payout(&format!("{run}-3"), 100.01).unwrap_err();
        assert_eq!(answer.code(), ErrorCode::BudgetExceeded);
        assert_eq!((answer.budget().unwrap().used, answer.budget().unwrap().limit), (900.0, 1000.0));
        assert_eq!(shop.payout(&format!("{run}-4"), 100.0).unwrap(), 100.0, "exactly up to the limit");
        assert_eq!(code(shop.payout(&format!("{run}-5"), 0.000001)), ErrorCode::BudgetExceeded);
        assert_eq!(shop.payout(&format!("{run}-6"), 0.0).unwrap(), 0.0, "zero always fits");
        assert_eq!(used(&*open(), "tests.paid_out", &scope_of(run)), 1000.0);
        // An amount a budget cannot add up is bad input: nothing is reserved or spent.
        for bad in [-5.0, f64::INFINITY, 1e13] {
            let answer = shop.payout(&format!("{run}-bad"), bad).unwrap_err();
            assert_eq!(answer.code(), ErrorCode::InvalidKey, "{bad}: {answer}");
            assert!(answer.message().contains("amount"), "{answer}");
        }
        assert_eq!(ran(&format!("{run}-bad")), 0);
        assert_eq!(used(&*open(), "tests.paid_out", &scope_of(run)), 1000.0);
    });
}

/// The documented range's edges through real tools: two calls of 9e12 against a budget of
/// 9e12 (PostgreSQL answered the second STORE_UNAVAILABLE, "bigint out of range"), and
/// sums past 2^53 millionths (Redis let 10,000,000.000001 through a window of 9,000,000,000
/// used of 9,010,000,000, its doubles rounding it away).
#[test]
fn sums_at_the_edges_of_the_range_are_exact_and_refused_over_budget() {
    on_every_store("edges", |open, run| {
        let shop = open().shop(run);
        let used_exactly = |budget: &str| -> i64 {
            let windows: Vec<_> = open().windows(budget).into_iter().filter(|w| w.scope == scope_of(run)).collect();
            assert_eq!(windows.len(), 1, "one window: {windows:?}");
            windows[0].used
        };
        assert_eq!(shop.most(&format!("{run}-most-1"), 9e12).unwrap(), 9e12);
        for (order, amount) in [("most-2", 9e12), ("most-3", 0.000001)] {
            let answer = shop.most(&format!("{run}-{order}"), amount).unwrap_err();
            assert_eq!(answer.code(), ErrorCode::BudgetExceeded, "{amount} past a full 9e12: {answer}");
            assert_eq!(ran(&format!("{run}-{order}")), 0);
        }
        assert_eq!(used_exactly("tests.most"), 9_000_000_000_000 * UNIT);

        assert_eq!(shop.billions(&format!("{run}-nine"), 9e9).unwrap(), 9e9);
        let answer = shop.billions(&format!("{run}-ten-and-a-millionth"), 10_000_000.000001).unwrap_err();
        assert_eq!(answer.code(), ErrorCode::BudgetExceeded, "{answer}");
        assert_eq!(used_exactly("tests.billions"), 9_000_000_000 * UNIT);
        assert_eq!(shop.billions(&format!("{run}-ten"), 1e7).unwrap(), 1e7, "exactly up to the limit");
        assert_eq!(used_exactly("tests.billions"), 9_010_000_000 * UNIT);
        assert_eq!(code(shop.billions(&format!("{run}-one-more"), 0.000001)), ErrorCode::BudgetExceeded);
    });
}

#[test]
fn each_tenant_has_its_own_windows() {
    on_every_store("tenants", |open, run| {
        let (acme, globex) = (open().shop(&format!("{run}-acme")), open().shop(&format!("{run}-globex")));
        for i in 0..5 {
            acme.refund(&format!("{run}-{i}"), 1.0, false).unwrap();
        }
        assert_eq!(code(acme.refund(&format!("{run}-5"), 1.0, false)), ErrorCode::BudgetExceeded);
        // The same order ids for another tenant: other actions, another window.
        for i in 0..5 {
            globex.refund(&format!("{run}-{i}"), 1.0, false).unwrap();
        }
        assert_eq!(ran_with_prefix(&format!("{run}-")), 10);
        let store = open();
        assert_eq!(used(&*store, "tests.refunds", &scope_of(&format!("{run}-acme"))), 5.0);
        assert_eq!(used(&*store, "tests.refunds", &scope_of(&format!("{run}-globex"))), 5.0);
    });
}

#[test]
fn a_new_window_starts_with_nothing_used() {
    on_every_store("rollover", |open, run| {
        let shop = open().shop(run);
        // Two runs fit a window; the third waits for the next. Until the window that the
        // answer names ends, calls are refused; from then on they run. A window may end
        // between two calls: calling on until one is refused reaches a full window soon
        // (two runs per 300 ms), so the check is always made.
        let resets_at = (0..100)
            .find_map(|i| match shop.ping(&format!("{run}-{i}")) {
                Ok(_) => None,
                Err(answer) => {
                    assert_eq!(answer.code(), ErrorCode::BudgetExceeded, "{answer}");
                    Some(answer.budget().unwrap().resets_at_ms)
                }
            })
            .expect("a window of two runs refuses a call within 100");
        let now = || SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
        while now() < resets_at + 5 {
            std::thread::sleep(Duration::from_millis((resets_at + 5 - now()).max(1) as u64));
        }
        shop.ping(&format!("{run}-next")).expect("a new window has room");
    });
}

#[test]
fn over_budget_with_approval_asks_a_person_and_runs_once_approved() {
    on_every_store("gifts", |open, run| {
        let shop = open().shop(run);
        shop.gift(&format!("{run}-1"), 50.0).unwrap();
        let answer = shop.gift(&format!("{run}-2"), 80.0).unwrap_err();
        assert_eq!(answer.code(), ErrorCode::ApprovalRequired, "{answer}");
        let text = &answer.approval().unwrap().text;
        assert!(text.contains("tests.gifts") && text.contains("used 1 of 1"), "{text}");
        assert_eq!(code(shop.gift(&format!("{run}-2"), 80.0)), ErrorCode::ApprovalRequired, "still pending");
        assert_eq!(ran(&format!("{run}-2")), 0);
        open().approve(&format!("gift:{run}-2"));
        assert_eq!(shop.gift(&format!("{run}-2"), 80.0).unwrap(), format!("sent {run}-2"));
        assert_eq!(shop.gift(&format!("{run}-2"), 80.0).unwrap(), format!("sent {run}-2"), "a replay");
        assert_eq!(ran(&format!("{run}-2")), 1);
        let windows = open().windows("tests.gifts");
        let used: i64 = windows.iter().map(|w| w.used).sum();
        assert_eq!(used, 2 * UNIT, "the approved run is charged past the limit");
    });
}

#[test]
fn operators_raise_and_reset_windows_with_a_note_and_bad_input_changes_nothing() {
    on_every_store("operators", |open, run| {
        let shop = open().shop(run);
        for i in 0..5 {
            shop.credit(&format!("{run}-{i}"), 1.0).unwrap();
        }
        let store = open();
        let window = store.windows("tests.refunds").into_iter().find(|w| w.scope == scope_of(run)).unwrap();
        let at = (window.budget.as_str(), window.scope.as_str(), window.start_ms);
        let adjust = |change, by, note| store.adjust(&Adjustment { window: at, change, by, note });
        for (change, by, note) in [
            (BudgetChange::Raise(0), "ops", "x"),
            (BudgetChange::Raise(UNIT), "", "x"),
            (BudgetChange::Reset, "ops", " "),
        ] {
            assert!(matches!(adjust(change, by, note), Err(idem::store::StoreError::Refused(_))));
        }
        let unknown =
            Adjustment { window: ("tests.nothing", "", 0), change: BudgetChange::Reset, by: "ops", note: "x" };
        assert!(store.adjust(&unknown).is_err(), "no such window");
        assert_eq!(used(&*store, "tests.refunds", &scope_of(run)), 5.0, "nothing changed");
        let reset = adjust(BudgetChange::Reset, "ops", "a test run spent it").unwrap();
        assert_eq!(reset.used, 0);
        let adjusted = reset.adjusted.unwrap();
        assert_eq!(
            (adjusted.by.as_str(), adjusted.change.as_str(), adjusted.note.as_str()),
            ("ops", "reset (was 5)", "a test run spent it")
        );
        shop.credit(&format!("{run}-after-reset"), 1.0).unwrap();
        assert_eq!(used(&*store, "tests.refunds", &scope_of(run)), 1.0);
    });
}

/// The paragraph a budgeted tool's description gains names its budget with the limit and
/// window of its `static`, and says what a call without room answers; a tool without a
/// budget says nothing of one.
#[test]
fn a_budgeted_tools_description_says_its_limit() {
    let refund = Shop::<MemoryStore>::refund_description();
    assert!(
        refund.ends_with(
            "It is limited by the budget tests.refunds (at most 5 runs per day): a call without room answers \
             BUDGET_EXCEEDED."
        ),
        "{refund}"
    );
    assert!(refund.starts_with("Refund an order.\n\nSafe to retry: a repeat for the same order"), "{refund}");
    let payout = Shop::<MemoryStore>::payout_description();
    assert!(payout.contains("the budget tests.paid_out (at most 1000 of amount in total per day)"), "{payout}");
    let gift = Shop::<MemoryStore>::gift_description();
    assert!(gift.ends_with("a call without room needs a person's approval (APPROVAL_REQUIRED)."), "{gift}");
    let ping = Shop::<MemoryStore>::ping_description();
    assert!(ping.contains("the budget tests.pings (at most 2 runs per 300 milliseconds)"), "{ping}");
    assert!(!ping.contains("CONFLICT"), "nothing compared, nothing refused: {ping}");
}
