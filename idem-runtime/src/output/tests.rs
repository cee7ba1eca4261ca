//! Replays: which types see the marker, and that each reads the stored value exactly.

use super::*;
use serde::Deserialize;
use serde_json::Value;

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Invoice {
    id: String,
    #[serde(default)]
    replayed: bool,
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct Strict {
    id: String,
}

#[test]
fn a_type_with_a_replayed_field_shows_the_replay() {
    let stored = serde_json::to_string(&Invoice { id: "inv_1".into(), replayed: false }).unwrap();
    let replayed: Invoice = replay_value(&stored).unwrap();
    assert_eq!(replayed, Invoice { id: "inv_1".into(), replayed: true });
}

#[test]
fn json_objects_show_the_replay() {
    let replayed: Value = replay_value(r#"{"id":"inv_1"}"#).unwrap();
    assert_eq!(replayed, serde_json::json!({"id": "inv_1", "replayed": true}));
}

#[test]
fn strict_types_get_the_stored_object_unchanged() {
    let replayed: Strict = replay_value(r#"{"id":"inv_1"}"#).unwrap();
    assert_eq!(replayed, Strict { id: "inv_1".into() });
}

#[test]
fn falsy_results_replay_as_themselves() {
    assert_eq!(replay_value::<u32>("0").unwrap(), 0);
    assert!(!replay_value::<bool>("false").unwrap());
    assert_eq!(replay_value::<String>("\"\"").unwrap(), "");
    assert_eq!(replay_value::<Vec<u8>>("[]").unwrap(), Vec::<u8>::new());
    replay_value::<()>("null").unwrap();
    assert_eq!(replay_value::<Option<u8>>("null").unwrap(), None);
    assert_eq!(replay_value::<Value>("{}").unwrap(), serde_json::json!({"replayed": true}));
}

/// The way replays were read before they were deserialized directly: through a
/// `Value`, marked, then unmarked if the type rejects the mark. Every type that takes the
/// marker must read the same both ways.
fn through_value<T: DeserializeOwned>(stored: &str) -> Result<T, serde_json::Error> {
    let value: Value = serde_json::from_str(stored)?;
    if let Value::Object(map) = &value {
        let mut marked = map.clone();
        marked.insert(REPLAYED_FIELD.to_owned(), Value::Bool(true));
        if let Ok(replayed) = T::deserialize(Value::Object(marked)) {
            return Ok(replayed);
        }
    }
    T::deserialize(value)
}

fn same_both_ways<T: DeserializeOwned + PartialEq + std::fmt::Debug>(stored: &str) {
    let direct = replay_value::<T>(stored);
    let old = through_value::<T>(stored);
    match (&direct, &old) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "{stored}"),
        (Err(_), Err(_)) => {}
        _ => panic!("{stored}: direct {direct:?}, through a value {old:?}"),
    }
}

#[test]
fn direct_replays_read_as_replays_through_a_value_did() {
    #[derive(Deserialize, Debug, PartialEq)]
    struct Wrapper(Invoice);
    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(transparent)]
    struct Transparent {
        invoice: Invoice,
    }
    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(untagged)]
    enum Untagged {
        Invoice(Invoice),
        Other(Value),
    }
    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(tag = "kind")]
    enum Tagged {
        Invoice {
            id: String,
            #[serde(default)]
            replayed: bool,
        },
    }
    #[derive(Deserialize, Debug, PartialEq)]
    enum External {
        Invoice { id: String },
    }
    #[derive(Deserialize, Debug, PartialEq)]
    struct Nested {
        inner: Invoice,
        #[serde(default)]
        replayed: Option<bool>,
    }
    #[derive(Deserialize, Debug, PartialEq)]
    struct NotABool {
        replayed: String,
    }
    let objects = [
        r#"{"id":"inv_1","replayed":false}"#,
        r#"{"id":"inv_1"}"#,
        r#" { "replayed" : false , "id" : "inv_\u0031" } "#,
        r#"{"\u0069d":"inv_1"}"#,
        r#"{"kind":"Invoice","id":"inv_1"}"#,
        r#"{"Invoice":{"id":"inv_1"}}"#,
        r#"{"inner":{"id":"inv_1","replayed":false}}"#,
        r#"{"replayed":"text"}"#,
        r#"{}"#,
        r#"{"id":"inv_1"} trailing"#,
        r#"{"id":"inv_1""#,
    ];
    for stored in objects {
        same_both_ways::<Invoice>(stored);
        same_both_ways::<Strict>(stored);
        same_both_ways::<Value>(stored);
        same_both_ways::<Option<Invoice>>(stored);
        same_both_ways::<Wrapper>(stored);
        same_both_ways::<Transparent>(stored);
        same_both_ways::<Untagged>(stored);
        same_both_ways::<Tagged>(stored);
        same_both_ways::<External>(stored);
        same_both_ways::<Nested>(stored);
        same_both_ways::<NotABool>(stored);
    }
    assert_eq!(replay_value::<Nested>(objects[6]).unwrap().replayed, Some(true));
    assert!(!replay_value::<Nested>(objects[6]).unwrap().inner.replayed, "only the top level is marked");
    assert!(replay_value::<Option<Invoice>>(objects[0]).unwrap().unwrap().replayed);
}

#[test]
fn a_result_that_no_longer_fits_the_type_is_an_error() {
    assert!(replay_value::<Invoice>(r#"{"number":7}"#).is_err());
    assert!(replay_value::<u32>("not json").is_err());
}

/// Typed maps (and structs serde reads as maps) come back exactly as stored: a
/// `replayed` entry would look like business data to code that counts or iterates them.
#[test]
fn typed_maps_replay_exactly_as_stored() {
    use std::collections::{BTreeMap, HashMap};
    #[derive(Deserialize, Debug, PartialEq)]
    struct Flattened {
        id: String,
        #[serde(flatten)]
        rest: BTreeMap<String, Value>,
    }
    #[derive(Deserialize, Debug, PartialEq)]
    struct Wrapper(HashMap<String, bool>);
    let flags = r#"{"sent":true,"paid":false}"#;
    assert_eq!(replay_value::<HashMap<String, bool>>(flags).unwrap(), serde_json::from_str(flags).unwrap());
    assert_eq!(replay_value::<BTreeMap<String, Value>>(flags).unwrap(), serde_json::from_str(flags).unwrap());
    let map: serde_json::Map<String, Value> = serde_json::from_str(flags).unwrap();
    assert_eq!(replay_value::<serde_json::Map<String, Value>>(flags).unwrap(), map);
    assert_eq!(replay_value::<Option<HashMap<String, bool>>>(flags).unwrap().unwrap().len(), 2);
    assert_eq!(replay_value::<Wrapper>(flags).unwrap().0.len(), 2);
    assert_eq!(replay_value::<HashMap<String, bool>>("{}").unwrap(), HashMap::new());
    let flattened: Flattened = replay_value(r#"{"id":"inv_1","note":"x"}"#).unwrap();
    assert_eq!(flattened.rest, BTreeMap::from([("note".to_owned(), Value::from("x"))]));
    // A map that holds a `replayed` entry of its own keeps its stored value.
    let own = replay_value::<HashMap<String, bool>>(r#"{"replayed":false}"#).unwrap();
    assert_eq!(own, HashMap::from([("replayed".to_owned(), false)]));
}

/// Only a struct that declares the field gets it; one without it reads unchanged.
#[test]
fn structs_without_the_field_read_unchanged() {
    #[derive(Deserialize, Debug, PartialEq)]
    struct Plain {
        id: String,
    }
    assert_eq!(replay_value::<Plain>(r#"{"id":"inv_1"}"#).unwrap(), Plain { id: "inv_1".into() });
    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(untagged)]
    enum Either {
        Invoice(Invoice),
        Json(Value),
    }
    assert_eq!(
        replay_value::<Either>(r#"{"id":"inv_1"}"#).unwrap(),
        Either::Invoice(Invoice { id: "inv_1".into(), replayed: true }),
        "an untagged enum is self-describing: its variants see the marker"
    );
}
