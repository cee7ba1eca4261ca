//! What of a request must be the same on a repeat with the same key: its method, path and
//! query, and its body (all of it, or selected JSON fields).
//!
//! Stored with the reservation as idem's compared fields: `method` and `path` as sent,
//! `query` and `body` as SHA-256 hashes (the first 128 bits, as hashed key fields are), so
//! that the store holds no request data. A repeat
//! whose fingerprint differs gets `422`, naming what differs.

use http::request::Parts;
use serde_json::Value;

use super::problem::Problem;
use crate::key::sha256_text;

/// The compared fields' names, sorted as idem stores them.
pub(crate) const FIELDS: [&str; 4] = ["body", "method", "path", "query"];

/// What of the request body a repeat must match.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fingerprint {
    /// The body's bytes, all of them (the default).
    #[default]
    Body,
    /// Only these fields of a JSON body: top-level names (`amount`), or JSON Pointers
    /// (`/customer/id`). A field the body lacks counts as `null`; an empty body has every
    /// field `null`. A body that is not JSON is answered `400` (`body-not-json`). Leave
    /// out what a client may change on a retry, such as a timestamp it sets.
    JsonFields(Vec<String>),
}

impl Fingerprint {
    /// Only these fields of a JSON body; see [`Fingerprint::JsonFields`].
    pub fn json_fields<I: IntoIterator<Item = S>, S: Into<String>>(fields: I) -> Self {
        Fingerprint::JsonFields(fields.into_iter().map(Into::into).collect())
    }

    /// The request's compared values, in the order of [`FIELDS`].
    pub(crate) fn of(&self, parts: &Parts, body: &[u8]) -> Result<[Value; 4], Problem> {
        let body = match self {
            Fingerprint::Body => sha256_text(body),
            Fingerprint::JsonFields(fields) => sha256_text(selected(fields, body)?.as_bytes()),
        };
        let query = parts.uri.query().map_or(Value::Null, |query| Value::String(sha256_text(query.as_bytes())));
        Ok([Value::String(body), Value::from(parts.method.as_str()), Value::from(parts.uri.path()), query])
    }
}

/// The selected fields as canonical JSON: `{"field": value, ...}` with sorted keys.
fn selected(fields: &[String], body: &[u8]) -> Result<String, Problem> {
    let document: Value = if body.trim_ascii().is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(body).map_err(|error| {
            Problem::new(
                http::StatusCode::BAD_REQUEST,
                "body-not-json",
                "The request body is not JSON",
                format!(
                    "This operation compares fields of a JSON body on a retry, and the body does not parse: {error}."
                ),
            )
        })?
    };
    let picked = fields
        .iter()
        .map(|field| {
            let value = if field.starts_with('/') { document.pointer(field) } else { document.get(field) };
            (field.clone(), value.cloned().unwrap_or(Value::Null))
        })
        .collect::<serde_json::Map<_, _>>();
    Ok(crate::canonical::canonical(&Value::Object(picked)))
}

#[cfg(test)]
mod tests {
    use super::Fingerprint;

    fn parts(method: &str, uri: &str) -> http::request::Parts {
        http::Request::builder().method(method).uri(uri).body(()).unwrap().into_parts().0
    }

    #[test]
    fn selected_fields_leave_the_rest_of_the_body_out() {
        let amount = Fingerprint::json_fields(["amount", "/customer/id"]);
        let post = parts("POST", "/v1/invoices");
        let first = amount.of(&post, br#"{"amount":120,"customer":{"id":"acme"},"sent_at":"10:00"}"#).unwrap();
        let retry = amount.of(&post, br#"{"sent_at":"10:05","customer":{"id":"acme","n":1},"amount":120}"#).unwrap();
        assert_eq!(first, retry);
        let other = amount.of(&post, br#"{"amount":150,"customer":{"id":"acme"}}"#).unwrap();
        assert_ne!(first[0], other[0]);
        assert!(amount.of(&post, b"amount=120").is_err());
        assert_eq!(amount.of(&post, b"").unwrap()[0], amount.of(&post, b"{}").unwrap()[0]);
    }

    #[test]
    fn method_path_query_and_body_all_count() {
        let body = Fingerprint::Body;
        let base = body.of(&parts("POST", "/a?x=1"), b"{}").unwrap();
        assert_ne!(base, body.of(&parts("PATCH", "/a?x=1"), b"{}").unwrap());
        assert_ne!(base, body.of(&parts("POST", "/b?x=1"), b"{}").unwrap());
        assert_ne!(base, body.of(&parts("POST", "/a?x=2"), b"{}").unwrap());
        assert_ne!(base, body.of(&parts("POST", "/a?x=1"), b"{ }").unwrap());
        assert_eq!(base, body.of(&parts("POST", "http://other/a?x=1"), b"{}").unwrap());
        assert_eq!(body.of(&parts("POST", "/a"), b"").unwrap()[3], serde_json::Value::Null);
    }
}
