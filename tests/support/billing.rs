//! A stand-in billing tool set shared by the behaviour tests: the article's `send_invoice`,
//! sync and async, as `&self` methods over any store, with an effect ledger to count what
//! really happened and a gate that holds bodies until a test lets them go.

use std::collections::{HashMap, HashSet};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use idem::idempotent;
use idem::store::Store;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Invoice {
    pub id: String,
    pub customer: String,
    pub amount: f64,
    pub memo: String,
    #[serde(default)]
    pub replayed: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error(transparent)]
    Idem(#[from] idem::Error),
    #[error("billing refused: {0}")]
    Billing(String),
}

impl ToolError {
    pub fn code(&self) -> Option<idem::ErrorCode> {
        match self {
            ToolError::Idem(error) => Some(error.code()),
            ToolError::Billing(_) => None,
        }
    }
}

/// Holds bodies of a key until that key is opened. A safety limit keeps a broken build
/// from hanging the suite: a body that waited that long proceeds, and the test's counts
/// then fail.
#[derive(Default)]
pub struct Gate {
    open: Mutex<Option<HashSet<String>>>,
    changed: Condvar,
}

const GATE_LIMIT: Duration = Duration::from_secs(20);

impl Gate {
    /// A gate that holds bodies; a default gate lets every body through.
    pub fn closed() -> Self {
        Gate { open: Mutex::new(Some(HashSet::new())), changed: Condvar::new() }
    }

    pub fn wait(&self, key: &str) {
        let guard = self.open.lock().unwrap();
        let _unused = self
            .changed
            .wait_timeout_while(guard, GATE_LIMIT, |open| open.as_ref().is_some_and(|o| !o.contains(key)))
            .unwrap();
    }

    pub fn open(&self, key: &str) {
        if let Some(open) = self.open.lock().unwrap().as_mut() {
            open.insert(key.to_owned());
        }
        self.changed.notify_all();
    }
}

/// The tools, over store `S`.
pub struct Billing<S> {
    pub store: S,
    pub gate: Gate,
    /// Effects per `customer:period`, as the provider would count invoices.
    ledger: Mutex<HashMap<String, Vec<Invoice>>>,
    /// When set, the body fails with a billing error instead of creating an invoice.
    pub refuse: Mutex<bool>,
}

impl<S> Billing<S> {
    pub fn new(store: S) -> Self {
        Billing { store, gate: Gate::default(), ledger: Mutex::default(), refuse: Mutex::new(false) }
    }

    pub fn gated(store: S) -> Self {
        Billing { gate: Gate::closed(), ..Billing::new(store) }
    }

    pub fn effects(&self, customer: &str, period: &str) -> usize {
        self.ledger.lock().unwrap().get(&format!("{customer}:{period}")).map_or(0, Vec::len)
    }

    pub fn total_effects(&self) -> usize {
        self.ledger.lock().unwrap().values().map(Vec::len).sum()
    }

    /// The provider's side effect without any key, as a tool without idem calls it.
    pub fn create_invoice_for_test(&self, a: &Args) -> Result<Invoice, ToolError> {
        self.create_invoice(&a.customer, &a.period, a.amount, &a.memo)
    }

    /// The provider's side effect: one invoice in the ledger.
    fn create_invoice(&self, customer: &str, period: &str, amount: f64, memo: &str) -> Result<Invoice, ToolError> {
        self.gate.wait(&format!("{customer}:{period}"));
        if *self.refuse.lock().unwrap() {
            return Err(ToolError::Billing("card declined".into()));
        }
        let mut ledger = self.ledger.lock().unwrap();
        let invoices = ledger.entry(format!("{}:{period}", customer.trim().to_lowercase())).or_default();
        let invoice = Invoice {
            id: format!("inv_{customer}_{period}_{}", invoices.len()),
            customer: customer.to_owned(),
            amount,
            memo: memo.to_owned(),
            replayed: false,
        };
        invoices.push(invoice.clone());
        Ok(invoice)
    }
}

impl<S: Store> Billing<S> {
    /// Create and send the invoice for one customer and billing period.
    #[idempotent(key = "invoice:<customer>:<period>", compare = [amount], store = self.store)]
    pub fn send_invoice(
        &self,
        customer: String,
        period: String,
        amount: f64,
        memo: String,
    ) -> Result<Invoice, ToolError> {
        self.create_invoice(&customer, &period, amount, &memo)
    }

    /// The same tool, async.
    #[idempotent(key = "invoice:<customer>:<period>", compare = [amount], store = self.store)]
    pub async fn send_invoice_async(
        &self,
        customer: String,
        period: String,
        amount: f64,
        memo: String,
    ) -> Result<Invoice, ToolError> {
        self.create_invoice(&customer, &period, amount, &memo)
    }
}

/// Arguments of one `send_invoice` call.
#[derive(Clone, Debug)]
pub struct Args {
    pub customer: String,
    pub period: String,
    pub amount: f64,
    pub memo: String,
}

impl Args {
    pub fn new(customer: &str, period: &str, amount: f64, memo: &str) -> Self {
        Args { customer: customer.into(), period: period.into(), amount, memo: memo.into() }
    }
}

/// A fresh SQLite store in its own temporary directory (kept alive by the returned guard).
pub fn sqlite_store() -> (idem::SqliteStore, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = idem::SqliteStore::open(dir.path().join("idem.db")).unwrap();
    (store, dir)
}
