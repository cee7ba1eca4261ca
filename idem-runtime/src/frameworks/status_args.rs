//! What the status tools of rmcp and ADK-Rust share: the tool's input schema cut down to the
//! key's fields, and the key's fields read from a status tool call's JSON arguments.
//!
//! A model that lost track of a call may no longer have all of its arguments (a memo it
//! wrote, an amount it was told), only what names the action. So a status tool takes the
//! key's fields, and nothing else, each read by its JSON name as the field's own Rust type.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{Error, ErrorCode};

/// A JSON object: a tool call's arguments, a JSON schema.
pub(crate) type JsonObject = serde_json::Map<String, Value>;

/// The input schema of `status_tool`: `schema` (of the tool's request type, named
/// `type_name`) with only the properties `fields`, each as the request type describes it,
/// `required` where the tool requires it, `$defs` kept so `$ref`s resolve.
///
/// # Panics
///
/// When a field is not one of the schema's properties: the key reads the field by its Rust
/// name, and a `#[serde(rename)]` of a key field makes its JSON name another one, which a
/// status tool cannot find.
pub(crate) fn key_schema(status_tool: &str, type_name: &str, schema: &JsonObject, fields: &[&str]) -> JsonObject {
    match kept_properties(schema, fields) {
        Ok(schema) => schema,
        Err(missing) => panic!(
            "{status_tool} takes the key fields {}, but the JSON schema of `{type_name}` has no property `{missing}` \
             (its properties: {}); a key field must keep its Rust name in JSON (no #[serde(rename)] or rename_all \
             that changes it)",
            fields.join(", "),
            property_names(schema),
        ),
    }
}

/// `schema` with only the properties `fields`, `required` filtered the same way, and no
/// title or description of its own; `Err` names a field that is not a property.
fn kept_properties(schema: &JsonObject, fields: &[&str]) -> Result<JsonObject, String> {
    let empty = JsonObject::new();
    let properties = schema.get("properties").and_then(Value::as_object).unwrap_or(&empty);
    let mut kept = JsonObject::new();
    for field in fields {
        let property = properties.get(*field).ok_or_else(|| (*field).to_owned())?;
        kept.insert((*field).to_owned(), property.clone());
    }
    let mut out = schema.clone();
    out.remove("title");
    out.remove("description");
    out.insert("type".to_owned(), Value::from("object"));
    out.insert("properties".to_owned(), Value::Object(kept));
    let required: Vec<Value> = match schema.get("required").and_then(Value::as_array) {
        Some(required) => {
            required.iter().filter(|name| name.as_str().is_some_and(|n| fields.contains(&n))).cloned().collect()
        }
        None => Vec::new(),
    };
    if required.is_empty() {
        out.remove("required");
    } else {
        out.insert("required".to_owned(), Value::Array(required));
    }
    Ok(out)
}

fn property_names(schema: &JsonObject) -> String {
    match schema.get("properties").and_then(Value::as_object) {
        Some(properties) if !properties.is_empty() => properties.keys().cloned().collect::<Vec<_>>().join(", "),
        _ => "none".to_owned(),
    }
}

/// The arguments of one status tool call, read field by field; what could not be read is
/// collected, so that one answer names every missing or ill-typed key field.
pub struct StatusArgs {
    tool: &'static str,
    fields: &'static [&'static str],
    args: JsonObject,
    problems: Vec<String>,
}

impl StatusArgs {
    /// The arguments of `<tool>_status`, whose key fields (JSON names) are `fields`.
    pub fn new(tool: &'static str, fields: &'static [&'static str], args: JsonObject) -> Self {
        StatusArgs { tool, fields, args, problems: Vec::new() }
    }

    /// The key field `name` as the type `F` the request type `R` gives it: `at` says
    /// where (`|r: &Parameters<SendInvoice>| &r.0.customer` for rmcp,
    /// `|r: &SendInvoice| &r.customer` for ADK-Rust) and is never called. An
    /// absent field reads as JSON `null` (an `Option` field is then `None`). `None` when it
    /// cannot be read; [`into_error`](Self::into_error) then says why.
    pub fn field<R, F: DeserializeOwned>(&mut self, name: &'static str, at: impl Fn(&R) -> &F) -> Option<F> {
        let _ = at;
        match self.args.get(name) {
            Some(value) => match F::deserialize(value) {
                Ok(field) => Some(field),
                Err(error) => {
                    self.problems.push(format!("{name} is not valid ({error})"));
                    None
                }
            },
            None => match F::deserialize(&Value::Null) {
                Ok(field) => Some(field),
                Err(error) => {
                    self.problems.push(match expected(&error.to_string()) {
                        Some(expected) => format!("{name} is missing (expected {expected})"),
                        None => format!("{name} is missing"),
                    });
                    None
                }
            },
        }
    }

    /// The INVALID_KEY error for the fields [`field`](Self::field) could not read.
    pub fn into_error(self) -> Error {
        let fields = self.fields.join(", ");
        Error::new(
            ErrorCode::InvalidKey,
            format!(
                "{tool}_status takes the key fields of {tool} ({fields}): {}; nothing was read",
                self.problems.join("; "),
                tool = self.tool,
            ),
        )
        .with_suggestion(format!(
            "call {tool}_status again with {fields}, as {tool} was called with them (other arguments are not needed)",
            tool = self.tool
        ))
    }
}

/// What serde expected, from its "invalid type: null, expected a string".
fn expected(message: &str) -> Option<&str> {
    message.split_once(", expected ").map(|(_, expected)| expected)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(serde::Deserialize)]
    #[allow(dead_code, reason = "only the field types are used")]
    struct Request {
        customer: String,
        period: u32,
        memo: Option<String>,
        amount: f64,
    }

    fn object(value: Value) -> JsonObject {
        value.as_object().unwrap().clone()
    }

    fn request_schema() -> JsonObject {
        object(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "SendInvoice",
            "description": "An invoice to send.",
            "type": "object",
            "properties": {
                "customer": {"$ref": "#/$defs/Customer"},
                "period": {"type": "string", "description": "The billing period."},
                "amount": {"type": "number"},
                "note": {"type": ["string", "null"]}
            },
            "required": ["customer", "period", "amount"],
            "$defs": {"Customer": {"type": "string"}}
        }))
    }

    #[test]
    fn the_schema_keeps_only_the_key_fields_as_the_tool_describes_them() {
        let schema = kept_properties(&request_schema(), &["customer", "period"]).unwrap();
        assert_eq!(
            Value::Object(schema),
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "properties": {
                    "customer": {"$ref": "#/$defs/Customer"},
                    "period": {"type": "string", "description": "The billing period."}
                },
                "required": ["customer", "period"],
                "$defs": {"Customer": {"type": "string"}}
            })
        );
        let optional = kept_properties(&request_schema(), &["note"]).unwrap();
        assert!(optional.get("required").is_none(), "an optional field stays optional");
        assert_eq!(kept_properties(&request_schema(), &["customer_id"]), Err("customer_id".to_owned()));
    }

    fn args(value: Value) -> StatusArgs {
        StatusArgs::new("send", &["customer", "period", "memo"], object(value))
    }

    #[test]
    fn fields_are_read_as_their_own_types_and_extra_fields_are_ignored() {
        let mut read = args(json!({"customer": "acme", "period": 7, "amount": 1.5, "other": true}));
        assert_eq!(read.field("customer", |r: &Request| &r.customer), Some("acme".to_owned()));
        assert_eq!(read.field("period", |r: &Request| &r.period), Some(7));
        assert_eq!(read.field("memo", |r: &Request| &r.memo), Some(None), "an absent Option is None");
        assert!(read.problems.is_empty());
    }

    #[test]
    fn every_missing_or_ill_typed_field_is_named_in_one_invalid_key_error() {
        let mut read = args(json!({"period": "seven"}));
        assert_eq!(read.field("customer", |r: &Request| &r.customer), None);
        assert_eq!(read.field("period", |r: &Request| &r.period), None);
        let error = read.into_error();
        assert_eq!(error.code(), ErrorCode::InvalidKey);
        let message = error.message();
        assert!(message.contains("send_status takes the key fields of send (customer, period, memo)"), "{message}");
        assert!(message.contains("customer is missing (expected a string)"), "{message}");
        assert!(message.contains("period is not valid (invalid type: string \"seven\", expected u32)"), "{message}");
        assert!(error.suggestion().unwrap().contains("call send_status again with customer, period, memo"));
    }
}
