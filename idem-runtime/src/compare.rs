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

use crate::canonical::{canonical, write_canonical_bytes, write_json};
use crate::error::{Error, ErrorCode};
use crate::json_names::JsonNames;

/// One compared field's value, serialized before the body runs.
pub(crate) type ComparedValue = Result<Value, serde_json::Error>;

/// Serializes one compared field.
pub fn compared<T: Serialize + ?Sized>(value: &T) -> ComparedValue {
    serde_json::to_value(value)
}

/// The canonical JSON of a tool's compared fields. `names` and `values` are in the same
/// order; the names are sorted here, so the order of `compare = [...]` does not matter. An
/// error names the field as `json_names` says the model knows it.
pub(crate) fn request_json(
    tool_name: &str,
    names: &[&str],
    values: impl IntoIterator<Item = ComparedValue>,
    json_names: Option<&JsonNames>,
) -> Result<String, Error> {
    let invalid = |name: &str, error: serde_json::Error| {
        let name = json_names.map_or(std::borrow::Cow::Borrowed(name), |names| names.model_name(name));
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

/// A stored request with its fields renamed from `from` to `to` (parallel lists), in the
/// canonical form: how a record written under the Rust names of the fields (`req.amount`)
/// reads under the names the model knows (`amount`). `None` when it names none of them.
pub(crate) fn renamed(stored: &str, from: &[&str], to: &[&str]) -> Option<String> {
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
        request_json("t", names, values.iter().cloned().map(Ok), None).unwrap()
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
    fn a_name_with_quotes_is_escaped() {
        assert_eq!(request(&["na\"me"], &[json!(1)]), r#"{"na\"me":1}"#);
    }

    #[test]
    fn no_compared_fields_is_an_empty_object() {
        assert_eq!(request(&[], &[]), "{}");
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
        let error = request_json("t", &["m"], vec![compared(&map)], None).unwrap_err();
        assert_eq!(error.code(), ErrorCode::InvalidKey);
        assert!(error.message().contains("compared field m"), "{error}");
    }
}
