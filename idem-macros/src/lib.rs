//! The `#[idempotent]` attribute of [idem-tools](https://docs.rs/idem-tools). This crate is
//! an implementation detail: depend on `idem-tools`, which re-exports the attribute as
//! `idem::idempotent`.

#![warn(unreachable_pub)] // library code only: tests and benches keep their `pub` items

mod approval;
mod args;
mod budget;
mod docs;
mod errors;
mod expand;
mod frameworks;
mod json_names;
mod krate;
mod params;
mod reads;
mod rules;
mod scope;
mod status_tools;
mod tasks;
mod template;
#[cfg(test)]
mod template_props;
mod validate;

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

/// Every check of `#[idempotent(attr)]` on `function`, and the plan to expand it when they
/// pass. `#[idem::status_tools]` runs the same checks to know whether a tool's attribute
/// expands (it serves a status tool only then).
fn plan(attr: proc_macro2::TokenStream, function: &syn::ItemFn, errors: &mut errors::Errors) -> Option<validate::Plan> {
    frameworks::check_order(function, errors);
    frameworks::check_tool(function, errors);
    if frameworks::detect(function) == frameworks::Framework::Rmcp {
        frameworks::check_rmcp_return(function, errors);
    }
    if !errors.is_empty() {
        return None;
    }
    let args = args::parse(attr, errors);
    validate::validate(args, function, errors)
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
