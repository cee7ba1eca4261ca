//! The bench tool: the article's `send_invoice` with a no-op body and idem, its arguments,
//! and the checks every answer must pass.

use std::future::Future;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use idem::store::Store;
use idem::store::block_on;
use idem::store::{RecordId, Reservation, Reserve};
use idem::{ErrorCode, idempotent};
use serde::{Deserialize, Serialize};
use tokio::runtime::Runtime;

/// The bench tool's record namespace, set explicitly so that the in-progress benches can
/// reserve its keys through the store API.
pub const NAMESPACE: &str = "bench::send_invoice";
pub const PERIOD: &str = "2026-10";
pub const AMOUNT: f64 = 120.0;
pub const OTHER_AMOUNT: f64 = 150.0;
/// How the bench tool's compared field (`amount = 120.0`) is stored.
pub const REQUEST_JSON: &str = r#"{"amount":120.0}"#;
/// Long enough that no reservation made by the benches ends during a run.
pub const LONG_LEASE: Duration = Duration::from_secs(3600);

// ---------------------------------------------------------------------------------------
// The tool: the article's `send_invoice` with a no-op body, with idem and by hand.

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Invoice {
    pub id: String,
    pub amount: f64,
    #[serde(default)]
    pub replayed: bool,
}

/// The tool's error. The hand-written baselines' fields are only read through `Debug`,
/// in the message of a failed check.
#[derive(Debug)]
#[allow(dead_code)]
pub enum ToolError {
    Idem(idem::Error),
    /// The hand-written tools' answers.
    InProgress,
    Conflict {
        stored: f64,
        requested: f64,
    },
    /// A conflict with what idem's CONFLICT carries: a message, and each differing field
    /// with its stored and requested values.
    Explained {
        message: String,
        differences: Vec<(String, serde_json::Value, serde_json::Value)>,
    },
    Store(String),
}

impl From<idem::Error> for ToolError {
    fn from(error: idem::Error) -> Self {
        ToolError::Idem(error)
    }
}

impl ToolError {
    pub fn is(&self, code: ErrorCode) -> bool {
        match self {
            ToolError::Idem(error) => error.code() == code,
            ToolError::InProgress => code == ErrorCode::InProgress,
            ToolError::Conflict { .. } | ToolError::Explained { .. } => code == ErrorCode::Conflict,
            ToolError::Store(_) => code == ErrorCode::StoreUnavailable,
        }
    }
}

/// Counts the body's effects: in total, and per key where a run numbers its keys.
#[derive(Debug, Default)]
pub struct Effects {
    pub total: AtomicU64,
    pub per_key: Vec<AtomicU32>,
}

impl Effects {
    pub fn numbered(keys: usize) -> Self {
        Effects { total: AtomicU64::new(0), per_key: (0..keys).map(|_| AtomicU32::new(0)).collect() }
    }

    pub fn total(&self) -> u64 {
        self.total.load(Ordering::SeqCst)
    }
}

/// The tool's body, shared by idem and the baselines: records one effect (on the key
/// numbered by `memo` when it is a number) and returns a small invoice.
pub fn body(effects: &Effects, customer: &str, period: &str, amount: f64, memo: &str) -> Invoice {
    black_box((customer, period));
    let n = effects.total.fetch_add(1, Ordering::Relaxed);
    if let Ok(i) = memo.parse::<usize>()
        && let Some(slot) = effects.per_key.get(i)
    {
        slot.fetch_add(1, Ordering::Relaxed);
    }
    Invoice { id: format!("inv-{n}"), amount: black_box(amount), replayed: false }
}

/// The tool with idem, over any store.
pub struct Tools<S> {
    pub store: S,
    pub effects: Arc<Effects>,
}

impl<S: idem::store::BudgetStore> Tools<S> {
    pub fn new(store: S) -> Self {
        Tools { store, effects: Arc::default() }
    }

    /// Create and send the invoice for one customer and billing period.
    #[idempotent(key = "invoice:<customer>:<period>", compare = [amount], store = self.store, namespace = "bench::send_invoice")]
    pub fn send_invoice(
        &self,
        customer: String,
        period: String,
        amount: f64,
        memo: String,
    ) -> Result<Invoice, ToolError> {
        Ok(body(&self.effects, &customer, &period, amount, &memo))
    }

    /// The same tool with a budget no bench reaches: what charging it costs a call.
    #[idempotent(key = "invoice:<customer>:<period>", compare = [amount], store = self.store,
        namespace = "bench::send_invoice_budgeted", budget = INVOICES)]
    pub fn send_invoice_budgeted(
        &self,
        customer: String,
        period: String,
        amount: f64,
        memo: String,
    ) -> Result<Invoice, ToolError> {
        Ok(body(&self.effects, &customer, &period, amount, &memo))
    }
}

/// The tool with idem as an async tool, over any store: the PostgreSQL and Redis rows,
/// whose stores wait on a network.
pub struct AsyncTools<S> {
    pub store: S,
    pub effects: Arc<Effects>,
}

impl<S: Store + 'static> AsyncTools<S> {
    pub fn new(store: S) -> Self {
        AsyncTools { store, effects: Arc::default() }
    }

    /// Create and send the invoice for one customer and billing period.
    #[idempotent(key = "invoice:<customer>:<period>", compare = [amount], store = self.store, namespace = "bench::send_invoice")]
    pub async fn send_invoice(
        &self,
        customer: String,
        period: String,
        amount: f64,
        memo: String,
    ) -> Result<Invoice, ToolError> {
        Ok(body(&self.effects, &customer, &period, amount, &memo))
    }
}

impl<S: idem::store::BudgetStore + 'static> AsyncTools<S> {
    /// The same tool with a budget no bench reaches: what charging it costs a call.
    #[idempotent(key = "invoice:<customer>:<period>", compare = [amount], store = self.store,
        namespace = "bench::send_invoice_budgeted", budget = INVOICES)]
    pub async fn send_invoice_budgeted(
        &self,
        customer: String,
        period: String,
        amount: f64,
        memo: String,
    ) -> Result<Invoice, ToolError> {
        Ok(body(&self.effects, &customer, &period, amount, &memo))
    }
}

/// One call of the async tool with a budget, for [`timed_task`].
pub async fn idem_budgeted_call<S: idem::store::BudgetStore + 'static>(
    tools: Arc<AsyncTools<S>>,
    a: Args,
) -> Result<Invoice, ToolError> {
    tools.send_invoice_budgeted(a.customer, a.period, a.amount, a.memo).await
}

/// One call of the async tool, for [`timed_task`].
pub async fn idem_call<S: Store + 'static>(tools: Arc<AsyncTools<S>>, a: Args) -> Result<Invoice, ToolError> {
    tools.send_invoice(a.customer, a.period, a.amount, a.memo).await
}

/// The budgeted tool's budget: a count no run reaches.
pub static INVOICES: idem::budget::Budget = idem::budget::Budget::count("bench.invoices", 1_000_000_000_000).per_day();

// ---------------------------------------------------------------------------------------
// Arguments and checks.

/// One call's arguments.
#[derive(Clone, Debug)]
pub struct Args {
    pub customer: String,
    pub period: String,
    pub amount: f64,
    pub memo: String,
}

impl Args {
    pub fn new(customer: String, amount: f64) -> Self {
        Args { customer, period: PERIOD.to_owned(), amount, memo: String::new() }
    }
}

/// Customers never used before in this process: every first call gets a distinct key.
pub fn fresh_customers(n: usize) -> Vec<Args> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let first = NEXT.fetch_add(n as u64, Ordering::Relaxed);
    (first..first + n as u64).map(|i| Args::new(format!("Acme {i}"), AMOUNT)).collect()
}

/// `n` calls cycling over `pool` existing keys, starting after where the last batch ended.
pub fn cycling(pool: &[String], cursor: &mut usize, n: usize, amount: f64) -> Vec<Args> {
    (0..n)
        .map(|_| {
            *cursor = (*cursor + 1) % pool.len();
            Args::new(pool[*cursor].clone(), amount)
        })
        .collect()
}

/// Times one batch of calls: `call` runs on each argument set; `check` sees every answer
/// (untimed: the answers are kept and checked after the clock stops).
pub fn timed<F>(args: Vec<Args>, mut call: F, check: impl Fn(&Result<Invoice, ToolError>)) -> Duration
where
    F: FnMut(String, String, f64, String) -> Result<Invoice, ToolError>,
{
    let mut answers = Vec::with_capacity(args.len());
    let start = Instant::now();
    for a in args {
        answers.push(black_box(call(black_box(a.customer), a.period, a.amount, a.memo)));
    }
    let elapsed = start.elapsed();
    answers.iter().for_each(check);
    elapsed
}

pub fn fresh(answer: &Result<Invoice, ToolError>) {
    assert!(matches!(answer, Ok(invoice) if !invoice.replayed), "expected a fresh result, got {answer:?}");
}

pub fn replayed(answer: &Result<Invoice, ToolError>) {
    assert!(matches!(answer, Ok(invoice) if invoice.replayed), "expected a replay, got {answer:?}");
}

pub fn in_progress(answer: &Result<Invoice, ToolError>) {
    assert!(matches!(answer, Err(e) if e.is(ErrorCode::InProgress)), "expected IN_PROGRESS, got {answer:?}");
}

pub fn conflict(answer: &Result<Invoice, ToolError>) {
    assert!(matches!(answer, Err(e) if e.is(ErrorCode::Conflict)), "expected CONFLICT, got {answer:?}");
}

/// How a repeat bench calls and what it must get back.
pub type Check = fn(&Result<Invoice, ToolError>);

/// Reserves `customer`'s key under the bench tool's namespace, as an unfinished call would.
pub fn reserve_in_progress(store: &impl Store, customer: &str) {
    let key = format!("invoice:{customer}:{PERIOD}");
    let id = RecordId { namespace: NAMESPACE, key: &key };
    let reserved = block_on(store.reserve(Reserve { id, request: REQUEST_JSON, lease: LONG_LEASE })).unwrap();
    assert!(matches!(reserved, Reservation::Acquired { .. }), "{key} was taken: {reserved:?}");
}

/// Times one batch of calls inside one task of `runtime` (a worker thread, as a server's
/// tool calls run); every answer is checked after the clock stops.
pub fn timed_task<T, F, Fut>(runtime: &Runtime, side: &Arc<T>, args: Vec<Args>, call: F, check: Check) -> Duration
where
    T: Send + Sync + 'static,
    F: Fn(Arc<T>, Args) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Invoice, ToolError>> + Send,
{
    let side = Arc::clone(side);
    let task = runtime.spawn(async move {
        let mut answers = Vec::with_capacity(args.len());
        let start = Instant::now();
        for a in args {
            answers.push(black_box(call(Arc::clone(&side), black_box(a)).await));
        }
        (start.elapsed(), answers)
    });
    let (elapsed, answers) = runtime.block_on(task).unwrap();
    answers.iter().for_each(check);
    elapsed
}
