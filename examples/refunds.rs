//! A runaway agent meets a budget. `refund` is keyed by the order, so a retry of one refund
//! never pays twice; but a model that loops over a list of complaints issues many
//! different refunds, each with its own correct key. The budget stops it: at most 3
//! refunds and at most 500 EUR refunded per tenant per day, counted by the store in the
//! same write that reserves each key. The model retries a refund (a replay: nothing spent),
//! loops over eight orders (three refunds run, the rest answer BUDGET_EXCEEDED), another
//! tenant still has its own budget, and an operator raises one window by one refund, with
//! a note (`idem raise refunds 1 --scope acme --by ops --note ...` from a shell).
//!
//! ```sh
//! cargo run -p idem-examples --bin refunds
//! ```

use std::sync::{Arc, Mutex};

use idem::budget::Budget;
use idem::store::Admin;
use idem::store::budget::{Adjustment, BudgetChange, BudgetQuery, UNIT};
use idem::{MemoryStore, idempotent};

/// At most 3 refunds per tenant per day.
static REFUNDS: Budget = Budget::count("refunds", 3).per_day();
/// At most 500 EUR refunded per tenant per day.
static REFUNDED: Budget = Budget::sum_of("refunded", "amount", 500.0).per_day();

/// What the payment provider did: one line per refund.
static PAID_BACK: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct Shop {
    /// One store for every tenant's shop.
    store: Arc<MemoryStore>,
    /// The authenticated tenant: never from the model's arguments.
    tenant: String,
}

impl Shop {
    /// Refund an order. At most 3 refunds per tenant per day.
    #[idempotent(key = "refund:<order>", compare = [amount], scope = self.tenant, budget = REFUNDS,
        namespace = "shop::refund", store = self.store)]
    fn refund(&self, order: String, amount: f64) -> Result<String, idem::Error> {
        let mut paid = PAID_BACK.lock().expect("the provider is not poisoned");
        paid.push(format!("{amount:.2} EUR for {order} ({})", self.tenant));
        Ok(format!("re_{}", paid.len()))
    }

    /// Credit an order's customer. At most 500 EUR per tenant per day.
    #[idempotent(key = "credit:<order>", compare = [amount], scope = self.tenant, budget = REFUNDED,
        namespace = "shop::credit", store = self.store)]
    fn credit(&self, order: String, amount: f64) -> Result<String, idem::Error> {
        let mut paid = PAID_BACK.lock().expect("the provider is not poisoned");
        paid.push(format!("{amount:.2} EUR credit for {order} ({})", self.tenant));
        Ok(format!("cr_{}", paid.len()))
    }
}

/// What the model reads of an answer.
fn shown(answer: Result<String, idem::Error>) -> String {
    match answer {
        Ok(refund) => format!("ok: {refund}"),
        Err(error) => format!("{}: {}", error.code(), error.message()),
    }
}

fn main() {
    let store = Arc::new(MemoryStore::new());
    let acme = Shop { store: Arc::clone(&store), tenant: "acme".into() };

    println!("the model refunds order 1001, and retries it twice:");
    for _ in 0..3 {
        println!("  {}", shown(acme.refund("1001".into(), 40.0)));
    }
    println!("the model loops over seven more complaints:");
    for order in 1002..=1008 {
        println!("  {order}: {}", shown(acme.refund(order.to_string(), 25.0)));
    }
    println!("credits add up amounts: 300 + 150 fit, 100 more does not:");
    for (order, amount) in [("2001", 300.0), ("2002", 150.0), ("2003", 100.0)] {
        println!("  {order} {amount}: {}", shown(acme.credit(order.into(), amount)));
    }

    let globex = Shop { store: Arc::clone(&store), tenant: "globex".into() };
    println!("globex has a budget of its own: {}", shown(globex.refund("1002".into(), 25.0)));

    // An operator allows acme one more refund today, with a note; in a shell:
    // idem raise refunds 1 --scope acme --by ops --note "agreed with acme's manager"
    let scope = idem::store::scope_prefix("acme");
    let query = BudgetQuery { budget: Some("refunds"), scope: Some(&scope), current: true };
    let window = store.budgets(&query).expect("the memory store keeps budgets").remove(0);
    let raise = Adjustment {
        window: (&window.budget, &window.scope, window.start_ms),
        change: BudgetChange::Raise(UNIT),
        by: "ops",
        note: "agreed with acme's manager",
    };
    store.adjust_budget(&raise).expect("a window that was charged");
    println!("ops raises acme's refunds by one: {}", shown(acme.refund("1004".into(), 25.0)));

    for window in store.budgets(&BudgetQuery::default()).expect("the memory store keeps budgets") {
        let tenant = if window.scope == scope { "acme" } else { "globex" };
        println!(
            "budget {} for {tenant}: used {} of {}",
            window.budget,
            window.used as f64 / UNIT as f64,
            window.allowed() as f64 / UNIT as f64
        );
    }
    let paid = PAID_BACK.lock().expect("the provider is not poisoned");
    println!("paid back: {}", paid.len());
    for line in paid.iter() {
        println!("  {line}");
    }
}
