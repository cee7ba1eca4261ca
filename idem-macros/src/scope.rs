//! `scope = expr` and `unscoped`: checks that a scope comes from the caller, never from
//! the model, and the warning for a tool that takes the caller's identity but shares its
//! records across callers.
//!
//! Validation runs the checks and expansion emits the warning; this file uses neither, so
//! the order stays parse, then validate, then expand.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use quote::quote_spanned;
use syn::spanned::Spanned;
use syn::{Expr, Ident, ItemFn};

use crate::errors::Errors;
use crate::frameworks::{self, Framework};
use crate::params::{self, Binding};
use crate::reads;

/// The arguments the `scope` expression reads (the roots of its paths: `principal.tenant`
/// reads `principal`). A scope must come from the caller's authenticated context, never
/// from what the model fills in: an rmcp tool's scope may read `self` and extractors
/// (`Extension<T>`), not its `Parameters<T>`; a rig tool's arguments are all the model's,
/// so its scope may read none of them. Each model binding the scope reads is refused where
/// the scope reads it, by its name.
pub(crate) fn inputs(scope: &Expr, bindings: &[Binding], item: &ItemFn, errors: &mut Errors) -> Vec<usize> {
    let framework = frameworks::detect(item);
    let mut inputs = Vec::new();
    for (binding, read_at) in reads::reads(scope.to_token_stream(), bindings) {
        if !inputs.contains(&binding.arg) {
            inputs.push(binding.arg);
        }
        let syn::FnArg::Typed(typed) = &item.sig.inputs[binding.arg] else { continue };
        let what = match framework {
            Framework::Rmcp if params::is_parameters(&typed.ty) => {
                "an rmcp tool's `Parameters` are what the model sends"
            }
            Framework::Rig => "a rig tool's arguments are what the model sends",
            Framework::Adk if binding.params_path.is_some() => {
                "an ADK-Rust tool's argument struct is what the model sends"
            }
            _ => continue,
        };
        let instead = match framework {
            Framework::Adk => {
                "from the tool's `ToolContext`, the user ADK's runner authenticated (`scope = ctx.user_id()`)"
            }
            _ => "from `self` or, for rmcp, an extractor such as `Extension<T>`",
        };
        errors.at(
            read_at,
            format!(
                "`scope` must not read `{}`: {what}, so a model could name another tenant; read the caller's \
                 identity {instead}",
                binding.ident
            ),
        );
    }
    inputs
}

/// An rmcp tool that takes an `Extension<T>` or the whole `Extensions` (how rmcp hands a
/// tool the authenticated request), or an ADK-Rust tool that takes its `ToolContext` (which
/// names the user), serves many callers, yet without `scope` its records are shared by all of
/// them: that deserves a warning, unless `unscoped` says it is meant.
pub(crate) fn unscoped_identity(
    (scope, unscoped): (&Option<Expr>, &Option<Ident>),
    item: &ItemFn,
    errors: &mut Errors,
) -> Option<(Span, String)> {
    if let (Some(_), Some(unscoped)) = (scope, unscoped) {
        errors.at(unscoped.span(), "`unscoped` contradicts `scope = ...`: keep one");
        return None;
    }
    if scope.is_some() || unscoped.is_some() {
        return None;
    }
    let framework = frameworks::detect(item);
    item.sig.inputs.iter().find_map(|input| {
        let syn::FnArg::Typed(typed) = input else { return None };
        let identity = match framework {
            Framework::Rmcp => {
                let syn::Type::Path(path) = &*typed.ty else { return None };
                let last = path.path.segments.last()?;
                last.ident == "Extension" || last.ident == "Extensions"
            }
            Framework::Adk => typed.ty.to_token_stream().to_string().contains("ToolContext"),
            _ => false,
        };
        identity.then(|| (typed.ty.span(), typed.ty.to_token_stream().to_string()))
    })
}

/// A warning (stable Rust has no other way for a macro to warn: the use of a deprecated
/// item, spanned at the extractor) for tool `name`, which takes the caller's identity but
/// shares its records across callers: `identity` is what [`unscoped_identity`] found.
pub(crate) fn unscoped_warning(identity: Option<&(Span, String)>, name: &Ident) -> TokenStream {
    let Some((span, ty)) = identity else { return TokenStream::new() };
    let example = match ty.contains("ToolContext") {
        true => "`scope = ctx.user_id()` for ADK-Rust's `ctx: Arc<dyn ToolContext>`",
        false => "`scope = principal.tenant` for `Extension(principal)`",
    };
    let note = format!(
        "`{name}` takes `{}`, the caller's identity, but its idempotency records are shared by every caller: \
         one caller's repeat replays another's result. Scope them with `scope = <the caller's id>` in \
         #[idempotent(...)] (e.g. {example}), or write `unscoped` there if every caller shares them on purpose",
        ty.replace(" < ", "<").replace(" >", ">")
    );
    let warning = Ident::new("__idem_records_shared_by_every_caller", *span);
    quote_spanned! {*span=>
        #[deprecated(note = #note)]
        #[allow(non_upper_case_globals)]
        const #warning: () = ();
        let () = #warning;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors_for(item: syn::ItemFn, scope: Expr) -> Option<String> {
        let mut errors = Errors::default();
        inputs(&scope, &params::bindings_of(&item), &item, &mut errors);
        errors.into_error().map(|error| error.to_string())
    }

    #[test]
    fn a_rig_tools_scope_may_read_none_of_its_arguments() {
        let item: syn::ItemFn = syn::parse_quote! {
            #[rig_tool]
            fn refund(tenant: String, order: String) -> Result<String, E> { Ok(order) }
        };
        let error = errors_for(item, syn::parse_quote!(tenant)).expect("refused");
        assert!(error.contains("`scope` must not read `tenant`") && error.contains("rig"), "{error}");
        let item: syn::ItemFn = syn::parse_quote! {
            #[rig_tool]
            fn refund(order: String) -> Result<String, E> { Ok(order) }
        };
        assert_eq!(errors_for(item, syn::parse_quote!(current_tenant())), None, "no argument read");
    }

    #[test]
    fn an_rmcp_scope_follows_its_root_not_the_names_after_it() {
        // The documented form (`scope = principal.tenant`): the pattern also binds a `tenant`, which the scope never reads.
        let item: syn::ItemFn = syn::parse_quote! {
            #[tool]
            async fn send(&self, Extension(principal): Extension<Principal>, Parameters(Req { tenant, customer, .. }): Parameters<Req>)
                -> Result<CallToolResult, ErrorData> { body() }
        };
        assert_eq!(errors_for(item.clone(), syn::parse_quote!(principal.tenant)), None);
        let error = errors_for(item, syn::parse_quote!(principal.tenant_of(&tenant))).expect("refused");
        assert!(error.contains("`scope` must not read `tenant`: an rmcp tool's `Parameters`"), "{error}");
    }

    #[test]
    fn a_refused_scope_names_the_binding_it_reads() {
        let item: syn::ItemFn = syn::parse_quote! {
            #[tool]
            async fn send(&self, Parameters(Req { customer, for_tenant, .. }): Parameters<Req>)
                -> Result<CallToolResult, ErrorData> { body() }
        };
        let error = errors_for(item, syn::parse_quote!(for_tenant.clone())).expect("refused");
        assert!(error.contains("`scope` must not read `for_tenant`"), "{error}");
        assert!(!error.contains("customer"), "{error}");
    }

    #[test]
    fn a_plain_functions_scope_may_read_its_parameters() {
        let item: syn::ItemFn = syn::parse_quote! {
            fn refund(tenant: &str, order: String) -> Result<String, E> { Ok(order) }
        };
        assert_eq!(errors_for(item, syn::parse_quote!(tenant)), None);
    }
}
