//! `json_names = [args.customer_id = "custId"]`: the JSON names of key and compared fields
//! that `#[serde(rename = "...")]` gives the argument type, which the macro cannot see (it
//! sees the function's signature only). Names that serde's `rename_all` gives are found at
//! run time without it, in the arguments' JSON schema (`idem_runtime`'s `json_names`).
//!
//! Checked in `valid.rs`: each entry is a field of the arguments the model sends (below an
//! rmcp `Parameters<T>` or an ADK-Rust argument struct) that is a key or compared field, or on
//! the way to one (`args.customer` for `<args.customer.id>`), listed once, with a name.

use proc_macro2::TokenStream;
use quote::quote;
use syn::LitStr;

use crate::attr::FieldPath;
use crate::params::{self, Binding};

/// What the tool's JSON names need: the names given, by the field's path below the
/// arguments, and the key and compared fields that are fields of the arguments.
#[derive(Default)]
pub(crate) struct JsonNamesPlan {
    /// `("customer_id", "custId")`: a path below the arguments (the name the tool records
    /// the field under) and the JSON name of its last field.
    pub given: Vec<(String, String)>,
    /// The key and compared fields that are fields of the arguments, by the names the tool
    /// records them under: the names answers show as the model knows them.
    pub paths: Vec<String>,
    /// The index of the argument they are fields of.
    pub arg: Option<usize>,
}

impl JsonNamesPlan {
    /// `&[("customer_id", "custId"), ...]`: the names given, as the runtime takes them.
    pub(crate) fn given_tokens(&self) -> TokenStream {
        let entries = self.given.iter().map(|(rust, json)| quote!((#rust, #json)));
        quote!(&[#(#entries),*])
    }
}

/// A key or compared field by its path as written (`args.customer_id`) and the name the tool
/// records it under (`customer_id`).
pub(crate) struct UsedField<'a> {
    pub path: Vec<String>,
    pub recorded: &'a str,
}

/// The key and compared fields that are fields of the arguments the model sends, by the
/// names the tool records them under (each once, in order), and the argument they are
/// fields of.
pub(crate) fn argument_fields(bindings: &[Binding], used: &[UsedField<'_>]) -> (Vec<String>, Option<usize>) {
    let mut paths: Vec<String> = Vec::new();
    let mut arg = None;
    for field in used {
        if params::in_arguments(bindings, &field.path) && params::model_name(bindings, &field.path) == field.recorded {
            if !paths.iter().any(|path| path == field.recorded) {
                paths.push(field.recorded.to_owned());
            }
            let root = bindings.iter().find(|binding| binding.ident == field.path[0]);
            arg = arg.or(root.map(|binding| binding.arg));
        }
    }
    (paths, arg)
}

/// The plan of valid `json_names` entries (`valid.rs` checks them): each name given by the
/// name the tool records its field under.
pub(crate) fn lower(entries: &[(FieldPath, LitStr)], bindings: &[Binding], used: &[UsedField<'_>]) -> JsonNamesPlan {
    let (paths, arg) = argument_fields(bindings, used);
    let given =
        entries.iter().map(|(field, name)| (params::model_name(bindings, &field.path()), name.value())).collect();
    JsonNamesPlan { given, paths, arg }
}

/// The JSON path of `path` (a field below the arguments, by the name the tool records it
/// under) as far as the macro knows it: each segment by the name `json_names` gives it, or
/// its Rust name. The run time's `given_or_rust`, for text fixed at compile time.
pub(crate) fn given_path(plan: &JsonNamesPlan, path: &str) -> String {
    let mut end = 0;
    let segments = path.split('.').map(|segment| {
        end += segment.len() + usize::from(end > 0);
        plan.given.iter().find(|(rust, _)| *rust == path[..end]).map_or(segment, |(_, json)| json.as_str())
    });
    segments.collect::<Vec<_>>().join(".")
}
