//! How two calls' compared fields differ: what a CONFLICT names, field by field.
//!
//! Both requests are canonical JSON objects (see [`compare`](crate::compare)); each field
//! whose values differ, or that only one of them has, is one [`FieldDifference`].

use serde_json::Value;

use crate::canonical::canonical;

/// One compared field whose stored and requested values differ (a CONFLICT).
///
/// The values are JSON, as they were compared: `stored == json!("EUR")`. The text forms
/// are what the conflict's message shows: the canonical JSON (`"EUR"` with its quotes,
/// `120.0`), or `(absent)` for a field one of the two calls did not compare (the tool's
/// `compare = [...]` changed between them), whose value then reads `null`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FieldDifference {
    /// The field by the name the model sends it under: `amount` for `compare = [amount]`,
    /// and also for `compare = [req.amount]` where rmcp's `Parameters(req)` binds the
    /// tool's arguments (its JSON name there: `amountEur` for `req.amount_eur` under
    /// `#[serde(rename_all = "camelCase")]`, see the crate docs' "Field names the model
    /// sees"); `req.amount` where `req` is itself an argument.
    pub field: String,
    /// The value the first call stored.
    pub stored: serde_json::Value,
    /// The value this call asked for.
    pub requested: serde_json::Value,
    /// [`stored`](Self::stored) as canonical JSON text, or `(absent)`.
    pub stored_text: String,
    /// [`requested`](Self::requested) as canonical JSON text, or `(absent)`.
    pub requested_text: String,
}

/// The text form of a compared field that one of two calls did not have.
pub(crate) const ABSENT: &str = "(absent)";

impl FieldDifference {
    /// A difference of `field` between two values, `None` where a call did not compare it.
    pub(crate) fn new(
        field: String,
        stored: Option<&serde_json::Value>,
        requested: Option<&serde_json::Value>,
    ) -> Self {
        let side = |value: Option<&serde_json::Value>| match value {
            Some(value) => (value.clone(), canonical(value)),
            None => (serde_json::Value::Null, ABSENT.to_owned()),
        };
        let ((stored, stored_text), (requested, requested_text)) = (side(stored), side(requested));
        FieldDifference { field, stored, requested, stored_text, requested_text }
    }
}

/// The compared fields that differ between a stored request and this one; empty when they
/// are equal. A stored request that is not a JSON object is reported as one difference on
/// every field rather than trusted.
pub(crate) fn differences(stored: &str, requested: &str) -> Vec<FieldDifference> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn differences_name_each_field_with_both_values() {
        let stored = r#"{"amount":120.0,"currency":"EUR"}"#;
        let requested = r#"{"amount":150.0,"currency":"EUR"}"#;
        let [difference] = &differences(stored, requested)[..] else { panic!("one difference") };
        assert_eq!(difference.field, "amount");
        assert_eq!((&difference.stored, &difference.requested), (&json!(120.0), &json!(150.0)));
        assert_eq!((difference.stored_text.as_str(), difference.requested_text.as_str()), ("120.0", "150.0"));
        assert!(differences(stored, stored).is_empty());
        let added = differences(r#"{"amount":1}"#, r#"{"amount":1,"currency":"EUR"}"#);
        assert_eq!((&added[0].stored, added[0].stored_text.as_str()), (&Value::Null, "(absent)"));
        assert_eq!((&added[0].requested, added[0].requested_text.as_str()), (&json!("EUR"), "\"EUR\""));
    }

    #[test]
    fn a_stored_request_that_is_not_an_object_is_one_difference() {
        let [difference] = &differences("[1]", r#"{"amount":1}"#)[..] else { panic!("one difference") };
        assert_eq!(difference.field, "(request)");
        assert_eq!((&difference.stored, difference.stored_text.as_str()), (&json!([1]), "[1]"));
    }
}
