//! Keys typed as the tool's fields read, where idem stores them percent-encoded: an HTTP
//! layer's `inv:1` is stored as `inv%3A1`, a tool's `invoice:acme corp:2026/10` as
//! `invoice:acme%20corp:2026%2F10`. `show`, `resolve` and `reopen` find the record when one
//! encoding names exactly one, say which key they used, and refuse to guess between two.

use std::time::Duration;

use idem_runtime::SqliteStore;
use idem_runtime::store::{Completion, RecordId, RecordState, Reservation, Reserve, Store, block_on};

use super::{idem, text};

fn record(store: &SqliteStore, namespace: &str, key: &str, settled: bool) {
    let id = RecordId { namespace, key };
    let lease = if settled { Duration::from_secs(600) } else { Duration::ZERO };
    let Ok(Reservation::Acquired { token }) = block_on(store.reserve(Reserve { id, request: "{}", lease })) else {
        panic!()
    };
    if settled {
        block_on(store.complete(id, token, Completion::Success("\"done\""), Duration::from_secs(600))).unwrap();
    }
}

#[test]
fn a_key_typed_unescaped_finds_its_record_and_says_which_key_it_used() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("idem.db");
    let store = SqliteStore::open(&db).unwrap();
    record(&store, "http", "inv%3A1", true);
    record(&store, "billing::send_invoice", "invoice:acme%20corp:2026%2F10", true);
    for (namespace, typed, stored) in [
        ("http", "inv:1", "inv%3A1"),
        ("billing::send_invoice", "invoice:acme corp:2026/10", "invoice:acme%20corp:2026%2F10"),
    ] {
        let shown = idem(&db, &["show", namespace, typed], "");
        assert!(shown.status.success(), "{}", text(&shown));
        assert!(String::from_utf8_lossy(&shown.stdout).contains(&format!("key:       {stored}\n")), "{}", text(&shown));
        let said = String::from_utf8_lossy(&shown.stderr);
        assert!(said.contains(&format!("no record under {typed} as typed; using {stored}")), "{said}");
        let json = idem(&db, &["show", namespace, typed, "--json"], "");
        let line: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        assert_eq!(line["key"], stored, "stdout holds the record only");
    }

    record(&store, "http", "inv%3A2", false);
    let released = idem(&db, &["resolve", "http", "inv:2", "--release", "--yes"], "");
    assert!(released.status.success(), "{}", text(&released));
    assert_eq!(block_on(store.read(RecordId { namespace: "http", key: "inv%3A2" })).unwrap(), None);
    let reopened = idem(&db, &["reopen", "http", "inv:1", "--yes"], "");
    assert!(reopened.status.success() && text(&reopened).contains("reopened: inv%3A1"), "{}", text(&reopened));
    let record = block_on(store.read(RecordId { namespace: "http", key: "inv%3A1" })).unwrap().unwrap();
    assert!(matches!(record.state, RecordState::InProgress { lease_expired: true, .. }), "{record:?}");
}

/// Two records under two encodings of one typed key: none is chosen, both are named. A
/// key stored as typed is always the one used.
#[test]
fn two_records_under_encodings_of_one_typed_key_are_named_not_chosen() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("idem.db");
    let store = SqliteStore::open(&db).unwrap();
    record(&store, "t", "a%3Ab:c", false);
    record(&store, "t", "a:b%3Ac", false);
    let refused = idem(&db, &["resolve", "t", "a:b:c", "--release", "--yes"], "");
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(
        text(&refused).contains("2 records under its percent-encoded forms: a%3Ab:c, a:b%3Ac"),
        "{}",
        text(&refused)
    );
    for key in ["a%3Ab:c", "a:b%3Ac"] {
        assert!(block_on(store.read(RecordId { namespace: "t", key })).unwrap().is_some(), "nothing changed");
    }
    record(&store, "t", "a:b:c", true);
    let exact = idem(&db, &["show", "t", "a:b:c"], "");
    assert!(exact.status.success() && exact.stderr.is_empty(), "{}", text(&exact));
    assert!(text(&exact).contains("key:       a:b:c\n"), "{}", text(&exact));
    let missing = idem(&db, &["show", "t", "x:y"], "");
    assert_eq!(missing.status.code(), Some(1));
    assert!(text(&missing).contains("no record for t x:y"), "{}", text(&missing));
}
