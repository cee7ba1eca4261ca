//! Whose `#[tool]`: rmcp's and ADK-Rust's attributes share the name. The decision, in order:
//!
//! 1. the attribute's path: `#[rmcp::tool]` is rmcp's; `#[adk_tool::tool]`, `#[adk_rust::tool]`
//!    (any path from an `adk*` crate) is ADK-Rust's;
//! 2. the function: a method is rmcp's (ADK's `#[tool]` calls the function by its bare name,
//!    so its tools are free functions); a signature that names `ToolContext`, `AdkError` or
//!    an `adk_*` path is ADK-Rust's, one that names rmcp's types (`Parameters`,
//!    `CallToolResult`, `ErrorData`, extractors) is rmcp's;
//! 3. otherwise a compile error that says to write the path.
//!
//! The macro depends on neither crate and cannot ask the compiler what `tool` resolves to.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{Attribute, ItemFn, Signature};

use super::{Framework, is_attr};
use crate::errors::Errors;

/// Whose `#[tool]` this is: rmcp's and ADK-Rust's attributes have one name. The path
/// decides when it says (`rmcp::tool`; `adk_tool::tool`, `adk_rust::tool`, any path from an
/// `adk*` crate); a bare `#[tool]`, or one from another path, is told by the function: rmcp's tools are methods and
/// take or return rmcp's types, ADK's are free functions that take its `ToolContext` or
/// return its `AdkError` (ADK's `#[tool]` calls the function by its bare name, so it cannot
/// be a method). `None` when nothing tells.
pub(crate) fn which_tool(attr: &Attribute, sig: &Signature) -> Option<Framework> {
    let path = attr.path();
    if path.segments.len() > 1 {
        let first = path.segments[0].ident.to_string();
        match first.as_str() {
            "rmcp" => return Some(Framework::Rmcp),
            _ if first.starts_with("adk") => return Some(Framework::Adk),
            _ => {} // a re-export of either: the signature tells
        }
    }
    if sig.receiver().is_some() {
        return Some(Framework::Rmcp);
    }
    let names = idents(sig.to_token_stream());
    let adk = names.iter().any(|name| ADK_NAMES.contains(&name.as_str()) || name.starts_with("adk_"));
    let rmcp = names.iter().any(|name| RMCP_NAMES.contains(&name.as_str()) || name == "rmcp");
    match (adk, rmcp) {
        (true, false) => Some(Framework::Adk),
        (false, true) => Some(Framework::Rmcp),
        _ => None,
    }
}

/// Names in a signature that only ADK-Rust's tools use.
const ADK_NAMES: &[&str] = &["ToolContext", "AdkError"];
/// Names in a signature that only rmcp's tools use.
const RMCP_NAMES: &[&str] =
    &["Parameters", "CallToolResult", "ErrorData", "Extension", "Extensions", "RequestContext", "Peer", "Json"];

/// Every identifier in `tokens`, groups included.
fn idents(tokens: TokenStream) -> Vec<String> {
    let mut out = Vec::new();
    for token in tokens {
        match token {
            proc_macro2::TokenTree::Ident(ident) => out.push(ident.to_string()),
            proc_macro2::TokenTree::Group(group) => out.extend(idents(group.stream())),
            _ => {}
        }
    }
    out
}

/// A bare `#[tool]` that [`which_tool`] cannot place: say how to name it.
pub(crate) fn check_tool(item: &ItemFn, errors: &mut Errors) {
    let Some(tool) = item.attrs.iter().find(|attr| is_attr(attr, "tool")) else { return };
    if which_tool(tool, &item.sig).is_none() {
        errors.at(
            tool.path().span(),
            format!(
                "#[idempotent] cannot tell whose `#[tool]` is on `{}`: rmcp's and ADK-Rust's attributes share the name; \
                 write its path, `#[adk_tool::tool]` (or `#[adk_rust::tool]`) for ADK-Rust, `#[rmcp::tool]` for rmcp \
                 (a bare `#[tool]` is told by the function: a `ToolContext` parameter or an `AdkError` in the \
                 signature is ADK-Rust's, a method or rmcp's `Parameters<T>` is rmcp's)",
                item.sig.ident
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adk_and_rmcp_tools_are_told_apart_by_path_then_by_signature() {
        let cases: [(ItemFn, Option<Framework>); 8] = [
            (
                syn::parse_quote!(
                    #[my_tools::tool]
                    async fn f(&self, Parameters(r): Parameters<R>) -> String {
                        body()
                    }
                ),
                Some(Framework::Rmcp),
            ),
            (
                syn::parse_quote!(
                    #[adk_tool::tool]
                    async fn f(args: A) -> Result<Value> {
                        body()
                    }
                ),
                Some(Framework::Adk),
            ),
            (
                syn::parse_quote!(
                    #[adk_rust::tool]
                    async fn f(args: A) -> Result<Value> {
                        body()
                    }
                ),
                Some(Framework::Adk),
            ),
            (
                syn::parse_quote!(
                    #[rmcp::tool]
                    async fn f(args: A) -> String {
                        body()
                    }
                ),
                Some(Framework::Rmcp),
            ),
            (
                syn::parse_quote!(
                    #[tool]
                    async fn f(ctx: Arc<dyn ToolContext>, args: A) -> Result<Value> {
                        body()
                    }
                ),
                Some(Framework::Adk),
            ),
            (
                syn::parse_quote!(
                    #[tool]
                    async fn f(args: A) -> Result<Value, AdkError> {
                        body()
                    }
                ),
                Some(Framework::Adk),
            ),
            (
                syn::parse_quote!(
                    #[tool]
                    async fn f(&self, Parameters(r): Parameters<R>) -> String {
                        body()
                    }
                ),
                Some(Framework::Rmcp),
            ),
            (
                syn::parse_quote!(
                    #[tool]
                    async fn f(args: A) -> Result<Value> {
                        body()
                    }
                ),
                None,
            ),
        ];
        for (item, expected) in cases {
            let tool = item.attrs.iter().find(|attr| is_attr(attr, "tool")).unwrap();
            assert!(which_tool(tool, &item.sig) == expected, "{}", item.to_token_stream());
            let mut errors = Errors::default();
            check_tool(&item, &mut errors);
            assert_eq!(errors.is_empty(), expected.is_some());
        }
    }
}
