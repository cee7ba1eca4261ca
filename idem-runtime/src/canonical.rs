//! Canonical JSON: compact, as `Value`'s `Display` writes it, with every object's keys
//! sorted, so that map order never matters while types and sequence order always do.
//!
//! This is the pinned form of stored compared fields (see [`compare`](crate::compare)),
//! the text a CONFLICT shows for each value, and the form of an HTTP request's selected
//! JSON fields. It depends on nothing else in the crate: the call, its errors and the
//! stores all write through it.

use serde::Serialize;
use serde_json::Value;

/// Writes `value` as JSON with every object's keys sorted, whatever map type serde_json
/// was built with (its `preserve_order` feature may be on elsewhere in the build).
pub(crate) fn write_canonical(value: &Value, out: &mut String) {
    out.push_str(&canonical(value));
}

/// `value` as JSON with every object's keys sorted; see [`write_canonical`].
pub(crate) fn canonical(value: &Value) -> String {
    let mut bytes = Vec::new();
    write_canonical_bytes(value, &mut bytes);
    String::from_utf8(bytes).expect("serde_json writes UTF-8")
}

/// [`write_canonical`] into bytes, for writers that build a larger JSON text around it.
pub(crate) fn write_canonical_bytes(value: &Value, out: &mut Vec<u8>) {
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
pub(crate) fn write_json<T: Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) {
    serde_json::to_writer(out, value).expect("strings and scalars always serialize");
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
    }
}
