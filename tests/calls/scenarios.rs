//! The article's five retry scenarios against the keyed tool, sync and async, on the
//! memory and the SQLite store: each ends with exactly one effect per period.
//!
//! The provider's bodies are held by a gate until a repeat has been told IN_PROGRESS, so
//! the "retry at once" and "two at once" races happen every time, not when timing allows.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use idem::ErrorCode;
use idem::store::Store;
use idem::telemetry::Outcome;
use idem::testing::matrix::{Answer, MatrixReport, RetryMatrix};
use support::{Args, Billing, Invoice, ToolError};

fn matrix() -> RetryMatrix<Args> {
    RetryMatrix {
        first: Args::new("acme", "2026-10", 120.0, "October support"),
        reworded: Args::new("acme", "2026-10", 120.0, "Support, October 2026"),
        changed: Args::new("acme", "2026-10", 150.0, "October support"),
        other: Args::new("acme", "2026-11", 120.0, "October support"),
        patience: Duration::from_millis(50),
    }
}

fn play<S>(billing: Arc<Billing<S>>, is_async: bool) -> MatrixReport<Result<Invoice, ToolError>>
where
    S: Store + 'static,
{
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).build().unwrap();
    let handle = runtime.handle().clone();
    let tools = Arc::clone(&billing);
    let call = move |a: Args| {
        let result = if is_async {
            handle.block_on(tools.send_invoice_async(a.customer.clone(), a.period.clone(), a.amount, a.memo.clone()))
        } else {
            tools.send_invoice(a.customer.clone(), a.period.clone(), a.amount, a.memo.clone())
        };
        // A repeat was told IN_PROGRESS: the race has happened, the first body may finish.
        if matches!(&result, Err(e) if e.code() == Some(ErrorCode::InProgress)) {
            tools.gate.open(&format!("{}:{}", a.customer, a.period));
        }
        result
    };
    let effects = move |a: &Args| billing.effects(&a.customer, &a.period);
    matrix().run(call, effects)
}

fn assert_article_answers(report: &MatrixReport<Result<Invoice, ToolError>>) {
    report.check().unwrap_or_else(|failures| panic!("{failures}"));
    let outcomes: Vec<_> = report.steps.iter().map(|s| s.outcome.unwrap()).collect();
    assert_eq!(outcomes[..4], [Outcome::Fresh, Outcome::InProgress, Outcome::Replayed, Outcome::Conflict]);
    let mut racing = outcomes[4..].to_vec();
    racing.sort_by_key(|o| o.as_str());
    assert_eq!(racing, [Outcome::Fresh, Outcome::InProgress]);

    assert!(matches!(report.steps[0].answer, Answer::TimedOut), "the first call outlives the caller's patience");
    let Answer::Returned(Ok(replay)) = &report.steps[2].answer else {
        panic!("retry later: {:?}", report.steps[2].answer)
    };
    assert!(replay.replayed, "a replay is marked as one");
    assert_eq!(replay.memo, "October support", "the first result, not the reworded request");
    let Answer::Returned(Err(ToolError::Idem(conflict))) = &report.steps[3].answer else {
        panic!("other amount: {:?}", report.steps[3].answer)
    };
    assert_eq!(conflict.code(), ErrorCode::Conflict);
    assert_eq!(conflict.differences().len(), 1);
    let difference = &conflict.differences()[0];
    assert_eq!((difference.field.as_str(), &difference.stored), ("amount", &serde_json::json!(120.0)));
    assert_eq!(difference.stored_text, "120.0");
    assert_eq!(report.first_effects, 1);
    assert_eq!(report.other_effects, 1);
}

#[test]
fn sync_tool_on_the_memory_store() {
    let report = play(Arc::new(Billing::gated(idem::MemoryStore::new())), false);
    assert_article_answers(&report);
}

#[test]
fn async_tool_on_the_memory_store() {
    let report = play(Arc::new(Billing::gated(idem::MemoryStore::new())), true);
    assert_article_answers(&report);
}

#[test]
fn sync_tool_on_the_sqlite_store() {
    let (store, _dir) = support::sqlite_store();
    let report = play(Arc::new(Billing::gated(store)), false);
    assert_article_answers(&report);
}

#[test]
fn async_tool_on_the_sqlite_store() {
    let (store, _dir) = support::sqlite_store();
    let report = play(Arc::new(Billing::gated(store)), true);
    assert_article_answers(&report);
}

/// The same matrix against a tool without idem shows what it guards against: the check
/// fails and the ledger holds duplicates.
#[test]
fn the_matrix_catches_a_tool_without_a_key() {
    let billing = Arc::new(Billing::new(idem::MemoryStore::new()));
    let tools = Arc::clone(&billing);
    let naive = move |a: Args| -> Result<Invoice, ToolError> {
        // What the keyed tool's body does, without the attribute around it.
        tools.create_invoice_for_test(&a)
    };
    let report = matrix().run(naive, |a: &Args| billing.effects(&a.customer, &a.period));
    let failures = report.check().unwrap_err();
    assert!(failures.contains("expected exactly 1 effect"), "{failures}");
    assert!(report.first_effects >= 3, "{}", report.first_effects);
}
