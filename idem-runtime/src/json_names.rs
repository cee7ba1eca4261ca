//! The names the model knows a tool's fields by: their JSON names.
//!
//! The attribute names key and compared fields as Rust does (`<args.customer_id>`,
//! `compare = [args.amount_eur]`). The model sends JSON, whose names serde's `rename_all`
//! and `rename` may have changed (`customerId`, `amountEur`), and it reads answers that
//! name fields. The macro sees the function's signature only, not the attributes of the
//! argument type, so each field's JSON name is found at run time in the JSON schema of the
//! arguments, the schema the model is shown (rmcp's input schema of `Parameters<T>`, an
//! ADK-Rust tool's parameters). For each field of a path, in order:
//!
//! 1. the name given in the attribute, `json_names = [args.customer_id = "custId"]`;
//! 2. the field's Rust name, when the schema has that property;
//! 3. the one property that one of serde's `rename_all` rules spells from the Rust name
//!    (lowercase, UPPERCASE, PascalCase, camelCase, snake_case, SCREAMING_SNAKE_CASE,
//!    kebab-case, SCREAMING-KEBAB-CASE: `customerId`, `CustomerId`, `CUSTOMER_ID`,
//!    `customer-id`, `CUSTOMER-ID` for `customer_id`);
//! 4. otherwise none: a `#[serde(rename = "...")]` the attribute does not name, a name two
//!    properties could be. A status tool then says so, naming the field and what to write;
//!    other answers name the field by its Rust name.
//!
//! A nested path (`customer.id`) is found field by field, through the schema's `$ref`s.

use std::borrow::Cow;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;

/// A JSON object: a JSON schema, a tool call's arguments.
pub type JsonObject = serde_json::Map<String, Value>;

/// How deep `$ref`s are followed for one field: a schema that refers to itself ends.
const MAX_REFS: usize = 16;

/// The JSON names of a tool's key and compared fields that come from the arguments the
/// model sends: what the expansion knows at compile time, and the arguments' schema, read
/// once at run time.
#[derive(Debug)]
pub struct JsonNames {
    /// `json_names = [...]`: JSON names by the field's path below the arguments
    /// (`customer_id`, `customer.id`).
    given: &'static [(&'static str, &'static str)],
    /// The key and compared fields (by the names the tool records them under) that are
    /// paths below the arguments: only these are renamed.
    paths: &'static [&'static str],
    /// Where the arguments' schema comes from, set by the expansion where the argument
    /// type is in scope (a generic impl's type parameters are not, in a `static`).
    schema_of: OnceLock<fn() -> Option<JsonObject>>,
    schema: OnceLock<Option<JsonObject>>,
    /// Whether a field without a JSON name was reported (once per tool).
    warned: AtomicBool,
}

impl JsonNames {
    /// The JSON names of a tool whose fields `paths` come from its arguments, with the
    /// names `given` in the attribute; usable in a `static`.
    pub const fn new(given: &'static [(&'static str, &'static str)], paths: &'static [&'static str]) -> Self {
        JsonNames { given, paths, schema_of: OnceLock::new(), schema: OnceLock::new(), warned: AtomicBool::new(false) }
    }

    /// A tool whose fields the model does not send as a JSON object of their own: every
    /// field keeps its name.
    pub const fn none() -> Self {
        JsonNames::new(&[], &[])
    }

    /// Where the arguments' JSON schema comes from: the first call wins (the same function
    /// each time a tool runs).
    pub fn read_from(&self, schema_of: fn() -> Option<JsonObject>) {
        if self.schema_of.get().is_none() {
            let _ = self.schema_of.set(schema_of);
        }
    }

    fn schema(&self) -> Option<&JsonObject> {
        let schema_of = self.schema_of.get()?;
        self.schema.get_or_init(schema_of).as_ref()
    }

    /// The JSON path of `path`, a field path below the arguments by Rust names
    /// (`customer.id`), or why it has none. Without a schema, the given name or the Rust
    /// name.
    pub fn resolve(&self, path: &str) -> Result<String, String> {
        match self.schema() {
            Some(schema) => resolve(schema, path, self.given),
            None => Ok(given_or_rust(path, self.given)),
        }
    }

    /// What the model calls the key or compared field the tool records as `name`: its JSON
    /// path when it comes from the arguments and has one, else `name` itself (logged once).
    pub fn model_name<'a>(&self, name: &'a str) -> Cow<'a, str> {
        if !self.paths.contains(&name) {
            return Cow::Borrowed(name);
        }
        match self.resolve(name) {
            Ok(json) if json == name => Cow::Borrowed(name),
            Ok(json) => Cow::Owned(json),
            Err(why) => {
                if !self.warned.swap(true, Ordering::Relaxed) {
                    tracing::warn!(target: "idem", field = name, "answers name this field by its Rust name: {why}");
                }
                Cow::Borrowed(name)
            }
        }
    }
}

/// The JSON path of `path` (Rust names, `.`-separated) in the arguments' `schema`, with
/// the names `given` in the attribute; `Err` says why there is none.
pub(crate) fn resolve(schema: &JsonObject, path: &str, given: &[(&str, &str)]) -> Result<String, String> {
    let mut node = schema;
    let mut json = String::new();
    let mut end = 0;
    for segment in path.split('.') {
        end += segment.len() + usize::from(end > 0);
        let rust_path = &path[..end];
        let Some(properties) = properties(schema, node, MAX_REFS) else {
            let what = if json.is_empty() { "the arguments are".to_owned() } else { format!("{json} is") };
            return Err(format!("{what} not an object with properties in the arguments' JSON schema"));
        };
        let name = field_name(segment, rust_path, properties, given).map_err(|why| match json.is_empty() {
            true => format!("the arguments' JSON schema {why}"),
            false => format!("the JSON schema of {json} {why}"),
        })?;
        if !json.is_empty() {
            json.push('.');
        }
        json.push_str(&name);
        node = match properties.get(&name).and_then(Value::as_object) {
            Some(next) => next,
            // A property that is not a schema object (`true`): nothing below it.
            None => {
                return if end == path.len() {
                    Ok(json)
                } else {
                    Err(format!("{json} is not an object with properties in the arguments' JSON schema"))
                };
            }
        };
    }
    Ok(json)
}

/// The JSON name of the field `segment` (at `rust_path`) among `properties`; `Err` ends a
/// sentence that starts with what the properties are of.
fn field_name(
    segment: &str,
    rust_path: &str,
    properties: &JsonObject,
    given: &[(&str, &str)],
) -> Result<String, String> {
    let listed = || properties.keys().map(String::as_str).collect::<Vec<_>>().join(", ");
    if let Some((_, json)) = given.iter().find(|(rust, _)| *rust == rust_path) {
        return match properties.contains_key(*json) {
            true => Ok((*json).to_owned()),
            false => Err(format!(
                "has no property {json}, the name json_names gives {rust_path} (its properties: {})",
                listed()
            )),
        };
    }
    if properties.contains_key(segment) {
        return Ok(segment.to_owned());
    }
    let spellings = spellings(segment);
    let found: Vec<&String> = spellings.iter().filter(|spelling| properties.contains_key(spelling.as_str())).collect();
    match found[..] {
        [name] => Ok(name.clone()),
        [] => Err(format!(
            "has no property {segment}, nor one that a serde rename_all rule spells from it ({}): its properties are {}. \
             A field renamed with #[serde(rename = \"...\")] is named in the attribute: \
             #[idempotent(..., json_names = [<the path to {rust_path}> = \"<its JSON name>\"])]",
            spellings.join(", "),
            listed(),
        )),
        _ => Err(format!(
            "has more than one property that a serde rename_all rule spells from {segment} ({}): name the one it is \
             in the attribute: #[idempotent(..., json_names = [<the path to {rust_path}> = \"<its JSON name>\"])]",
            found.iter().map(|name| name.as_str()).collect::<Vec<_>>().join(", "),
        )),
    }
}

/// The properties of `node`, following `$ref`s into `root` (and the branches of `allOf`,
/// `anyOf`, `oneOf`: the first that has properties).
fn properties<'s>(root: &'s JsonObject, node: &'s JsonObject, refs_left: usize) -> Option<&'s JsonObject> {
    if let Some(properties) = node.get("properties").and_then(Value::as_object) {
        return Some(properties);
    }
    let refs_left = refs_left.checked_sub(1)?;
    if let Some(target) = node.get("$ref").and_then(Value::as_str).and_then(|reference| lookup(root, reference)) {
        return properties(root, target, refs_left);
    }
    ["allOf", "anyOf", "oneOf"].iter().find_map(|combinator| {
        let branches = node.get(*combinator)?.as_array()?;
        branches.iter().filter_map(Value::as_object).find_map(|branch| properties(root, branch, refs_left))
    })
}

/// What a local `$ref` (`#/$defs/Customer`) points to.
fn lookup<'s>(root: &'s JsonObject, reference: &str) -> Option<&'s JsonObject> {
    let mut node = root;
    for token in reference.strip_prefix("#/")?.split('/') {
        let token = token.replace("~1", "/").replace("~0", "~");
        node = node.get(&token)?.as_object()?;
    }
    Some(node)
}

/// `path` with each field's given name, where the attribute gives one.
/// The JSON path of `path` (Rust names below the arguments) in `schema` when it has one
/// there, else by the names `given` or the Rust names: what a description calls the field.
pub(crate) fn json_path(schema: Option<&JsonObject>, path: &str, given: &[(&str, &str)]) -> String {
    match schema {
        Some(schema) => resolve(schema, path, given).unwrap_or_else(|_| given_or_rust(path, given)),
        None => given_or_rust(path, given),
    }
}

#[cfg(feature = "adk")]
/// The fields a description fixed at compile time names otherwise than `schema` does:
/// `(path, the name written, the JSON name)` for each of `described` (a path below the
/// arguments, the name the description gives it) whose JSON name differs.
pub(crate) fn misnamed<'a>(
    schema: &JsonObject,
    described: &[(&'a str, &'a str)],
    given: &[(&str, &str)],
) -> Vec<(&'a str, &'a str, String)> {
    let named = described.iter().map(|&(path, name)| (path, name, json_path(Some(schema), path, given)));
    named.filter(|(_, name, json)| name != json).collect()
}

fn given_or_rust(path: &str, given: &[(&str, &str)]) -> String {
    let mut end = 0;
    let segments = path.split('.').map(|segment| {
        end += segment.len() + usize::from(end > 0);
        given.iter().find(|(rust, _)| *rust == &path[..end]).map_or(segment, |(_, json)| *json)
    });
    segments.collect::<Vec<_>>().join(".")
}

/// The spellings serde's `rename_all` rules give the field `field`, other than `field`
/// itself, each once: serde's `RenameRule::apply_to_field` for UPPERCASE, PascalCase,
/// camelCase, SCREAMING_SNAKE_CASE, kebab-case and SCREAMING-KEBAB-CASE (lowercase and
/// snake_case leave a field as it is).
pub(crate) fn spellings(field: &str) -> Vec<String> {
    let pascal: String = {
        let mut pascal = String::with_capacity(field.len());
        let mut capitalize = true;
        for ch in field.chars() {
            if ch == '_' {
                capitalize = true;
            } else if capitalize {
                pascal.push(ch.to_ascii_uppercase());
                capitalize = false;
            } else {
                pascal.push(ch);
            }
        }
        pascal
    };
    let camel = {
        let mut chars = pascal.chars();
        chars.next().map(|first| first.to_ascii_lowercase().to_string() + chars.as_str()).unwrap_or_default()
    };
    let upper = field.to_ascii_uppercase();
    let candidates = [upper.clone(), pascal, camel, field.replace('_', "-"), upper.replace('_', "-")];
    let mut out: Vec<String> = Vec::with_capacity(candidates.len());
    for candidate in candidates {
        if candidate != field && !candidate.is_empty() && !out.contains(&candidate) {
            out.push(candidate);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[cfg(feature = "adk")]
    #[test]
    fn a_description_written_at_compile_time_is_checked_against_the_schema() {
        let schema = json!({"type": "object", "properties": {"customerId": {}, "period": {}}});
        let schema = schema.as_object().unwrap();
        let described = [("customer_id", "customer_id"), ("period", "period")];
        assert_eq!(misnamed(schema, &described, &[]), [("customer_id", "customer_id", "customerId".to_owned())]);
        assert!(misnamed(schema, &[("customer_id", "customerId"), ("period", "period")], &[]).is_empty());
    }

    fn object(value: Value) -> JsonObject {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn spellings_follow_serdes_rules_for_fields() {
        assert_eq!(spellings("customer_id"), ["CUSTOMER_ID", "CustomerId", "customerId", "customer-id", "CUSTOMER-ID"]);
        assert_eq!(spellings("amount"), ["AMOUNT", "Amount"], "camelCase, kebab-case: as it is");
        assert_eq!(spellings("a__b"), ["A__B", "AB", "aB", "a--b", "A--B"]);
        assert_eq!(spellings("_x"), ["_X", "X", "x", "-x", "-X"]);
        assert_eq!(spellings(""), Vec::<String>::new(), "nothing to spell, nothing panics");
        assert_eq!(spellings("é_x"), ["é_X", "éX", "é-x", "é-X"], "serde changes ASCII letters only");
    }

    fn schema() -> JsonObject {
        object(json!({
            "type": "object",
            "properties": {
                "customerId": {"type": "string"},
                "billing-period": {"type": "string"},
                "AMOUNT_EUR": {"type": "number"},
                "memo": {"type": "string"},
                "custRef": {"type": "string"},
                "billingAddress": {"$ref": "#/$defs/Address", "description": "Where to."},
                "nullable": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/Address"}]}
            },
            "$defs": {"Address": {"type": "object", "properties": {"PostCode": {"type": "string"}}}}
        }))
    }

    #[test]
    fn each_rule_is_found_and_a_name_kept_stays() {
        let schema = schema();
        let found = |path: &str| resolve(&schema, path, &[]);
        assert_eq!(found("customer_id").unwrap(), "customerId");
        assert_eq!(found("billing_period").unwrap(), "billing-period");
        assert_eq!(found("amount_eur").unwrap(), "AMOUNT_EUR");
        assert_eq!(found("memo").unwrap(), "memo");
        assert_eq!(found("billing_address.post_code").unwrap(), "billingAddress.PostCode", "through a $ref");
        assert_eq!(found("nullable.post_code").unwrap(), "nullable.PostCode", "through anyOf");
    }

    #[test]
    fn a_name_no_rule_spells_is_given_or_explained() {
        let schema = schema();
        let why = resolve(&schema, "customer_ref", &[]).unwrap_err();
        assert!(why.contains("has no property customer_ref"), "{why}");
        assert!(why.contains("customerRef, customer-ref"), "the spellings tried: {why}");
        assert!(why.contains("custRef"), "the properties there are: {why}");
        assert!(why.contains("json_names = [<the path to customer_ref> = \"<its JSON name>\"]"), "{why}");
        assert_eq!(resolve(&schema, "customer_ref", &[("customer_ref", "custRef")]).unwrap(), "custRef");
        let typo = resolve(&schema, "customer_ref", &[("customer_ref", "custref")]).unwrap_err();
        assert!(typo.contains("no property custref, the name json_names gives customer_ref"), "{typo}");
        let nested = resolve(&schema, "billing_address.zip", &[]).unwrap_err();
        assert!(nested.starts_with("the JSON schema of billingAddress has no property zip"), "{nested}");
        let flat = resolve(&schema, "memo.text", &[]).unwrap_err();
        assert!(flat.contains("memo is not an object"), "{flat}");
    }

    #[test]
    fn two_properties_one_field_could_be_are_ambiguous() {
        let schema = object(json!({"properties": {"customerId": {}, "customer-id": {}}}));
        let why = resolve(&schema, "customer_id", &[]).unwrap_err();
        assert!(why.contains("more than one property") && why.contains("customerId, customer-id"), "{why}");
        let both = object(json!({"properties": {"customer_id": {}, "customerId": {}}}));
        assert_eq!(resolve(&both, "customer_id", &[]).unwrap(), "customer_id", "the Rust name, when it is there");
    }

    #[test]
    fn only_argument_paths_are_renamed_and_only_with_a_schema() {
        static NAMES: JsonNames =
            JsonNames::new(&[("customer_ref", "custRef")], &["customer_id", "customer_ref", "gone"]);
        assert_eq!(NAMES.model_name("customer_id"), "customer_id", "no schema yet: as recorded");
        assert_eq!(NAMES.resolve("customer_ref").unwrap(), "custRef", "no schema: the given name");
        NAMES.read_from(|| Some(schema()));
        assert_eq!(NAMES.model_name("customer_id"), "customerId");
        assert_eq!(NAMES.model_name("customer_ref"), "custRef");
        assert_eq!(NAMES.model_name("scope"), "scope", "not from the arguments");
        assert_eq!(NAMES.model_name("gone"), "gone", "no JSON name: the Rust name");
    }
}
