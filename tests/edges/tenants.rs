//! Many users, one store: `scope = expr` keeps each caller's records apart. The same
//! business key gives one effect per scope, a repeat replays only its own scope's result,
//! the status function reads only its own scope's record, and no scope value (delimiters,
//! another scope's text, anything) reaches another scope's record. SQLite, PostgreSQL and
//! memory; async tools whose scope comes from `self`, sync tools whose scope is a
//! parameter the caller (code, not a model) passes.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::postgres::{fresh_schema, test_url};
use idem::store::Store;
use idem::{ErrorCode, MemoryStore, SqliteStore, Status, idempotent};
use proptest::prelude::*;

/// Invoices sent, per (tenant, customer, period): the effect counted.
#[derive(Default)]
struct Ledger(Mutex<HashMap<(String, String, String), usize>>);

impl Ledger {
    fn send(&self, tenant: &str, customer: &str, period: &str) -> String {
        let mut sent = self.0.lock().unwrap();
        *sent.entry((tenant.into(), customer.into(), period.into())).or_default() += 1;
        format!("inv-{tenant}-{customer}-{period}")
    }

    fn sent(&self, tenant: &str, customer: &str, period: &str) -> usize {
        self.0.lock().unwrap().get(&(tenant.into(), customer.into(), period.into())).copied().unwrap_or(0)
    }
}

/// One tenant's view of the billing service: the tenant comes from the authenticated
/// session the server built, never from the tool's arguments.
struct Session<'a, S> {
    tenant: String,
    store: &'a S,
    ledger: &'a Ledger,
}

impl<S: Store> Session<'_, S> {
    #[idempotent(key = "invoice:<customer>:<period>", namespace = "tenants.invoice", scope = self.tenant, store = self.store)]
    async fn send_invoice(&self, customer: String, period: String) -> Result<String, idem::Error> {
        Ok(self.ledger.send(&self.tenant, &customer, &period))
    }
}

/// A sync tool whose scope is a parameter its (trusted) caller passes.
#[idempotent(key = "refund:<order>", namespace = "tenants.refund", scope = tenant, store = store)]
fn refund<S: Store>(store: &S, tenant: &str, order: String, ledger: &Ledger) -> Result<String, idem::Error> {
    Ok(ledger.send(tenant, &order, "refund"))
}

/// Two tenants on one store: two effects for one business key, each replays its own, each
/// status reads its own.
async fn two_tenants_stay_apart<S: Store>(store: &S) {
    let ledger = Ledger::default();
    let acme = Session { tenant: "acme".into(), store, ledger: &ledger };
    let beta = Session { tenant: "beta".into(), store, ledger: &ledger };
    assert!(matches!(acme.send_invoice_status("c1".into(), "2026-10".into()).await, Ok(Status::NotFound)));
    assert_eq!(acme.send_invoice("c1".into(), "2026-10".into()).await.unwrap(), "inv-acme-c1-2026-10");
    // Beta's status does not see acme's invoice, and beta's call sends its own.
    assert!(matches!(beta.send_invoice_status("c1".into(), "2026-10".into()).await, Ok(Status::NotFound)));
    assert_eq!(beta.send_invoice("c1".into(), "2026-10".into()).await.unwrap(), "inv-beta-c1-2026-10");
    for _ in 0..3 {
        assert_eq!(acme.send_invoice("c1".into(), "2026-10".into()).await.unwrap(), "inv-acme-c1-2026-10");
        assert_eq!(beta.send_invoice("c1".into(), "2026-10".into()).await.unwrap(), "inv-beta-c1-2026-10");
    }
    assert_eq!((ledger.sent("acme", "c1", "2026-10"), ledger.sent("beta", "c1", "2026-10")), (1, 1));
    let Ok(Status::Completed(acme_invoice)) = acme.send_invoice_status("c1".into(), "2026-10".into()).await else {
        panic!("acme's status reads acme's invoice")
    };
    assert_eq!(acme_invoice, "inv-acme-c1-2026-10");
    // The record id names the scope's record: a hash of the scope, never the tenant's text.
    let id = acme.send_invoice_record_id("c1".into(), "2026-10".into()).unwrap();
    assert!(id.key.ends_with("/invoice:c1:2026-10") && !id.key.contains("acme"), "{}", id.key);
    assert_eq!(id.key.as_str(), format!("{}invoice:c1:2026-10", idem::store::scope_prefix("acme")));
    assert_ne!(id.key, beta.send_invoice_record_id("c1".into(), "2026-10".into()).unwrap().key);
}

#[test]
fn tenants_on_sqlite_stay_apart() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("tenants.db")).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(two_tenants_stay_apart(&store));
}

#[test]
fn tenants_on_postgres_stay_apart() {
    let Some(url) = test_url("tenants_on_postgres_stay_apart") else { return };
    let schema = fresh_schema("idem_tenants");
    let store = idem::PgStore::builder(&url).schema(&schema).build().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(two_tenants_stay_apart(&store));
    crate::pg::drop_schema(&url, &schema);
}

#[test]
fn an_empty_scope_runs_nothing() {
    let (store, ledger) = (MemoryStore::new(), Ledger::default());
    let error = refund(&store, "", "o1".into(), &ledger).unwrap_err();
    assert_eq!(error.code(), ErrorCode::InvalidKey, "{error}");
    assert!(error.message().contains("scope"), "{error}");
    assert_eq!(ledger.sent("", "o1", "refund"), 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Whatever two different scopes say (the key's delimiters, `/`, a hash-like prefix,
    /// one the other's prefix, case alone), a call in one never replays or blocks the
    /// other's record: each runs its body once, and each status reads its own.
    #[test]
    fn no_scope_reaches_another_scopes_record(
        a in "[a-zA-Z0-9:/%_. -]{1,24}",
        b in "[a-zA-Z0-9:/%_. -]{1,24}",
        order in "[a-z0-9]{1,8}",
    ) {
        prop_assume!(a != b);
        let (store, ledger) = (MemoryStore::new(), Ledger::default());
        let first = refund(&store, &a, order.clone(), &ledger).unwrap();
        let second = refund(&store, &b, order.clone(), &ledger).unwrap();
        prop_assert_eq!(&first, &format!("inv-{a}-{order}-refund"));
        prop_assert_eq!(&second, &format!("inv-{b}-{order}-refund"));
        prop_assert_eq!(refund(&store, &a, order.clone(), &ledger).unwrap(), first);
        prop_assert_eq!((ledger.sent(&a, &order, "refund"), ledger.sent(&b, &order, "refund")), (1, 1));
        let a_id = refund_record_id::<MemoryStore>(&a, order.clone()).unwrap();
        let b_id = refund_record_id::<MemoryStore>(&b, order.clone()).unwrap();
        prop_assert_ne!(a_id.key, b_id.key);
    }
}
