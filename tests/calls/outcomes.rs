//! Every answer of DESIGN.md section 3 and the traps of section 8 that the core covers,
//! each through a real tool.

use crate::support;
use crate::support::broken_store;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use broken_store::BrokenStore;
use idem::telemetry::Outcome;
use idem::{ErrorCode, MemoryStore, Status, idempotent};
use support::{Billing, ToolError};

fn code<T: std::fmt::Debug>(result: Result<T, ToolError>) -> ErrorCode {
    match result {
        Err(ToolError::Idem(error)) => error.code(),
        other => panic!("expected an idem error, got {other:?}"),
    }
}

#[test]
fn a_completed_call_is_replayed_and_the_status_shows_it() {
    let billing = Billing::new(MemoryStore::new());
    assert_eq!(billing.send_invoice_status("acme".into(), "2026-10".into()).unwrap(), Status::NotFound);
    let first = billing.send_invoice("acme".into(), "2026-10".into(), 120.0, "October".into()).unwrap();
    let (again, calls) =
        idem::telemetry::observe(|| billing.send_invoice("Acme ".into(), "2026-10".into(), 120.0, "Oct.".into()));
    let again = again.unwrap();
    assert_eq!(calls[0].outcome, Outcome::Replayed);
    assert_eq!(calls[0].key.as_ref().unwrap().as_str(), "invoice:acme:2026-10");
    assert_eq!((again.id.as_str(), again.replayed), (first.id.as_str(), true));
    assert_eq!(billing.effects("acme", "2026-10"), 1);
    match billing.send_invoice_status("ACME".into(), "2026-10".into()).unwrap() {
        Status::Completed(invoice) => assert_eq!(invoice, first),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_conflict_names_each_field_and_never_replays() {
    let billing = Billing::new(MemoryStore::new());
    billing.send_invoice("acme".into(), "2026-10".into(), 120.0, "October".into()).unwrap();
    let Err(ToolError::Idem(error)) = billing.send_invoice("acme".into(), "2026-10".into(), 150.0, "October".into())
    else {
        panic!("expected CONFLICT")
    };
    assert_eq!(error.code(), ErrorCode::Conflict);
    assert!(!error.retryable());
    assert!(error.message().contains("amount was 120.0, now 150.0"), "{}", error.message());
    assert!(error.suggestion().unwrap().contains("send_invoice_status"));
    let json = error.to_json();
    assert_eq!(json["error"]["code"], "CONFLICT");
    assert_eq!(json["error"]["retryable"], false);
    assert_eq!(billing.effects("acme", "2026-10"), 1);
}

#[test]
fn conflict_wins_over_in_progress() {
    let billing = Arc::new(Billing::gated(MemoryStore::new()));
    let first = {
        let billing = Arc::clone(&billing);
        std::thread::spawn(move || billing.send_invoice("acme".into(), "2026-10".into(), 120.0, "m".into()))
    };
    // Wait until the first call holds the key (its body is held by the gate).
    while !matches!(billing.send_invoice_status("acme".into(), "2026-10".into()), Ok(Status::InProgress { .. })) {
        std::thread::yield_now();
    }
    let same = billing.send_invoice("acme".into(), "2026-10".into(), 120.0, "m".into());
    let other = billing.send_invoice("acme".into(), "2026-10".into(), 150.0, "m".into());
    billing.gate.open("acme:2026-10");
    first.join().unwrap().unwrap();
    assert_eq!(code(same), ErrorCode::InProgress);
    assert_eq!(code(other), ErrorCode::Conflict);
}

#[test]
fn an_error_releases_the_key_so_a_retry_runs() {
    let billing = Billing::new(MemoryStore::new());
    *billing.refuse.lock().unwrap() = true;
    let (failed, calls) =
        idem::telemetry::observe(|| billing.send_invoice("acme".into(), "2026-10".into(), 1.0, "m".into()));
    assert!(matches!(failed, Err(ToolError::Billing(_))));
    assert_eq!(calls[0].outcome, Outcome::Released);
    assert_eq!(billing.send_invoice_status("acme".into(), "2026-10".into()).unwrap(), Status::NotFound);
    *billing.refuse.lock().unwrap() = false;
    billing.send_invoice("acme".into(), "2026-10".into(), 1.0, "m".into()).unwrap();
    assert_eq!(billing.effects("acme", "2026-10"), 1);
}

#[test]
fn a_panic_leaves_the_key_reserved() {
    static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    #[idempotent(key = "crash:<id>", store = *STORE)]
    fn crashes(id: u32) -> Result<(), idem::Error> {
        RUNS.fetch_add(1, Ordering::SeqCst);
        panic!("the provider call crashed after sending");
    }
    assert!(std::panic::catch_unwind(|| crashes(7)).is_err());
    assert!(matches!(crashes_status(7).unwrap(), Status::InProgress { .. }));
    assert_eq!(crashes(7).unwrap_err().code(), ErrorCode::InProgress, "never re-run after a panic");
    assert_eq!(RUNS.load(Ordering::SeqCst), 1);
}

#[test]
fn a_dropped_future_leaves_the_key_reserved() {
    static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);
    static SENT: AtomicUsize = AtomicUsize::new(0);
    #[idempotent(key = "slow:<id>", store = *STORE)]
    async fn slow(id: u32) -> Result<(), idem::Error> {
        SENT.fetch_add(1, Ordering::SeqCst); // the provider has the request...
        std::future::pending::<()>().await; // ...and its answer never comes in time
        Ok(())
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    runtime.block_on(async {
        // The caller's timeout drops the call's future at its await.
        assert!(tokio::time::timeout(Duration::from_millis(10), slow(1)).await.is_err());
        assert!(matches!(slow_status(1).await.unwrap(), Status::InProgress { .. }));
        assert_eq!(slow(1).await.unwrap_err().code(), ErrorCode::InProgress, "never re-run after a cancel");
    });
    assert_eq!(SENT.load(Ordering::SeqCst), 1);
}

#[test]
fn an_empty_key_field_is_invalid_and_the_body_does_not_run() {
    let billing = Billing::new(MemoryStore::new());
    for customer in ["", "   ", "\u{3000}"] {
        let result = billing.send_invoice(customer.into(), "2026-10".into(), 1.0, "m".into());
        assert_eq!(code(result), ErrorCode::InvalidKey);
    }
    assert_eq!(billing.total_effects(), 0);
}

#[test]
fn a_failing_store_means_the_body_does_not_run() {
    let billing = Billing::new(BrokenStore);
    let Err(ToolError::Idem(error)) = billing.send_invoice("acme".into(), "2026-10".into(), 1.0, "m".into()) else {
        panic!("expected STORE_UNAVAILABLE")
    };
    assert_eq!(error.code(), ErrorCode::StoreUnavailable);
    assert!(error.retryable());
    assert!(error.message().contains("connection refused"), "{error}");
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let result = runtime.block_on(billing.send_invoice_async("acme".into(), "2026-10".into(), 1.0, "m".into()));
    assert_eq!(code(result), ErrorCode::StoreUnavailable);
    assert_eq!(billing.total_effects(), 0);
    assert_eq!(
        billing.send_invoice_status("acme".into(), "2026-10".into()).unwrap_err().code(),
        ErrorCode::StoreUnavailable
    );
}

#[test]
fn falsy_results_replay_as_themselves() {
    static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    macro_rules! falsy_tool {
        ($name:ident, $ty:ty, $value:expr) => {
            #[idempotent(key = "falsy:<id>", store = *STORE)]
            fn $name(id: u8) -> Result<$ty, idem::Error> {
                RUNS.fetch_add(1, Ordering::SeqCst);
                Ok($value)
            }
            assert_eq!($name(1).unwrap(), $value);
            assert_eq!($name(1).unwrap(), $value, "{} replays as itself", stringify!($ty));
        };
    }
    falsy_tool!(zero, u32, 0);
    falsy_tool!(no, bool, false);
    falsy_tool!(empty_string, String, String::new());
    falsy_tool!(empty_list, Vec<u8>, Vec::<u8>::new());
    falsy_tool!(unit, (), ());
    falsy_tool!(none, Option<u8>, None);
    falsy_tool!(empty_object, std::collections::BTreeMap<String, u8>, std::collections::BTreeMap::new());
    assert_eq!(RUNS.load(Ordering::SeqCst), 7, "each body ran once");
}

#[test]
fn a_body_that_changes_its_inputs_does_not_change_what_is_recorded() {
    let store = MemoryStore::new();
    #[idempotent(key = "order:<id>", compare = [amount], store = store)]
    fn order(store: &MemoryStore, mut id: String, mut amount: u32) -> Result<String, idem::Error> {
        id.push_str("-changed");
        amount += 1;
        Ok(format!("{id} {amount}"))
    }
    assert_eq!(order(&store, "a".into(), 1).unwrap(), "a-changed 2");
    assert!(matches!(order_status(&store, "a".into()).unwrap(), Status::Completed(_)));
    assert_eq!(order_status(&store, "a-changed".into()).unwrap(), Status::NotFound);
    assert_eq!(order(&store, "a".into(), 1).unwrap(), "a-changed 2", "same compared value: a replay");
}

#[test]
fn the_body_reads_its_key_and_derives_step_keys() {
    static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);
    #[idempotent(key = "invoice:<customer>:<period>", store = *STORE)]
    fn keyed(customer: String, period: String) -> Result<(String, String), idem::Error> {
        let key = idem::current_key().expect("inside the body");
        Ok((key.to_string(), key.step("email")))
    }
    assert_eq!(
        keyed("Acme".into(), "2026-10".into()).unwrap(),
        ("invoice:acme:2026-10".to_owned(), "invoice-email:acme:2026-10".to_owned())
    );
    assert!(idem::current_key().is_none(), "outside a body");
}

#[test]
fn a_stored_result_that_no_longer_reads_is_an_error_not_a_rerun() {
    let store = MemoryStore::new();
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    #[idempotent(key = "v:<id>", namespace = "shared-versioned-tool", store = store)]
    fn version_one(store: &MemoryStore, id: u8) -> Result<String, idem::Error> {
        Ok("text".into())
    }
    #[idempotent(key = "v:<id>", namespace = "shared-versioned-tool", store = store)]
    fn version_two(store: &MemoryStore, id: u8) -> Result<u64, idem::Error> {
        RUNS.fetch_add(1, Ordering::SeqCst);
        Ok(7)
    }
    version_one(&store, 1).unwrap();
    assert_eq!(version_two(&store, 1).unwrap_err().code(), ErrorCode::RecordUnreadable);
    assert_eq!(RUNS.load(Ordering::SeqCst), 0);
}

#[test]
fn tools_with_the_same_template_do_not_share_keys() {
    let store = MemoryStore::new();
    #[idempotent(key = "x:<id>", store = store)]
    fn first_tool(store: &MemoryStore, id: u8) -> Result<String, idem::Error> {
        Ok("first".into())
    }
    #[idempotent(key = "x:<id>", store = store)]
    fn second_tool(store: &MemoryStore, id: u8) -> Result<String, idem::Error> {
        Ok("second".into())
    }
    assert_eq!(first_tool(&store, 1).unwrap(), "first");
    assert_eq!(second_tool(&store, 1).unwrap(), "second");
}

/// Keys can come from fields of a parameter and from names its pattern binds, as rmcp's
/// `Parameters<Req>` tools write them.
#[test]
fn field_paths_and_pattern_bindings() {
    #[derive(serde::Deserialize)]
    struct Req {
        customer: String,
        period: String,
        amount: u32,
    }
    struct Parameters<T>(T);
    let store = MemoryStore::new();
    #[idempotent(key = "invoice:<req.customer>:<req.period>", compare = [req.amount], store = store)]
    fn by_path(store: &MemoryStore, req: Req) -> Result<u32, idem::Error> {
        Ok(req.amount)
    }
    #[idempotent(key = "invoice:<customer>:<period>", compare = [amount], store = store)]
    fn by_pattern(
        store: &MemoryStore,
        Parameters(Req { customer, period, amount }): Parameters<Req>,
    ) -> Result<u32, idem::Error> {
        Ok(amount)
    }
    let req = |amount| Req { customer: "acme".into(), period: "2026-10".into(), amount };
    assert_eq!(by_path(&store, req(1)).unwrap(), 1);
    assert_eq!(by_path(&store, req(2)).unwrap_err().code(), ErrorCode::Conflict);
    assert_eq!(by_pattern(&store, Parameters(req(5))).unwrap(), 5);
    assert!(matches!(by_pattern_status(&store, Parameters(req(0))).unwrap(), Status::Completed(5)));
}

/// Async tools are spawned by frameworks (`tokio::spawn`, rmcp's handlers): their futures
/// must stay `Send` when the body's are.
#[test]
fn async_tool_futures_are_send() {
    fn assert_send<T: Send>(_: &T) {}
    let (store, _dir) = support::sqlite_store();
    let billing = Billing::new(store);
    assert_send(&billing.send_invoice_async("acme".into(), "2026-10".into(), 1.0, "m".into()));
    assert_send(&billing.send_invoice_async_status("acme".into(), "2026-10".into()));
}

/// A conflict's differences carry the compared values as JSON, for code to read; the
/// text form is what the message shows.
#[test]
fn conflict_differences_are_json_values() {
    let store = MemoryStore::new();
    #[idempotent(key = "charge:<order>", compare = [amount, currency], store = store)]
    fn charge(store: &MemoryStore, order: u32, amount: u32, currency: String) -> Result<u32, idem::Error> {
        Ok(amount)
    }
    charge(&store, 1, 120, "EUR".into()).unwrap();
    let error = charge(&store, 1, 150, "USD".into()).unwrap_err();
    let found: Vec<_> = error.differences().iter().map(|d| (d.field.as_str(), &d.stored, &d.requested)).collect();
    let (eur, usd) = (serde_json::json!("EUR"), serde_json::json!("USD"));
    let (a, b) = (serde_json::json!(120), serde_json::json!(150));
    assert_eq!(found, [("amount", &a, &b), ("currency", &eur, &usd)]);
    assert_eq!(error.differences()[1].stored_text, "\"EUR\"");
}
