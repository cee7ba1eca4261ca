//! Where a replay says so: `"replayed": true` goes into JSON for a model (a
//! `serde_json::Value` object) and into structs that declare a `replayed` field; a typed
//! map comes back exactly as it was stored, never with a `replayed` entry that looks like
//! business data.

use std::collections::{BTreeMap, HashMap};

use idem::telemetry::Outcome;
use idem::{MemoryStore, idempotent};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[idempotent(key = "flags:<order>", store = store)]
fn order_flags(store: &MemoryStore, order: u32) -> Result<HashMap<String, bool>, idem::Error> {
    Ok(HashMap::from([("sent".to_owned(), true), ("paid".to_owned(), false)]))
}

#[idempotent(key = "fields:<order>", store = store)]
fn order_fields(store: &MemoryStore, order: u32) -> Result<BTreeMap<String, Value>, idem::Error> {
    Ok(BTreeMap::from([("amount".to_owned(), json!(120)), ("currency".to_owned(), json!("EUR"))]))
}

#[idempotent(key = "json:<order>", store = store)]
fn order_json(store: &MemoryStore, order: u32) -> Result<Value, idem::Error> {
    Ok(json!({"order": order, "status": "sent"}))
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Receipt {
    order: u32,
    #[serde(default)]
    replayed: bool,
}

#[idempotent(key = "receipt:<order>", store = store)]
fn receipt(store: &MemoryStore, order: u32) -> Result<Receipt, idem::Error> {
    Ok(Receipt { order, replayed: false })
}

/// Calls `tool` twice; the second call must be a replay. Returns both answers.
fn twice<T>(mut tool: impl FnMut() -> Result<T, idem::Error>) -> (T, T) {
    let first = tool().unwrap();
    let (again, calls) = idem::telemetry::observe(&mut tool);
    assert_eq!(calls[0].outcome, Outcome::Replayed);
    (first, again.unwrap())
}

#[test]
fn typed_maps_replay_exactly_as_stored() {
    let store = MemoryStore::new();
    let (first, again) = twice(|| order_flags(&store, 1));
    assert_eq!(again, first, "a HashMap<String, bool> gains no entry");
    assert_eq!(again.values().filter(|set| **set).count(), 1);
    let (first, again) = twice(|| order_fields(&store, 1));
    assert_eq!(again, first, "a BTreeMap<String, Value> gains no entry");
    assert_eq!(again.len(), 2);
}

#[test]
fn json_for_a_model_and_structs_with_the_field_show_the_replay() {
    let store = MemoryStore::new();
    let (first, again) = twice(|| order_json(&store, 1));
    assert_eq!(first, json!({"order": 1, "status": "sent"}));
    assert_eq!(again, json!({"order": 1, "status": "sent", "replayed": true}));
    let (first, again) = twice(|| receipt(&store, 1));
    assert_eq!((first.replayed, again.replayed), (false, true));
}
