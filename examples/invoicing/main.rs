//! The article's invoicing agent, with a scripted stand-in for the model.
//!
//! A billing API that takes 3 s sits behind a tool wrapper that gives up after 2 s.
//! Part 1: a tool without a key; the model retries every TIMEOUT, three invoices.
//! Part 2: the same tool with `#[idempotent]`; the model checks the status tool, one invoice.
//! Part 3: the five ways agent stacks repeat a call; one invoice per period.
//!
//! `cargo run -p idem-examples --bin invoicing`. `IDEM_DEMO_DELAY_MS` and
//! `IDEM_DEMO_PATIENCE_MS` set the billing delay (3000) and the wrapper's patience (2000).

use std::process::ExitCode;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use idem::testing::matrix::RetryMatrix;
use idem::{SqliteStore, Status, idempotent};
use serde::{Serialize, Serializer};

mod billing;

use billing::{Billing, BillingError, Invoice};

type Failure = Box<dyn std::error::Error>;

/// A tool's error, shown to the model as `{"error": {...}}`.
#[derive(Debug, thiserror::Error)]
enum ToolError {
    #[error(transparent)]
    Idem(#[from] idem::Error),
    #[error(transparent)]
    Billing(#[from] BillingError),
}

impl Serialize for ToolError {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ToolError::Idem(error) => error.serialize(serializer),
            ToolError::Billing(error) => serde_json::json!({"error": {
                "code": "BILLING_ERROR", "message": error.to_string(), "retryable": false,
                "suggestion": "Tell the user the billing provider failed."
            }})
            .serialize(serializer),
        }
    }
}

/// The naive tool's arguments: "the October invoice" exists only in the memo.
#[derive(Clone, Serialize)]
struct NaiveArgs {
    customer: String,
    amount: f64,
    memo: String,
}

/// The keyed tool's arguments: the period gives the key something stable to use.
#[derive(Clone, Serialize)]
struct InvoiceArgs {
    customer: String,
    period: String,
    amount: f64,
    memo: String,
}

#[derive(Serialize)]
struct StatusArgs<'a> {
    customer: &'a str,
    period: &'a str,
}

/// The agent runtime's tool wrapper: it answers TIMEOUT after `patience`, and the work goes
/// on in its thread, which cannot be stopped (like a sync tool in the article's framework).
struct Wrapper {
    patience: Duration,
    background: Mutex<Vec<JoinHandle<()>>>,
}

impl Wrapper {
    /// Runs one tool call and prints it as the article does. `None` is a TIMEOUT.
    fn call<T, E>(
        &self,
        name: &str,
        args: &impl Serialize,
        run: impl FnOnce() -> Result<T, E> + Send + 'static,
    ) -> Option<Result<T, E>>
    where
        T: Serialize + Send + 'static,
        E: Serialize + Send + 'static,
    {
        println!("tool call: {name} {}", json(args));
        let (send, receive) = mpsc::channel();
        let work = thread::spawn(move || drop(send.send(run())));
        let answer = match receive.recv_timeout(self.patience) {
            Ok(result) => Some(result),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => panic!("tool {name} panicked"),
        };
        self.background.lock().unwrap().push(work);
        let shown = match &answer {
            Some(Ok(value)) => json(value),
            Some(Err(error)) => json(error),
            None => self.timeout_error(name),
        };
        println!("tool result: {shown}");
        answer
    }

    /// What the article's framework tells the model: "retryable", which is wrong for a write.
    fn timeout_error(&self, name: &str) -> String {
        let secs = self.patience.as_secs_f64();
        json(&serde_json::json!({"error": {
            "code": "TIMEOUT",
            "message": format!("Tool '{name}' timed out after {secs:.1}s"),
            "retryable": true,
            "suggestion": format!("The tool did not finish within {secs:.1}s. Try again later or with a longer timeout."),
        }}))
    }

    /// Waits for every call's work, including calls the wrapper gave up on.
    fn join_background(&self) {
        for work in self.background.lock().unwrap().drain(..) {
            work.join().expect("a tool's work panicked");
        }
    }
}

fn json(value: &impl Serialize) -> String {
    serde_json::to_string(value).expect("tool values serialize")
}

/// The naive tool: no key, no period.
fn send_invoice_naive(billing: &Billing, args: NaiveArgs) -> Result<Invoice, ToolError> {
    Ok(billing.create_invoice(&args.customer, args.amount, &args.memo, None)?)
}

/// The keyed tools, each instance with its own idem store.
struct Invoicing {
    billing: Arc<Billing>,
    store: SqliteStore,
}

impl Invoicing {
    /// Create and send the invoice for one customer and billing period.
    #[idempotent(key = "invoice:<customer>:<period>", compare = [amount], store = self.store)]
    fn send_invoice(&self, customer: String, period: String, amount: f64, memo: String) -> Result<Invoice, ToolError> {
        // The provider enforces the same key: idem's record and the ledger agree on it.
        let key = idem::current_key();
        Ok(self.billing.create_invoice(&customer, amount, &memo, key.as_deref())?)
    }

    /// The call an agent framework makes from the model's arguments.
    fn send(&self, args: InvoiceArgs) -> Result<Invoice, ToolError> {
        self.send_invoice(args.customer, args.period, args.amount, args.memo)
    }
}

/// Part 1, the model without instructions: a TIMEOUT says "retryable", so it retries.
fn naive_model(billing: &Arc<Billing>, wrapper: &Wrapper) -> String {
    let args = NaiveArgs { customer: "acme".into(), amount: 120.0, memo: "Support for October".into() };
    for _ in 0..3 {
        let call = {
            let (billing, args) = (billing.clone(), args.clone());
            move || send_invoice_naive(&billing, args)
        };
        match wrapper.call("send_invoice", &args, call) {
            Some(Ok(invoice)) => return format!("Invoice {} has been sent.", invoice.id),
            Some(Err(error)) => return format!("I could not send the invoice: {error}"),
            None => {} // TIMEOUT says "retryable": true, so the model tries again
        }
    }
    "I tried to send the invoice but the invoicing tool timed out (retryable). [...]".into()
}

/// How long the model waits before it checks an in-progress invoice again: a turn of the
/// model plus its pause. 1.5 s rather than 1 s so that, with the default 2 s patience and
/// 3 s delay, the second check does not race the invoice's completion.
const MODEL_WAIT: Duration = Duration::from_millis(1500);
/// How often the model checks before it gives up and tells the user.
const MAX_CHECKS: usize = 10;

/// What the model learns from a tool's description: the tool to call when an outcome is
/// unknown, from the sentence `#[idempotent]` writes ("After a TIMEOUT or IN_PROGRESS, call
/// send_invoice_status with ...").
fn status_tool_in(description: &str) -> Option<&str> {
    let (_, rest) = description.split_once("After a TIMEOUT or IN_PROGRESS, call ")?;
    rest.split_whitespace().next()
}

/// Part 2, the model that reads the tool's description (the article's fixed agent): after a
/// TIMEOUT or IN_PROGRESS the outcome is unknown, so it calls the status tool the description
/// names before acting again, never the tool.
fn keyed_model(tools: &Arc<Invoicing>, wrapper: &Wrapper) -> String {
    let description = Invoicing::send_invoice_description();
    println!("the model reads send_invoice's description:\n  {}", description.replace("\n\n", "\n  "));
    let Some(status_tool) = status_tool_in(&description) else {
        return "The description names no status tool; I will not guess.".into();
    };
    let (customer, period) = ("acme", "2026-10");
    let args = InvoiceArgs {
        customer: customer.into(),
        period: period.into(),
        amount: 120.0,
        memo: "October 2026 support".into(),
    };
    let call = {
        let (tools, args) = (tools.clone(), args.clone());
        move || tools.send(args)
    };
    let sent = |invoice: &Invoice| {
        format!("Invoice for {customer}, period {period}, amount €{} has been sent.", invoice.amount)
    };
    match wrapper.call("send_invoice", &args, call) {
        Some(Ok(invoice)) => return sent(&invoice),
        Some(Err(ToolError::Idem(error))) if error.code() == idem::ErrorCode::InProgress => {}
        Some(Err(error)) => return format!("I could not send the invoice: {error}"),
        None => {}
    }
    // The outcome is unknown: check with the tool the description names, never send again.
    if status_tool != "send_invoice_status" {
        return format!("The description sends me to {status_tool}, a tool I do not have.");
    }
    for _ in 0..MAX_CHECKS {
        let tools = tools.clone();
        let status_args = StatusArgs { customer, period };
        let status = move || tools.send_invoice_status(customer.into(), period.into());
        match wrapper.call(status_tool, &status_args, status) {
            Some(Ok(Status::Completed(invoice))) => return sent(&invoice),
            Some(Ok(Status::InProgress { .. })) | None => thread::sleep(MODEL_WAIT),
            Some(Ok(other)) => return format!("The invoice was not sent ({}).", json(&other)),
            Some(Err(error)) => return format!("I could not check the invoice: {error}"),
        }
    }
    "The invoice is still being sent; I will check again later.".into()
}

fn print_ledger(billing: &Billing) -> Result<usize, Failure> {
    let rows = billing.ledger()?;
    println!("ledger:");
    for row in &rows {
        println!("  {row}");
    }
    Ok(rows.len())
}

fn part1(billing: &Arc<Billing>, wrapper: &Wrapper) -> Result<usize, Failure> {
    println!("== Part 1: a tool without a key ==");
    billing.reset()?;
    println!("agent: {}", naive_model(billing, wrapper));
    wrapper.join_background(); // the calls that timed out finish in their threads
    print_ledger(billing)
}

fn part2(billing: &Arc<Billing>, wrapper: &Wrapper, store: SqliteStore) -> Result<usize, Failure> {
    println!("\n== Part 2: #[idempotent] and a status tool ==");
    billing.reset()?;
    let tools = Arc::new(Invoicing { billing: billing.clone(), store });
    println!("agent: {}", keyed_model(&tools, wrapper));
    wrapper.join_background();
    print_ledger(billing)
}

/// What Part 3 found: the matrix's verdict and the invoices in the ledger.
struct MatrixResult {
    passed: bool,
    total: usize,
    october: usize,
    november: usize,
}

/// Part 3: the five retry scenarios against the keyed tool, with a fresh idem store.
fn part3(billing: &Arc<Billing>, patience: Duration, store: SqliteStore) -> Result<MatrixResult, Failure> {
    println!("\n== Part 3: five ways to repeat a call ==");
    billing.reset()?;
    let tools = Arc::new(Invoicing { billing: billing.clone(), store });
    let args = |period: &str, amount: f64, memo: &str| InvoiceArgs {
        customer: "acme".into(),
        period: period.into(),
        amount,
        memo: memo.into(),
    };
    let matrix = RetryMatrix {
        first: args("2026-10", 120.0, "October support"),
        reworded: args("2026-10", 120.0, "Support, October 2026"),
        changed: args("2026-10", 150.0, "October support"),
        other: args("2026-11", 120.0, "November support"),
        patience,
    };
    let ledger = billing.clone();
    let invoices_for = move |a: &InvoiceArgs| ledger.count_keyed(&format!(":{}", a.period)).unwrap_or(usize::MAX);
    let report = matrix.run(move |a| tools.send(a), &invoices_for);
    // Each line ends with how idem answered the call once it finished, even if the caller
    // had given up: line 1's TIMEOUT is a call that ran and completed its key.
    for line in report.lines(patience, show_answer) {
        println!("{line}");
    }
    let passed = match report.check() {
        Ok(()) => true,
        Err(problems) => {
            println!("retry matrix FAILED:\n{problems}");
            false
        }
    };
    Ok(MatrixResult {
        passed,
        total: print_ledger(billing)?,
        october: invoices_for(&matrix.first),
        november: invoices_for(&matrix.other),
    })
}

/// A matrix answer the way the article prints it: the result, or `CODE: message`.
fn show_answer(result: &Result<Invoice, ToolError>) -> String {
    match result {
        Ok(invoice) => json(invoice),
        Err(ToolError::Idem(error)) => format!("{}: {}", error.code(), error.message()),
        Err(error) => error.to_string(),
    }
}

fn invoices(n: usize) -> String {
    format!("{n} invoice{}", if n == 1 { "" } else { "s" })
}

fn env_ms(name: &str, default: u64) -> Result<Duration, Failure> {
    match std::env::var(name) {
        Ok(value) => Ok(Duration::from_millis(value.parse().map_err(|e| format!("{name}={value:?}: {e}"))?)),
        Err(_) => Ok(Duration::from_millis(default)),
    }
}

fn run() -> Result<bool, Failure> {
    let delay = env_ms("IDEM_DEMO_DELAY_MS", 3000)?;
    let patience = env_ms("IDEM_DEMO_PATIENCE_MS", 2000)?;
    println!(
        "The billing API takes {:.1}s; the tool wrapper waits {:.1}s.\n",
        delay.as_secs_f64(),
        patience.as_secs_f64()
    );
    if patience >= delay {
        println!("Nothing will time out, so Part 1 shows no duplicates: set a delay above the patience.\n");
    }
    let dir = tempfile::tempdir()?;
    let billing = Arc::new(Billing::open(dir.path().join("ledger.db"), delay)?);
    let wrapper = Wrapper { patience, background: Mutex::new(Vec::new()) };

    let naive = part1(&billing, &wrapper)?;
    let keyed = part2(&billing, &wrapper, SqliteStore::open(dir.path().join("idem.db"))?)?;
    // A fresh store, so that Part 2's record for acme 2026-10 does not answer Part 3's calls.
    let matrix = part3(&billing, patience, SqliteStore::open(dir.path().join("idem-matrix.db"))?)?;

    let MatrixResult { passed, total, october, november } = matrix;
    let per_period = if october == november {
        format!("{october} per period")
    } else {
        format!("2026-10: {october}, 2026-11: {november}")
    };
    println!("\nnaive: {}, keyed: {}, matrix: {} ({per_period})", invoices(naive), invoices(keyed), invoices(total));
    Ok(naive == 3 && keyed == 1 && total == 2 && october == 1 && november == 1 && passed)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("invoicing demo failed: {error}");
            ExitCode::FAILURE
        }
    }
}
