//! Agent frameworks, recognized by their attributes' names in the tokens (this crate
//! depends on none of them): rmcp's `#[tool]`, rig's `#[rig_tool]` and ADK-Rust's `#[tool]`.
//!
//! - rmcp: `#[idempotent]` goes ABOVE `#[tool]`. It then sees the `async fn` as written and
//!   re-emits `#[tool(...)]` with `idempotent_hint = true` added to its annotations (unless
//!   the user set it). Below `#[tool]` it would see the boxed future rmcp made of the
//!   function, with the annotations already fixed: a compile error says to move it.
//! - rig: either order works for the tool (rig's expansion keeps the function, attribute
//!   included). Above `#[rig_tool]`, the status function is also made a rig tool.
//! - ADK-Rust: `#[idempotent]` goes above ADK's `#[tool]`, which is re-emitted as written;
//!   a status tool is made beside it (`expand/adk.rs`). Its `#[tool]` has rmcp's name:
//!   see [`which_tool`].

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, ItemFn, Meta, ReturnType, Token, Type};

use crate::errors::Errors;

mod which_tool;
pub(crate) use which_tool::{check_tool, which_tool};

/// The framework whose tool attribute sits below `#[idempotent]`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framework {
    None,
    /// rmcp's `#[tool]`.
    Rmcp,
    /// rig's `#[rig_tool]`.
    Rig,
    /// ADK-Rust's `#[tool]` (adk-tool, or adk-rust's re-export).
    Adk,
}

/// Whether an attribute's path ends in `name` (`tool`, `rmcp::tool`).
pub(crate) fn is_attr(attr: &Attribute, name: &str) -> bool {
    attr.path().segments.last().is_some_and(|segment| segment.ident == name)
}

/// The framework of `item`'s tool attribute. Called once per expansion, by `ast.rs`: the
/// model carries the answer.
pub(crate) fn detect(item: &ItemFn) -> Framework {
    if let Some(tool) = item.attrs.iter().find(|attr| is_attr(attr, "tool")) {
        // An undecided `#[tool]` is rmcp's, as it always was; `check_tool` reports it.
        which_tool(tool, &item.sig).unwrap_or(Framework::Rmcp)
    } else if item.attrs.iter().any(|attr| is_attr(attr, "rig_tool")) {
        Framework::Rig
    } else {
        Framework::None
    }
}

/// The descriptions a tool's framework attribute gets (made by `expand/description.rs`):
/// each `None` keeps what the attribute has.
pub(crate) struct Descriptions {
    /// rmcp's `#[tool(description = ...)]`: an expression.
    pub rmcp: Option<TokenStream>,
    /// rig's `#[rig_tool(description = "...")]`: a literal.
    pub rig: Option<String>,
    /// One more doc line, which ADK-Rust's `#[tool]` joins into its description.
    pub adk_line: Option<String>,
}

/// The function's attributes as re-emitted: rmcp's `#[tool(...)]` gets
/// `annotations(idempotent_hint = true)` unless its annotations set `idempotent_hint`.
/// rmcp's `#[tool]` and rig's `#[rig_tool]` get the `descriptions` given: their own
/// `description = ...` or the doc comment as paragraphs (`docs::description`: both would
/// join its lines with "\n"), then idem's paragraph. ADK-Rust's `#[tool]` (no description
/// argument, no annotations) stays as written, and the paragraph is one doc line more.
pub(crate) fn tool_attrs(item: &ItemFn, framework: Framework, descriptions: &Descriptions) -> Vec<Attribute> {
    let rmcp = framework == Framework::Rmcp;
    let mut attrs: Vec<Attribute> = item
        .attrs
        .iter()
        .map(|attr| {
            if rmcp && is_attr(attr, "tool") {
                rebuilt(attr, descriptions.rmcp.clone(), true)
            } else if is_attr(attr, "rig_tool") {
                rebuilt(attr, descriptions.rig.as_ref().map(|text| quote!(#text)), false)
            } else {
                attr.clone()
            }
        })
        .collect();
    if let Some(line) = &descriptions.adk_line {
        attrs.push(syn::parse_quote!(#[doc = #line]));
    }
    attrs
}

/// The `description = ...` of an rmcp tool's `#[tool(...)]`, if it has one.
pub(crate) fn rmcp_own_description(item: &ItemFn) -> Option<Expr> {
    item.attrs.iter().find(|attr| is_attr(attr, "tool")).and_then(own_description)
}

/// The `description = ...` of a rig tool's `#[rig_tool(...)]`, if it has one.
pub(crate) fn rig_own_description(item: &ItemFn) -> Option<Expr> {
    item.attrs.iter().find(|attr| is_attr(attr, "rig_tool")).and_then(own_description)
}

fn own_description(attr: &Attribute) -> Option<Expr> {
    let Meta::List(list) = &attr.meta else { return None };
    let args = list.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated).ok()?;
    args.into_iter().find_map(|arg| match arg {
        Meta::NameValue(value) if value.path.is_ident("description") => Some(value.value),
        _ => None,
    })
}

/// `#[tool]` -> `#[tool(annotations(idempotent_hint = true))]`;
/// `#[tool(name = "x", annotations(title = "X"))]` ->
/// `#[tool(name = "x", annotations(title = "X", idempotent_hint = true))]` (with `hint`);
/// `description = ...` first when given one, in place of the attribute's own. Arguments
/// that do not parse are left to the framework to report.
fn rebuilt(attr: &Attribute, description: Option<TokenStream>, hint: bool) -> Attribute {
    let args = match &attr.meta {
        Meta::Path(_) => Punctuated::new(),
        Meta::List(list) => match list.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated) {
            Ok(args) => args,
            Err(_) => return attr.clone(),
        },
        Meta::NameValue(_) => return attr.clone(),
    };
    let mut found = !hint;
    let mut rebuilt: Vec<TokenStream> = Vec::new();
    let replaced = description.is_some();
    if let Some(description) = description {
        rebuilt.push(quote!(description = #description));
    }
    for arg in args {
        match arg {
            Meta::NameValue(value) if replaced && value.path.is_ident("description") => {}
            Meta::List(list) if hint && list.path.is_ident("annotations") => {
                found = true;
                let Ok(inner) = list.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated) else {
                    return attr.clone();
                };
                let set = inner.iter().any(|meta| meta.path().is_ident("idempotent_hint"));
                let hint = (!set).then(|| quote!(idempotent_hint = true));
                let inner = inner.iter().map(ToTokens::to_token_stream).chain(hint);
                rebuilt.push(quote!(annotations(#(#inner),*)));
            }
            other => rebuilt.push(other.to_token_stream()),
        }
    }
    if !found {
        rebuilt.push(quote!(annotations(idempotent_hint = true)));
    }
    if rebuilt.is_empty() {
        return attr.clone();
    }
    let path = attr.path();
    syn::parse_quote_spanned!(attr.span()=> #[#path(#(#rebuilt),*)])
}

/// The `#[rig_tool]` of a rig tool's status function: the tool's attribute path, and the
/// descriptions its `params(...)` gives the parameters the status function keeps.
pub(crate) fn rig_status_attr(attr: &Attribute, kept: &[String]) -> TokenStream {
    let path = attr.path();
    let described: Vec<TokenStream> = match &attr.meta {
        Meta::List(list) => list
            .parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
            .into_iter()
            .flatten()
            .filter_map(|arg| match arg {
                Meta::List(params) if params.path.is_ident("params") => {
                    params.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated).ok()
                }
                _ => None,
            })
            .flatten()
            .filter(|param| param.path().get_ident().is_some_and(|name| kept.contains(&name.to_string())))
            .map(|param| param.to_token_stream())
            .collect(),
        _ => Vec::new(),
    };
    if described.is_empty() { quote!(#[#path]) } else { quote!(#[#path(params(#(#described),*))]) }
}

/// `#[idempotent]` placed below rmcp's `#[tool]` sees a sync function returning
/// `Pin<Box<dyn Future<Output = R> + Send + '_>>`: rmcp has already registered the tool's
/// annotations and boxed its body. Tell the user to swap the attributes.
pub(crate) fn check_order(item: &ItemFn, errors: &mut Errors) {
    let sig = &item.sig;
    if sig.asyncness.is_none()
        && let ReturnType::Type(_, ty) = &sig.output
        && is_boxed_future(ty)
    {
        errors.at(
            sig.ident.span(),
            format!(
                "#[idempotent] must be placed above rmcp's #[tool]: below it, `{}` is already a boxed future and its tool annotations are fixed; write #[idempotent(...)] on the line above #[tool(...)] (on a function of your own that returns a boxed future, write it as an `async fn` instead)",
                sig.ident
            ),
        );
    }
}

/// rmcp's `Json<T>` wrapper (alone or as a `Result`'s `Ok` type) cannot be stored and
/// replayed: say what to return instead, once, rather than a cascade of serde errors.
pub(crate) fn check_rmcp_return(item: &ItemFn, errors: &mut Errors) {
    let ReturnType::Type(_, ty) = &item.sig.output else { return };
    let ok_type = match last_segment(ty) {
        Some(segment) if segment.ident == "Result" => match &segment.arguments {
            syn::PathArguments::AngleBracketed(args) => match args.args.first() {
                Some(syn::GenericArgument::Type(ok)) => ok,
                _ => return,
            },
            _ => return,
        },
        _ => ty,
    };
    if last_segment(ok_type).is_some_and(|segment| segment.ident == "Json") {
        errors.at(
            ok_type.span(),
            "#[idempotent] stores a tool's result and replays it, and rmcp's `Json<T>` cannot be stored; return `Result<CallToolResult, ErrorData>` and build the result with `CallToolResult::structured(serde_json::json!(...))` (idem marks its replays `\"replayed\": true` there)",
        );
    }
}

fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(path) => path.path.segments.last(),
        _ => None,
    }
}

/// `Pin<Box<dyn Future<...>>>`, spelled with any path prefix.
fn is_boxed_future(ty: &Type) -> bool {
    let text = ty.to_token_stream().to_string().replace(' ', "");
    let pin = text.find("Pin<Box<dyn");
    pin.is_some_and(|at| text[at..].contains("Future<Output="))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hinted(attr: Attribute) -> String {
        rebuilt(&attr, None, true).to_token_stream().to_string().replace(' ', "")
    }

    /// The attributes of `item` as re-emitted with the framework's own description (no
    /// paragraph: `expand/description.rs` makes those): the doc comment as paragraphs where
    /// the attribute has none.
    fn reemitted(item: ItemFn) -> Vec<String> {
        let docs = crate::docs::description(&item.attrs);
        let own = |attr: &str| item.attrs.iter().find(|a| is_attr(a, attr)).and_then(own_description);
        let descriptions = Descriptions {
            rmcp: docs.as_ref().filter(|_| own("tool").is_none()).map(|docs| quote!(#docs)),
            rig: docs.clone().filter(|_| own("rig_tool").is_none()),
            adk_line: None,
        };
        tool_attrs(&item, detect(&item), &descriptions).iter().map(|attr| attr.to_token_stream().to_string()).collect()
    }

    #[test]
    fn tools_without_a_description_get_their_doc_comment_as_paragraphs() {
        let rmcp = reemitted(syn::parse_quote! {
            /// Send the invoice. Safe to retry: a
            /// second call sends nothing.
            #[tool(annotations(title = "Send"))]
            async fn f(&self) {}
        });
        assert_eq!(
            rmcp[2],
            r#"# [tool (description = "Send the invoice. Safe to retry: a second call sends nothing." , annotations (title = "Send" , idempotent_hint = true))]"#
        );
        let rig = reemitted(syn::parse_quote! {
            /// Send the
            /// invoice.
            #[rig_tool]
            async fn f() {}
        });
        assert_eq!(rig[2], r#"# [rig_tool (description = "Send the invoice.")]"#);
        let given = reemitted(syn::parse_quote! {
            /// Send the
            /// invoice.
            #[tool(description = "Mine")]
            async fn f(&self) {}
        });
        assert_eq!(given[2], r#"# [tool (description = "Mine" , annotations (idempotent_hint = true))]"#);
        let included = reemitted(syn::parse_quote! {
            #[doc = include_str!("send.md")]
            #[rig_tool]
            async fn f() {}
        });
        assert_eq!(included[1], "# [rig_tool]", "left to the framework");
    }

    #[test]
    fn the_hint_is_added_unless_set() {
        assert_eq!(hinted(syn::parse_quote!(#[tool])), "#[tool(annotations(idempotent_hint=true))]");
        assert_eq!(
            hinted(syn::parse_quote!(#[rmcp::tool(description = "Send", annotations(title = "Send"))])),
            "#[rmcp::tool(description=\"Send\",annotations(title=\"Send\",idempotent_hint=true))]"
        );
        assert_eq!(
            hinted(syn::parse_quote!(#[tool(annotations(idempotent_hint = false))])),
            "#[tool(annotations(idempotent_hint=false))]"
        );
    }

    #[test]
    fn rig_status_tools_keep_the_descriptions_of_their_parameters() {
        let attr: Attribute =
            syn::parse_quote!(#[rig_tool(description = "Send", params(customer = "Who", amount = "How much"))]);
        let kept = ["customer".to_owned()];
        assert_eq!(rig_status_attr(&attr, &kept).to_string().replace(' ', ""), "#[rig_tool(params(customer=\"Who\"))]");
        assert_eq!(
            rig_status_attr(&syn::parse_quote!(#[rig_core::rig_tool]), &kept).to_string().replace(' ', ""),
            "#[rig_core::rig_tool]"
        );
    }

    #[test]
    fn frameworks_are_recognized_by_name() {
        let rmcp: ItemFn = syn::parse_quote!(
            #[doc = "x"]
            #[rmcp::tool]
            async fn f() {}
        );
        let rig: ItemFn = syn::parse_quote!(
            #[rig_tool(description = "x")]
            async fn f() {}
        );
        let plain: ItemFn = syn::parse_quote!(
            fn f() {}
        );
        assert!(detect(&rmcp) == Framework::Rmcp);
        assert!(detect(&rig) == Framework::Rig);
        assert!(detect(&plain) == Framework::None);
    }

    #[test]
    fn an_adk_tool_attribute_is_reemitted_as_written() {
        let adk = reemitted(syn::parse_quote! {
            /// Send the
            /// invoice.
            #[tool(concurrency_safe)]
            async fn f(args: A) -> Result<Value, AdkError> { body() }
        });
        assert_eq!(adk[2], "# [tool (concurrency_safe)]");
    }

    #[test]
    fn json_results_are_refused_with_what_to_return() {
        for refused in [
            quote!(
                async fn f(&self) -> Result<Json<Invoice>, String> {
                    loop {}
                }
            ),
            quote!(
                async fn f(&self) -> rmcp::Json<Invoice> {
                    loop {}
                }
            ),
        ] {
            let mut errors = Errors::default();
            check_rmcp_return(&syn::parse2(refused).unwrap(), &mut errors);
            assert!(errors.into_error().unwrap().to_string().contains("`Result<CallToolResult, ErrorData>`"));
        }
        let mut errors = Errors::default();
        check_rmcp_return(
            &syn::parse_quote!(
                async fn f(&self) -> Result<CallToolResult, ErrorData> {
                    loop {}
                }
            ),
            &mut errors,
        );
        assert!(errors.is_empty());
    }

    #[test]
    fn functions_rmcp_already_expanded_are_refused() {
        let expanded: ItemFn = syn::parse_quote! {
            fn send(&self) -> ::std::pin::Pin<Box<dyn ::std::future::Future<Output = Result<u8, E>> + Send + '_>> {
                Box::pin(async move { Ok(1) })
            }
        };
        let mut errors = Errors::default();
        check_order(&expanded, &mut errors);
        assert!(errors.into_error().unwrap().to_string().contains("must be placed above rmcp's #[tool]"));
        let fine: ItemFn = syn::parse_quote!(
            async fn send(&self) -> Result<u8, E> {
                Ok(1)
            }
        );
        let mut errors = Errors::default();
        check_order(&fine, &mut errors);
        assert!(errors.is_empty());
    }
}
