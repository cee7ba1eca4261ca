//! The rules of `valid.rs`, each on a tool built as `ast.rs` builds it.

use syn::Expr;

use super::*;
use crate::attr::Attr;
use crate::params;

fn errors_for(item: syn::ItemFn, scope: Expr) -> Option<String> {
    let framework = crate::frameworks::detect(&item);
    let bindings = params::bindings_of(&item, framework);
    let tool = Tool { item: &item, framework, bindings, attr: Attr::default() };
    let mut errors = Errors::default();
    scope_is_the_callers(&tool, &scope, &mut errors);
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
