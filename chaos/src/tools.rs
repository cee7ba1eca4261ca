//! The tools the workers call: four `#[idempotent]` tools, each with a slow body that sends
//! its effect to the provider with `idem::current_key()`, as the crate docs' "Provider keys"
//! say to.
//!
//! | tool | provider honours the key | `reconcile` hook | gate |
//! | --- | --- | --- | --- |
//! | `charge` | yes | asks the provider | |
//! | `pay` | yes | asks the provider | approval above 500 |
//! | `ship` | no | none: abandoned is `OUTCOME_UNKNOWN` | a budget of 6 per tenant |
//! | `refund` | no | asks the provider | |
//!
//! `refund` is the case idem cannot cover alone (RELIABILITY.md): its hook answers "not
//! done" when the provider has no effect yet, which is also true while a first call that
//! is alive but past its lease (stopped, cut off from the store) has not sent it yet.

use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use idem::budget::Budget;
use idem::store::{BudgetStore, Store};
use idem::{Abandoned, Reconciled, Status, idempotent};

use crate::events::{self, Answer, Event, THREAD};
use crate::ledger::{Effect, Ledger};

/// Shipments per tenant per day.
pub const SHIP_LIMIT: u64 = 6;
/// Ship orders per tenant: `o0`..`o9` are tenant `t0`'s, and so on.
pub const ORDERS_PER_TENANT: u64 = 10;
static SHIPMENTS: Budget = Budget::count("shipments", SHIP_LIMIT).per_day();

/// Approval is asked above this amount.
pub const APPROVAL_ABOVE: u32 = 500;

/// Where the bodies send their effects: a run on several stores has a ledger for each.
static LEDGER: RwLock<Option<Ledger>> = RwLock::new(None);
/// The deliberately broken variant: `refund`'s hook answers "not done" without asking.
static LYING_HOOK: AtomicBool = AtomicBool::new(false);

/// Sets where the bodies send their effects, and whether `refund`'s hook lies.
pub fn init(ledger: Ledger, lying_hook: bool) {
    *LEDGER.write().expect("the ledger is not poisoned") = Some(ledger);
    LYING_HOOK.store(lying_hook, Ordering::SeqCst);
}

fn ledger() -> Ledger {
    LEDGER.read().expect("the ledger is not poisoned").clone().expect("tools::init ran")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tool {
    Charge,
    Pay,
    Ship,
    Refund,
}

impl Tool {
    pub const ALL: [Tool; 4] = [Tool::Charge, Tool::Pay, Tool::Ship, Tool::Refund];

    pub fn name(self) -> &'static str {
        match self {
            Tool::Charge => "charge",
            Tool::Pay => "pay",
            Tool::Ship => "ship",
            Tool::Refund => "refund",
        }
    }

    pub fn named(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|tool| tool.name() == name)
    }

    /// Whether the provider dedupes this tool's sends by key.
    pub fn honours_key(self) -> bool {
        matches!(self, Tool::Charge | Tool::Pay)
    }

    /// The amount every caller of order `k` means; a call that changes it is a compared
    /// field that differs.
    pub fn amount(self, k: u64) -> u32 {
        let k = k as u32;
        match self {
            Tool::Charge => 100 + k * 7 % 200,
            Tool::Pay => 300 + k * 137 % 500,
            Tool::Ship => 1 + k % 5,
            Tool::Refund => 10 + k % 50,
        }
    }
}

/// What the checker groups by: the tool and the order, as the key normalizes it.
pub fn action(tool: Tool, order: &str) -> String {
    format!("{}:{}", tool.name(), order.to_lowercase())
}

/// The tenant of a ship order: `o23` is `t2`'s.
pub fn tenant_of(order: &str) -> String {
    let k: u64 = order[1..].parse().expect("orders are o<number>");
    format!("t{}", k / ORDERS_PER_TENANT)
}

/// A slow body: a pause, the provider call with the derived key, another pause; a kill
/// may land anywhere in it.
fn body(tool: Tool, order: &str, amount: u32) -> Result<Effect, idem::Error> {
    let action = action(tool, order);
    let thread = THREAD.get();
    events::write(Event::Enter { tool: tool.name().into(), action: action.clone(), amount, thread });
    let key = idem::current_key().expect("the body runs under a key").to_string();
    std::thread::sleep(Duration::from_millis(crate::jitter(300)));
    let effect = ledger().send(tool.name(), &action, &key, amount, tool.honours_key());
    std::thread::sleep(Duration::from_millis(crate::jitter(500)));
    Ok(effect)
}

/// Asks the provider about an abandoned call, by the key it was sent with.
fn reconcile(tool: Tool, abandoned: &Abandoned) -> Reconciled<Effect> {
    let key = abandoned.key().to_string();
    let asked_ms = crate::now_ms();
    let (found, ledger_seen) = ledger().lookup(&key);
    let answer = match found {
        _ if tool == Tool::Refund && LYING_HOOK.load(Ordering::SeqCst) => Reconciled::NotDone,
        Some(effect) => Reconciled::Done(effect),
        None => Reconciled::NotDone,
    };
    let said = match &answer {
        Reconciled::Done(effect) => format!("done ({})", effect.id),
        _ => "not done".to_owned(),
    };
    let action = format!("{}:{}", tool.name(), key.rsplit(':').next().unwrap_or_default());
    events::write(Event::Hook {
        tool: tool.name().into(),
        action,
        answer: said,
        asked_ms,
        ledger_seen,
        thread: THREAD.get(),
    });
    answer
}

fn notify_approvers(request: &idem::approval::Request) {
    ledger().notified(&request.key);
}

/// The tools, on one store.
pub struct Tools<S> {
    pub store: S,
}

impl<S: Store + BudgetStore> Tools<S> {
    /// Charges a card.
    #[idempotent(key = "charge:<order>", compare = [amount], lease = "1s", namespace = "chaos::charge",
        store = self.store, reconcile = |abandoned: Abandoned| reconcile(Tool::Charge, &abandoned))]
    pub fn charge(&self, order: String, amount: u32, memo: String) -> Result<Effect, idem::Error> {
        let _ = memo;
        body(Tool::Charge, &order, amount)
    }

    /// Pays a supplier; a person approves amounts above 500.
    #[idempotent(key = "pay:<order>", compare = [amount], lease = "1s", namespace = "chaos::pay",
        approval(when = amount > APPROVAL_ABOVE, notify = notify_approvers),
        store = self.store, reconcile = |abandoned: Abandoned| reconcile(Tool::Pay, &abandoned))]
    pub fn pay(&self, order: String, amount: u32, memo: String) -> Result<Effect, idem::Error> {
        let _ = memo;
        body(Tool::Pay, &order, amount)
    }

    /// Ships a parcel, within the tenant's budget.
    #[idempotent(key = "ship:<order>", compare = [amount], lease = "1s", namespace = "chaos::ship",
        scope = tenant_of(&order), budget = SHIPMENTS, store = self.store)]
    pub fn ship(&self, order: String, amount: u32, memo: String) -> Result<Effect, idem::Error> {
        let _ = memo;
        body(Tool::Ship, &order, amount)
    }

    /// Refunds an order.
    #[idempotent(key = "refund:<order>", compare = [amount], lease = "1s", namespace = "chaos::refund",
        store = self.store, reconcile = |abandoned: Abandoned| reconcile(Tool::Refund, &abandoned))]
    pub fn refund(&self, order: String, amount: u32, memo: String) -> Result<Effect, idem::Error> {
        let _ = memo;
        body(Tool::Refund, &order, amount)
    }

    /// Calls `tool`, and says what the caller was told.
    pub fn call(&self, tool: Tool, order: String, amount: u32, memo: String) -> Answer {
        let result = match tool {
            Tool::Charge => self.charge(order, amount, memo),
            Tool::Pay => self.pay(order, amount, memo),
            Tool::Ship => self.ship(order, amount, memo),
            Tool::Refund => self.refund(order, amount, memo),
        };
        match result {
            Ok(effect) => Answer::Ok { effect },
            Err(error) => match error.differences() {
                [difference] => {
                    Answer::Conflict { stored: difference.stored.clone(), requested: difference.requested.clone() }
                }
                _ => Answer::Refused { code: error.code().to_string() },
            },
        }
    }

    /// Reads `tool`'s status for `order`.
    pub fn status(&self, tool: Tool, order: String) -> Answer {
        let status = match tool {
            Tool::Charge => self.charge_status(order),
            Tool::Pay => self.pay_status(order),
            Tool::Ship => self.ship_status(order),
            Tool::Refund => self.refund_status(order),
        };
        match status {
            Ok(Status::Completed(effect)) => Answer::Status { status: "completed".into(), effect: Some(effect) },
            Ok(status) => Answer::Status { status: status_name(&status), effect: None },
            Err(error) => Answer::Refused { code: error.code().to_string() },
        }
    }
}

/// The status's name as a model reads it (`in_progress`, `unknown`, `awaiting_approval`, ...).
fn status_name(status: &Status<Effect>) -> String {
    let value = serde_json::to_value(status).expect("a status serializes");
    value["status"].as_str().unwrap_or("unnamed").to_owned()
}
