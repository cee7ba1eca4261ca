//! Compared fields: the request's values that must be equal on a repeat.
//!
//! They are stored with the reservation as canonical JSON: an object whose keys are the
//! fields' names as the model sends them (`amount`, also for `compare = [req.amount]` under
//! rmcp's `Parameters(req)`), sorted, with every nested object's keys sorted too, so that
//! map order never matters while `"1"` vs `1` and `[1,2]` vs `[2,1]` always do. This format
//! is pinned: a process of a later idem version compares equal with records an earlier one
//! wrote, including records that named the fields as written in `compare = [...]`
//! (`req.amount`), which [`renamed`] reads under the new names.

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, ErrorCode, FieldDifference};

/// One compared field's value, serialized before the body runs.
pub type ComparedValue = Result<Value, serde_json::Error>;

/// Serializes one compared field.
pub fn compared<T: Serialize + ?Sized>(value: &T) -> ComparedValue {
    serde_json::to_value(value)
}

/// The canonical JSON of a tool's compared fields. `names` and `values` are in the same
/// order; the names are sorted here, so the order of `compare = [...]` does not matter.
pub fn request_json(
    tool_name: &str,
    names: &[&str],
    values: impl IntoIterator<Item = ComparedValue>,
) -> Result<String, Error> {
    let invalid = |name: &str, error: serde_json::Error| {
        Error::new(
            ErrorCode::InvalidKey,
            format!("{tool_name}: compared field {name} cannot be serialized: {error}; the action was not run"),
        )
    };
    let mut out = Vec::with_capacity(16 * names.len() + 2);
    out.push(b'{');
    if names.is_sorted() {
        // The macro passes the names sorted: write the fields as they come.
        for (i, (name, value)) in names.iter().zip(values).enumerate() {
            write_field(i, name, &value.map_err(|error| invalid(name, error))?, &mut out);
        }
    } else {
        let mut fields: Vec<(&str, Value)> = Vec::with_capacity(names.len());
        for (name, value) in names.iter().zip(values) {
            fields.push((name, value.map_err(|error| invalid(name, error))?));
        }
        fields.sort_by(|a, b| a.0.cmp(b.0));
        for (i, (name, value)) in fields.iter().enumerate() {
            write_field(i, name, value, &mut out);
        }
    }
    out.push(b'}');
    Ok(String::from_utf8(out).expect("serde_json writes UTF-8"))
}

/// One `"name":value` entry of the request object, the `i`th.
fn write_field(i: usize, name: &str, value: &Value, out: &mut Vec<u8>) {
    if i > 0 {
        out.push(b',');
    }
    if name.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        // Nothing to escape, as in every name written in `compare = [...]`.
        out.push(b'"');
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b"\":");
    } else {
        write_json(name, out);
        out.push(b':');
    }
    write_canonical_bytes(value, out);
}

/// Writes `value` as JSON with every object's keys sorted, whatever map type serde_json
/// was built with (its `preserve_order` feature may be on elsewhere in the build).
pub fn write_canonical(value: &Value, out: &mut String) {
    out.push_str(&canonical(value));
}

/// `value` as JSON with every object's keys sorted; see [`write_canonical`].
pub(crate) fn canonical(value: &Value) -> String {
    let mut bytes = Vec::new();
    write_canonical_bytes(value, &mut bytes);
    String::from_utf8(bytes).expect("serde_json writes UTF-8")
}

fn write_canonical_bytes(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (key, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_json(key.as_str(), out);
                out.push(b':');
                write_canonical_bytes(value, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical_bytes(item, out);
            }
            out.push(b']');
        }
        scalar => write_json(scalar, out),
    }
}

/// Compact JSON, exactly as `Value`'s `Display` writes it.
fn write_json<T: Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) {
    serde_json::to_writer(out, value).expect("strings and scalars always serialize");
}

/// The compared fields that differ between a stored request and this one; empty when they
/// are equal. A stored request that is not a JSON object is reported as one difference on
/// every field rather than trusted.
pub fn differences(stored: &str, requested: &str) -> Vec<FieldDifference> {
    if stored == requested {
        return Vec::new();
    }
    let parse = |text: &str| match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    };
    let (Some(stored_fields), Some(requested_fields)) = (parse(stored), parse(requested)) else {
        let json = |text: &str| serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()));
        return vec![FieldDifference {
            field: "(request)".to_owned(),
            stored: json(stored),
            requested: json(requested),
            stored_text: stored.to_owned(),
            requested_text: requested.to_owned(),
        }];
    };
    let mut names: Vec<&String> = stored_fields.keys().chain(requested_fields.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter(|name| stored_fields.get(*name) != requested_fields.get(*name))
        .map(|name| FieldDifference::new(name.clone(), stored_fields.get(name), requested_fields.get(name)))
        .collect()
}

/// A stored request with its fields renamed from `from` to `to` (parallel lists), in the
/// canonical form: how a record written under the Rust names of the fields (`req.amount`)
/// reads under the names the model knows (`amount`). `None` when it names none of them.
pub fn renamed(stored: &str, from: &[&str], to: &[&str]) -> Option<String> {
    let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(stored) else { return None };
    if !fields.keys().any(|name| from.contains(&name.as_str())) {
        return None;
    }
    let fields = fields.into_iter().map(|(name, value)| match from.iter().position(|old| *old == name) {
        Some(i) => (to[i].to_owned(), value),
        None => (name, value),
    });
    Some(canonical(&Value::Object(fields.collect())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(names: &[&str], values: &[Value]) -> String {
        request_json("t", names, values.iter().cloned().map(Ok)).unwrap()
    }

    #[test]
    fn field_and_map_order_never_matter() {
        let a = request(&["b", "a"], &[json!({"y": 1, "x": 2}), json!(1)]);
        let b = request(&["a", "b"], &[json!(1), json!({"x": 2, "y": 1})]);
        assert_eq!(a, b);
        assert_eq!(a, r#"{"a":1,"b":{"x":2,"y":1}}"#);
    }

    #[test]
    fn types_and_sequence_order_always_matter() {
        assert_ne!(request(&["a"], &[json!("1")]), request(&["a"], &[json!(1)]));
        assert_ne!(request(&["a"], &[json!([1, 2])]), request(&["a"], &[json!([2, 1])]));
    }

    #[test]
    fn the_pinned_format_is_compact_json_as_value_displays_it() {
        let values = [
            json!("a \"quoted\" \\ line\nwith\ttabs, é, 😀 and \u{1}"),
            json!(120.0),
            json!(0.1),
            json!(-7),
            json!(u64::MAX),
            json!(1e300),
            json!(null),
            json!(true),
            json!([1, "x", [2.5]]),
        ];
        for value in values {
            let mut out = String::new();
            write_canonical(&value, &mut out);
            assert_eq!(out, value.to_string());
        }
        let nested = json!({"z\"key": {"b": 1, "a": [json!({"d": 1, "c": 2})]}, "é": 1});
        let mut out = String::new();
        write_canonical(&nested, &mut out);
        assert_eq!(out, r#"{"z\"key":{"a":[{"c":2,"d":1}],"b":1},"é":1}"#);
        assert_eq!(request(&["na\"me"], &[json!(1)]), r#"{"na\"me":1}"#);
    }

    #[test]
    fn no_compared_fields_is_an_empty_object() {
        assert_eq!(request(&[], &[]), "{}");
    }

    #[test]
    fn differences_name_each_field_with_both_values() {
        let stored = request(&["amount", "currency"], &[json!(120.0), json!("EUR")]);
        let requested = request(&["amount", "currency"], &[json!(150.0), json!("EUR")]);
        let [difference] = &differences(&stored, &requested)[..] else { panic!("one difference") };
        assert_eq!(difference.field, "amount");
        assert_eq!((&difference.stored, &difference.requested), (&json!(120.0), &json!(150.0)));
        assert_eq!((difference.stored_text.as_str(), difference.requested_text.as_str()), ("120.0", "150.0"));
        assert!(differences(&stored, &stored).is_empty());
        let added = differences(r#"{"amount":1}"#, r#"{"amount":1,"currency":"EUR"}"#);
        assert_eq!((&added[0].stored, added[0].stored_text.as_str()), (&Value::Null, "(absent)"));
        assert_eq!((&added[0].requested, added[0].requested_text.as_str()), (&json!("EUR"), "\"EUR\""));
    }

    #[test]
    fn records_under_rust_names_read_under_model_names() {
        let old = request(&["req.amount", "req.currency"], &[json!(120.0), json!("EUR")]);
        let new = request(&["amount", "currency"], &[json!(120.0), json!("EUR")]);
        let from = ["req.amount", "req.currency"];
        assert_eq!(renamed(&old, &from, &["amount", "currency"]).as_deref(), Some(new.as_str()));
        assert_eq!(renamed(&new, &from, &["amount", "currency"]), None, "nothing to rename");
        assert_eq!(renamed("not json", &from, &["amount", "currency"]), None);
    }

    #[test]
    fn an_unserializable_field_is_invalid_and_named() {
        use std::collections::HashMap;
        let map: HashMap<(u8, u8), u8> = HashMap::from([((1, 2), 3)]);
        let error = request_json("t", &["m"], vec![compared(&map)]).unwrap_err();
        assert_eq!(error.code(), ErrorCode::InvalidKey);
        assert!(error.message().contains("compared field m"), "{error}");
    }
}
