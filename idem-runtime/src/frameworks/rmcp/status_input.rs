//! The input of an rmcp status tool: the key's fields only.
//!
//! A model that lost track of a call may no longer have all of its arguments (a memo it
//! wrote, an amount it was told), only what names the action. So the status tool that
//! `#[idem::status_tools]` generates takes the key's fields, and nothing else:
//!
//! - its input schema is the request type's own, cut down to those properties (types,
//!   descriptions and `required` as the tool has them; `$defs` kept so `$ref`s resolve):
//!   [`status_input_schema`]. Each field is found by its JSON name, the one the tool's own
//!   schema shows (after serde's `rename_all`, or as `json_names = [...]` gives it);
//! - it takes the arguments as a JSON object ([`StatusInput`]) and reads each key field
//!   by that JSON name, as the field's own Rust type, inferred from a closure that reads the
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
use crate::json_names::resolve;

/// What an rmcp status tool takes: the tool call's arguments as they came.
pub type StatusInput = Parameters<JsonObject>;

/// The input schema of `status_tool`: the input schema of the tool's request type `P`
/// (`Parameters<SendInvoice>`, or `SendInvoice`) with only the properties of the key's
/// `fields` (Rust names, each found by its JSON name, with the names `given` in
/// `json_names = [...]`), each as the request type describes it, `required` where the tool
/// requires it. A field whose JSON name cannot be found is left out; the status tool's
/// calls say why.
///
/// # Panics
///
/// When `P`'s schema is not an object schema: rmcp's `#[tool]` refuses it the same way,
/// when it builds the tool list.
pub fn status_input_schema<P: JsonSchema + Any>(
    status_tool: &str,
    fields: &[&str],
    given: &[(&str, &str)],
) -> Arc<JsonObject> {
    Arc::new(key_schema(&input_schema::<P>(status_tool), fields, given))
}

/// The description of a status tool: `before`, the JSON names of the key's `fields` (see
/// [`status_input_schema`]; a field's Rust name where it has none), `after`.
pub fn status_description<P: JsonSchema + Any>(
    status_tool: &str,
    (before, after): (&str, &str),
    fields: &[&str],
    given: &[(&str, &str)],
) -> String {
    let schema = input_schema::<P>(status_tool);
    let names: Vec<String> =
        fields.iter().map(|field| resolve(&schema, field, given).unwrap_or_else(|_| (*field).to_owned())).collect();
    format!("{before}{}{after}", names.join(", "))
}

/// The JSON schema of the arguments of an rmcp tool whose request type is `P`, as the
/// tool's answers find its fields' JSON names in it.
pub fn arguments_schema<P: JsonSchema + Any>() -> Option<JsonObject> {
    rmcp::handler::server::common::schema_for_input::<P>().ok().map(|schema| (*schema).clone())
}

fn input_schema<P: JsonSchema + Any>(status_tool: &str) -> Arc<JsonObject> {
    rmcp::handler::server::common::schema_for_input::<P>().unwrap_or_else(|error| {
        panic!("Invalid input schema for `{}` (the request of {status_tool}): {error}", std::any::type_name::<P>())
    })
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
        let schema = status_input_schema::<Parameters<Request>>("send_status", &["customer", "period"], &[]);
        let properties = schema["properties"].as_object().unwrap();
        assert_eq!(properties.keys().collect::<Vec<_>>(), ["customer", "period"]);
        assert_eq!(properties["customer"]["description"], "Who.");
        assert_eq!(schema["required"], json!(["customer", "period"]));
    }

    #[derive(serde::Deserialize, JsonSchema)]
    #[schemars(crate = "rmcp::schemars")]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code, reason = "only the schema is used")]
    struct Renamed {
        customer_id: String,
        #[serde(rename = "period")]
        billing_period: String,
    }

    #[test]
    fn renamed_fields_are_found_by_their_json_names_and_never_panic() {
        let fields = ["customer_id", "billing_period"];
        let schema = status_input_schema::<Parameters<Renamed>>("send_status", &fields, &[]);
        let properties = schema["properties"].as_object().unwrap();
        assert_eq!(properties.keys().collect::<Vec<_>>(), ["customerId"], "period is not found: left out");
        let given = status_input_schema::<Renamed>("send_status", &fields, &[("billing_period", "period")]);
        assert_eq!(given["properties"].as_object().unwrap().keys().collect::<Vec<_>>(), ["customerId", "period"]);
        let text = status_description::<Renamed>("send_status", ("fields: ", "."), &fields, &[]);
        assert_eq!(text, "fields: customerId, billing_period.");
    }
}
