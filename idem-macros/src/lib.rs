//! The `#[idempotent]` attribute of [idem-tools](https://docs.rs/idem-tools). This crate is
//! an implementation detail: depend on `idem-tools`, which re-exports the attribute as
//! `idem::idempotent`.

#![warn(unreachable_pub)] // library code only: tests and benches keep their `pub` items

mod approval_text;
mod ast;
mod attr;
mod describe;
mod docs;
mod errors;
mod expand;
mod frameworks;
mod json_names;
mod krate;
mod params;
mod plan;
mod reads;
mod rules;
mod scope;
mod status_tools;
mod tasks;
mod template;
#[cfg(test)]
mod template_props;
mod valid;
mod written;

use proc_macro::TokenStream;

/// Makes a tool function idempotent. See the `idem` crate's documentation.
#[proc_macro_attribute]
pub fn idempotent(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item2: proc_macro2::TokenStream = item.into();
    let function: syn::ItemFn = match syn::parse2(item2.clone()) {
        Ok(function) => function,
        Err(_) => {
            let first_token = item2.clone().into_iter().next().map(|token| token.span());
            let error = syn::Error::new(
                first_token.unwrap_or_else(proc_macro2::Span::call_site),
                "#[idempotent] goes on a function with a body: a free function or a method in an impl block",
            );
            return with_errors(item2, error);
        }
    };
    let mut errors = errors::Errors::default();
    let plan = plan(attr.into(), &function, &mut errors);
    match (plan, errors.into_error()) {
        (Some(plan), None) => expand::expand(&plan, &function).into(),
        (_, Some(error)) => with_errors(item2, error),
        (None, None) => unreachable!("validation without a plan reports an error"),
    }
}

/// `#[idempotent(attr)]` on `function`: parsed once into its model (`ast.rs`), checked
/// (`valid.rs`), and lowered to the plan to expand when every check passes.
/// `#[idem::status_tools]` runs the same steps to know whether a tool's attribute expands
/// (it serves a status tool only then).
fn plan(attr: proc_macro2::TokenStream, function: &syn::ItemFn, errors: &mut errors::Errors) -> Option<plan::Plan> {
    let tool = ast::Tool::parse(attr, function, errors)?;
    valid::check(&tool, errors);
    errors.is_empty().then(|| plan::lower(&tool))
}

/// Serves the status functions of an rmcp server's `#[idempotent]` tools as read-only
/// tools. Goes above rmcp's `#[tool_router]`. See the `idem` crate's documentation.
#[proc_macro_attribute]
pub fn status_tools(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item2: proc_macro2::TokenStream = item.into();
    match status_tools::status_tools(attr.into(), item2.clone()) {
        Ok(tokens) => tokens.into(),
        Err(error) => with_errors(item2, error),
    }
}

/// Serves MCP Tasks for an rmcp server's `#[idempotent]` tools: tasks keyed by the business
/// action, read from the store. Goes below rmcp's `#[tool_handler]` on the `ServerHandler`
/// impl. See the `idem` crate's documentation.
#[proc_macro_attribute]
pub fn tasks(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item2: proc_macro2::TokenStream = item.into();
    match tasks::tasks(attr.into(), item2.clone()) {
        Ok(tokens) => tokens.into(),
        Err(error) => with_errors(item2, error),
    }
}

/// The function as written, then the errors: one mistake gives one error, not a cascade
/// of "cannot find function" errors where it is called.
fn with_errors(item: proc_macro2::TokenStream, error: syn::Error) -> TokenStream {
    let errors = error.to_compile_error();
    quote::quote!(#item #errors).into()
}
