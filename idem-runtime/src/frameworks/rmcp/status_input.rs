//! The input of an rmcp status tool: the key's fields only.
//!
//! A model that lost track of a call may no longer have all of its arguments (a memo it
//! wrote, an amount it was told), only what names the action. So the status tool that
//! `#[idem::status_tools]` generates takes the key's fields, and nothing else:
//!
//! - its input schema is the request type's own, cut down to those properties (types,
//!   descriptions and `required` as the tool has them; `$defs` kept so `$ref`s resolve):
//!   [`status_input_schema`];
//! - it takes the arguments as a JSON object ([`StatusInput`]) and reads each key field
//!   by its JSON name, as the field's own Rust type, inferred from a closure that reads the
//!   field from the request ([`StatusArgs::field`](crate::frameworks::status_args::StatusArgs::field)).
//!   A field that is missing or ill-typed is an `INVALID_KEY` tool result naming it; other
//!   arguments are ignored.
//!
//! The key is then built from those values by the same key parts as in the tool.

use std::any::Any;
use std::sync::Arc;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::JsonObject;
use rmcp::schemars::JsonSchema;

use crate::frameworks::status_args::key_schema;

/// What an rmcp status tool takes: the tool call's arguments as they came.
pub type StatusInput = Parameters<JsonObject>;

/// The input schema of `status_tool`: the input schema of the tool's request type `P`
/// (`Parameters<SendInvoice>`, or `SendInvoice`) with only the properties `fields`, each
/// as the request type describes it, `required` where the tool requires it.
///
/// # Panics
///
/// When `P`'s schema is not an object schema (rmcp's `#[tool]` refuses it the same way,
/// when it builds the tool list), or when a field is not one of its properties: the key
/// reads the field by its Rust name, and a `#[serde(rename)]` of a key field makes its JSON
/// name another one, which a status tool cannot find.
pub fn status_input_schema<P: JsonSchema + Any>(status_tool: &str, fields: &[&str]) -> Arc<JsonObject> {
    let schema = rmcp::handler::server::common::schema_for_input::<P>().unwrap_or_else(|error| {
        panic!("Invalid input schema for `{}` (the request of {status_tool}): {error}", std::any::type_name::<P>())
    });
    Arc::new(key_schema(status_tool, std::any::type_name::<P>(), &schema, fields))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(serde::Deserialize, JsonSchema)]
    #[schemars(crate = "rmcp::schemars")]
    #[allow(dead_code, reason = "only the schema is used")]
    struct Request {
        /// Who.
        customer: String,
        period: u32,
        memo: Option<String>,
        amount: f64,
    }

    #[test]
    fn the_schema_comes_from_the_request_type() {
        let schema = status_input_schema::<Parameters<Request>>("send_status", &["customer", "period"]);
        let properties = schema["properties"].as_object().unwrap();
        assert_eq!(properties.keys().collect::<Vec<_>>(), ["customer", "period"]);
        assert_eq!(properties["customer"]["description"], "Who.");
        assert_eq!(schema["required"], json!(["customer", "period"]));
    }

    #[test]
    #[should_panic(expected = "has no property `customerId`")]
    fn a_field_the_schema_does_not_have_is_refused_when_the_tool_list_is_built() {
        status_input_schema::<Request>("send_status", &["customerId"]);
    }
}
