//! `describe = ...` and the facts the paragraph of a tool's description needs from the
//! function: what the attribute says of the paragraph (checked and lowered into the plan),
//! and an approval's condition as the model reads it. The paragraph itself is built from
//! the plan, in `expand/paragraph.rs`.
//!
//! A paragraph is [`Part`]s: literal text, the fields the model sends (a JSON name can only
//! be known at run time, from the arguments' schema, where serde's `rename_all` shows), and
//! the budget's limit (its `static` is only readable at run time).

use proc_macro2::{Group, TokenStream, TokenTree};
use quote::quote;

use crate::approval_text;
use crate::ast::Tool;
use crate::attr::Describe;
use crate::errors::Errors;
use crate::params::{self, Binding};

/// A piece of the paragraph.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Part {
    Text(String),
    /// A field of the arguments the model sends, by the path the tool records it under
    /// (`customer`, `customer.id`): shown by its JSON name.
    Field(String),
    /// The budget's limit and window: "the budget refunds (at most 20 runs per day)".
    Budget,
}

/// What `describe = ...` gives: nothing (the generated paragraph), a template, or `off`.
pub(crate) enum Given {
    Generated,
    /// `describe = "..."`, in parts.
    Text(Vec<Part>),
    Off,
}

/// `describe = "..."`: each placeholder names a parameter or a field path of one, as in an
/// approval's text.
pub(crate) fn check(tool: &Tool, errors: &mut Errors) {
    let Some(Describe::Text(text)) = &tool.attr.describe else { return };
    let texts = approval_text::Checked { setting: "`describe = ...`", example: "<customer> or <req.customer>" };
    let hint = ". A placeholder is replaced by the field's name as the model knows it";
    texts.check(text, &tool.item.sig.ident, &tool.bindings, hint, errors);
}

/// What the attribute says of the paragraph, lowered: a template's placeholders become the
/// names the model knows (fields of its arguments resolved at run time).
pub(crate) fn given(tool: &Tool) -> Given {
    match &tool.attr.describe {
        None => Given::Generated,
        Some(Describe::Off) => Given::Off,
        Some(Describe::Text(text)) => {
            let parts = approval_text::parse(&text.value()).into_iter().filter_map(|piece| match piece {
                approval_text::Piece::Literal(text) => Some(Part::Text(text)),
                approval_text::Piece::Placeholder { path: Some(path), .. } => Some(field(&tool.bindings, &path)),
                _ => None,
            });
            Given::Text(parts.collect())
        }
    }
}

/// A placeholder's field: by its JSON path when it is below the arguments the model sends.
fn field(bindings: &[Binding], path: &[String]) -> Part {
    let name = params::model_name(bindings, path);
    let below_arguments = bindings.iter().any(|binding| binding.ident == path[0] && binding.params_path.is_some());
    if below_arguments { Part::Field(name) } else { Part::Text(name) }
}

/// `approval(when = ...)`'s condition as the model reads it: the tokens as written, with
/// the paths into the arguments the model sends named as it knows them (`amount > 1000.0`
/// for `req.amount > 1000.0` under `Parameters(req)`).
pub(crate) fn condition(condition: &syn::Expr, bindings: &[Binding]) -> String {
    crate::written::written(model_named(quote!(#condition), bindings))
}

/// `tokens` with each path that starts at a binding (`req.line.amount`) replaced by the
/// field's name as the model knows it (`line.amount`).
fn model_named(tokens: TokenStream, bindings: &[Binding]) -> TokenStream {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out: Vec<TokenTree> = Vec::new();
    let mut i = 0;
    while i < trees.len() {
        match &trees[i] {
            TokenTree::Ident(ident) => {
                let mut path = vec![ident.to_string()];
                while let (Some(TokenTree::Punct(dot)), Some(TokenTree::Ident(next))) =
                    (trees.get(i + 1), trees.get(i + 2))
                    && dot.as_char() == '.'
                {
                    path.push(next.to_string());
                    i += 2;
                }
                let name: TokenStream = params::model_name(bindings, &path).parse().expect("a path of identifiers");
                out.extend(name);
            }
            TokenTree::Group(group) => {
                let mut renamed = Group::new(group.delimiter(), model_named(group.stream(), bindings));
                renamed.set_span(group.span());
                out.push(renamed.into());
            }
            other => out.push(other.clone()),
        }
        i += 1;
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bindings(sig: syn::Signature) -> Vec<Binding> {
        params::bindings(&sig)
    }

    #[test]
    fn conditions_name_fields_as_the_model_knows_them() {
        let plain = bindings(syn::parse_quote!(fn f(amount: f64, currency: String)));
        assert_eq!(condition(&syn::parse_quote!(amount > 1000.0), &plain), "amount > 1000.0");
        assert_eq!(
            condition(&syn::parse_quote!(amount > 1000.0 && currency == "EUR"), &plain),
            "amount > 1000.0 && currency == \"EUR\""
        );
        let rmcp = bindings(syn::parse_quote!(fn f(Parameters(req): Parameters<Req>)));
        assert_eq!(condition(&syn::parse_quote!(req.amount > 1000.0), &rmcp), "amount > 1000.0");
        assert_eq!(condition(&syn::parse_quote!(req.line.amount >= 5.0), &rmcp), "line.amount >= 5.0");
        assert_eq!(condition(&syn::parse_quote!(!req.trusted), &rmcp), "!trusted");
        assert_eq!(
            condition(&syn::parse_quote!(req.amount.abs() >= 5.0 || f(req.n)), &rmcp),
            "amount.abs() >= 5.0 || f(n)"
        );
        // As the compiler hands the tokens over: no spaces around the dots.
        let tight: syn::Expr = syn::parse_str("req.amount>1000.0").unwrap();
        assert_eq!(condition(&tight, &rmcp), "amount > 1000.0");
    }
}
