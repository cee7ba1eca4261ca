//! What the status tools of rmcp and ADK-Rust share: the tool's input schema cut down to the
//! key's fields, and the key's fields read from a status tool call's JSON arguments.
//!
//! A model that lost track of a call may no longer have all of its arguments (a memo it
//! wrote, an amount it was told), only what names the action. So a status tool takes the
//! key's fields, and nothing else, each by its JSON name (the one the model sees in the
//! tool's schema, after serde's renames: see [`json_names`](crate::json_names)) as the
//! field's own Rust type.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::call::Tool;
use crate::error::{Error, ErrorCode};
pub(crate) use crate::json_names::JsonObject;
use crate::json_names::resolve;

/// The input schema of a status tool: `schema` (of the tool's arguments) with only the
/// properties of the key's `fields` (Rust names, each found by its JSON name, with the
/// names `given` in `json_names = [...]`), each as the arguments describe it, `required`
/// where the tool requires it, `$defs` kept so `$ref`s resolve. A field without a JSON name
/// is left out: the status tool's calls then say why (see [`StatusArgs`]).
pub(crate) fn key_schema(schema: &JsonObject, fields: &[&str], given: &[(&str, &str)]) -> JsonObject {
    let names: Vec<String> = fields.iter().filter_map(|field| resolve(schema, field, given).ok()).collect();
    kept_properties(schema, &names)
}

/// `schema` with only the properties `names`, `required` filtered the same way, and no
/// title or description of its own.
fn kept_properties(schema: &JsonObject, names: &[String]) -> JsonObject {
    let empty = JsonObject::new();
    let properties = schema.get("properties").and_then(Value::as_object).unwrap_or(&empty);
    let mut kept = JsonObject::new();
    for name in names {
        if let Some(property) = properties.get(name) {
            kept.insert(name.clone(), property.clone());
        }
    }
    let mut out = schema.clone();
    out.remove("title");
    out.remove("description");
    out.insert("type".to_owned(), Value::from("object"));
    out.insert("properties".to_owned(), Value::Object(kept));
    let required: Vec<Value> = match schema.get("required").and_then(Value::as_array) {
        Some(required) => required
            .iter()
            .filter(|name| name.as_str().is_some_and(|n| names.iter().any(|kept| kept == n)))
            .cloned()
            .collect(),
        None => Vec::new(),
    };
    if required.is_empty() {
        out.remove("required");
    } else {
        out.insert("required".to_owned(), Value::Array(required));
    }
    out
}

/// The arguments of one status tool call, read field by field; what could not be read is
/// collected, so that one answer names every missing or ill-typed key field.
pub struct StatusArgs {
    tool: &'static Tool,
    /// The key's fields: Rust names, and the JSON names they are read by (or why a field
    /// has none).
    fields: &'static [&'static str],
    names: Vec<Result<String, String>>,
    args: JsonObject,
    problems: Vec<String>,
}

impl StatusArgs {
    /// The arguments of `tool`'s status tool, whose key fields are `fields` (the Rust names
    /// of fields of the arguments, each read by its JSON name: see [`Tool::json_names`]).
    pub fn new(tool: &'static Tool, fields: &'static [&'static str], args: JsonObject) -> Self {
        let names = fields.iter().map(|field| tool.json_names.resolve(field)).collect();
        StatusArgs { tool, fields, names, args, problems: Vec::new() }
    }

    /// The key field `name` (its Rust name) as the type `F` the request type `R` gives it:
    /// `at` says where (`|r: &Parameters<SendInvoice>| &r.0.customer` for rmcp,
    /// `|r: &SendInvoice| &r.customer` for ADK-Rust) and is never called. An absent field
    /// reads as JSON `null` (an `Option` field is then `None`). `None` when it cannot be
    /// read; [`into_error`](Self::into_error) then says why.
    pub fn field<R, F: DeserializeOwned>(&mut self, name: &'static str, at: impl Fn(&R) -> &F) -> Option<F> {
        let _ = at;
        let index = self.fields.iter().position(|field| *field == name).expect("the macro reads its own fields");
        // A field without a JSON name: `into_error` says why, once.
        let json = self.names[index].as_ref().ok()?;
        match self.args.get(json) {
            Some(value) => match F::deserialize(value) {
                Ok(field) => Some(field),
                Err(error) => {
                    self.problems.push(format!("{json} is not valid ({error})"));
                    None
                }
            },
            None => match F::deserialize(&Value::Null) {
                Ok(field) => Some(field),
                Err(error) => {
                    self.problems.push(match expected(&error.to_string()) {
                        Some(expected) => format!("{json} is missing (expected {expected})"),
                        None => format!("{json} is missing"),
                    });
                    None
                }
            },
        }
    }

    /// The INVALID_KEY error for the fields [`field`](Self::field) could not read: the
    /// model's mistakes, or a field the status tool cannot find in the arguments' JSON
    /// schema (a defect of the tool's code, which no call can mend).
    pub fn into_error(self) -> Error {
        let tool = self.tool.name;
        let unnamed: Vec<String> = self
            .fields
            .iter()
            .zip(&self.names)
            .filter_map(|(field, name)| name.as_ref().err().map(|why| format!("{field}: {why}")))
            .collect();
        if !unnamed.is_empty() {
            tracing::error!(target: "idem", tool, "{tool}_status cannot read its key fields: {}", unnamed.join("; "));
            return Error::new(
                ErrorCode::InvalidKey,
                format!(
                    "{tool}_status cannot find the JSON name of a key field of {tool}, so it reads nothing: {}",
                    unnamed.join("; ")
                ),
            )
            .with_suggestion(format!(
                "do not call {tool} again to learn its outcome: tell the user that {tool}_status cannot read {tool}'s key fields, a defect of the tool to report"
            ));
        }
        let names: Vec<&str> =
            self.fields.iter().zip(&self.names).map(|(field, name)| name.as_deref().unwrap_or(field)).collect();
        let fields = names.join(", ");
        Error::new(
            ErrorCode::InvalidKey,
            format!(
                "{tool}_status takes the key fields of {tool} ({fields}): {}; nothing was read",
                self.problems.join("; ")
            ),
        )
        .with_suggestion(format!(
            "call {tool}_status again with {fields}, as {tool} was called with them (other arguments are not needed)"
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
    use crate::json_names::JsonNames;
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
        let schema = key_schema(&request_schema(), &["customer", "period"], &[]);
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
        let optional = key_schema(&request_schema(), &["note"], &[]);
        assert!(optional.get("required").is_none(), "an optional field stays optional");
        let unknown = key_schema(&request_schema(), &["customer_id", "period"], &[]);
        assert_eq!(unknown["properties"].as_object().unwrap().keys().collect::<Vec<_>>(), ["period"], "{unknown:?}");
    }

    #[test]
    fn the_schema_names_renamed_fields_by_their_json_names() {
        let schema = object(json!({
            "type": "object",
            "properties": {"customerId": {"type": "string"}, "BILLING_PERIOD": {"type": "string"}, "ref": {}},
            "required": ["customerId", "BILLING_PERIOD"]
        }));
        let cut = key_schema(&schema, &["customer_id", "billing_period", "reference"], &[("reference", "ref")]);
        let mut kept: Vec<&String> = cut["properties"].as_object().unwrap().keys().collect();
        kept.sort();
        assert_eq!(kept, ["BILLING_PERIOD", "customerId", "ref"]);
        assert_eq!(cut["required"], json!(["customerId", "BILLING_PERIOD"]));
    }

    static SEND: Tool = Tool {
        name: "send",
        json_names: JsonNames::new(&[], &["customer", "period", "memo"]),
        instruments: crate::__idem_instruments!("send"),
        claim: crate::call::Claim::new(),
        ..crate::call::tests::SEND_INVOICE
    };

    fn args(value: Value) -> StatusArgs {
        StatusArgs::new(&SEND, &["customer", "period", "memo"], object(value))
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

    static RENAMED: Tool = Tool {
        name: "renamed",
        json_names: JsonNames::new(&[], &["customer", "period"]),
        instruments: crate::__idem_instruments!("renamed"),
        claim: crate::call::Claim::new(),
        ..crate::call::tests::SEND_INVOICE
    };

    #[test]
    fn fields_are_read_and_named_by_their_json_names() {
        RENAMED.json_names.read_from(|| Some(object(json!({"properties": {"Customer": {}, "per": {}}}))));
        let mut read = StatusArgs::new(&RENAMED, &["customer", "period"], object(json!({"customer": "acme"})));
        assert_eq!(read.field("customer", |r: &Request| &r.customer), None, "read by its JSON name only");
        assert_eq!(read.field("period", |r: &Request| &r.period), None);
        let error = read.into_error();
        let message = error.message();
        assert!(message.contains("renamed_status cannot find the JSON name of a key field of renamed"), "{message}");
        assert!(message.contains("period: the arguments' JSON schema has no property period"), "{message}");
        assert!(!message.contains("customer:"), "Customer is found: {message}");
        assert!(error.suggestion().unwrap().contains("a defect of the tool"), "{error}");
    }
}
