//! `json_names = [args.customer_id = "custId"]`: the JSON names of key and compared fields
//! that `#[serde(rename = "...")]` gives the argument type, which the macro cannot see (it
//! sees the function's signature only). Names that serde's `rename_all` gives are found at
//! run time without it, in the arguments' JSON schema (`idem_runtime`'s `json_names`).
//!
//! Checked here: each entry is a field of the arguments the model sends (below an rmcp
//! `Parameters<T>` or an ADK-Rust argument struct) that is a key or compared field, or on
//! the way to one (`args.customer` for `<args.customer.id>`), listed once, with a name.

use proc_macro2::TokenStream;
use quote::quote;
use syn::LitStr;

use crate::args::FieldPath;
use crate::errors::Errors;
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

pub(crate) fn validate(
    entries: &[(FieldPath, LitStr)],
    bindings: &[Binding],
    used: &[UsedField<'_>],
    errors: &mut Errors,
) -> JsonNamesPlan {
    let mut plan = JsonNamesPlan::default();
    for field in used {
        if params::in_arguments(bindings, &field.path) && params::model_name(bindings, &field.path) == field.recorded {
            if !plan.paths.iter().any(|path| path == field.recorded) {
                plan.paths.push(field.recorded.to_owned());
            }
            let root = bindings.iter().find(|binding| binding.ident == field.path[0]);
            plan.arg = plan.arg.or(root.map(|binding| binding.arg));
        }
    }
    for (field, name) in entries {
        let path: Vec<String> = field.segments.iter().map(ToString::to_string).collect();
        let span = field.root().span();
        if !params::in_arguments(bindings, &path) {
            errors.at(
                span,
                format!(
                    "`json_names` lists `{}`, which is not a field of the arguments the model sends (an rmcp `Parameters<T>`, an ADK-Rust tool's argument struct): only their fields have JSON names of their own",
                    field.text()
                ),
            );
            continue;
        }
        let recorded = params::model_name(bindings, &path);
        let on_the_way = |used: &str| used == recorded || used.starts_with(&format!("{recorded}."));
        if !plan.paths.iter().any(|used| on_the_way(used)) {
            let known = if plan.paths.is_empty() { "none".to_owned() } else { plan.paths.join(", ") };
            errors.at(
                span,
                format!(
                    "`json_names` lists `{}`, which is neither a key field nor a compared field, nor a field on the way to one (the key and compared fields of the arguments: {known}); remove it",
                    field.text()
                ),
            );
        } else if name.value().is_empty() {
            errors.at(name.span(), format!("`json_names` gives `{}` an empty JSON name", field.text()));
        } else if plan.given.iter().any(|(given, _)| *given == recorded) {
            errors.at(span, format!("`{}` is listed twice in `json_names`; give it once", field.text()));
        } else {
            plan.given.push((recorded, name.value()));
        }
    }
    plan
}
