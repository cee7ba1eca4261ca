//! `#[idem::status_tools]`: an rmcp server's status functions as read-only tools.
//!
//! rmcp's `#[tool_router]` on the impl expands before the attributes of the methods in it,
//! and registers the methods that carry `#[tool]` at that moment; a `#[tool]` method that
//! `#[idempotent]` generates later would not be registered. So this attribute goes ABOVE
//! `#[tool_router]` and adds, for each `#[idempotent]` `#[tool]` method, a tool method that
//! serves the status function `#[idempotent]` generates.
//!
//! Input:
//!
//! ```text
//! #[idem::status_tools]
//! #[tool_router]
//! impl Billing {
//!     #[idempotent(key = "invoice:<req.customer>:<req.period>", compare = [req.amount])]
//!     #[tool(description = "Send the invoice")]
//!     async fn send_invoice(&self, Parameters(req): Parameters<SendInvoice>) -> Result<CallToolResult, ErrorData> { BODY }
//! }
//! ```
//!
//! Output:
//!
//! ```text
//! #[tool_router]
//! impl Billing {
//!     #[idempotent(key = "invoice:<req.customer>:<req.period>", compare = [req.amount])]
//!     #[tool(description = "Send the invoice")]
//!     async fn send_invoice(&self, Parameters(req): Parameters<SendInvoice>) -> Result<CallToolResult, ErrorData> { BODY }
//!
//!     /// `send_invoice_status` served as the read-only MCP tool `send_invoice_status`.
//!     #[tool(name = "send_invoice_status", description = "...",
//!            annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false))]
//!     async fn send_invoice_status_tool(&self, __idem_arg1: Parameters<SendInvoice>)
//!         -> <::idem::__private::Rmcp as ::idem::__private::StatusTool>::Answer // Result<CallToolResult, ErrorData>
//!     {
//!         <::idem::__private::Rmcp as ::idem::__private::StatusTool>::answer(Self::send_invoice_status(self, __idem_arg1).await)
//!     }
//! }
//! ```

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::{FnArg, Ident, ImplItem, ImplItemFn, ItemFn, ItemImpl, ReturnType, Type};

use crate::errors::Errors;
use crate::frameworks::is_attr;
use crate::validate::{ParamsKey, Plan};
use crate::{args, validate};

pub fn status_tools(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    if let Some(token) = attr.into_iter().next() {
        return Err(syn::Error::new(token.span(), "#[idem::status_tools] takes no arguments"));
    }
    let mut item_impl: ItemImpl = syn::parse2(item).map_err(|error| {
        syn::Error::new(
            error.span(),
            "#[idem::status_tools] goes on an impl block, above rmcp's #[tool_router], to serve the status functions of its #[idempotent] tools as read-only tools",
        )
    })?;
    check_order(&item_impl)?;
    let mut added = Vec::new();
    for item in &item_impl.items {
        if let ImplItem::Fn(method) = item
            && let Some(tool) = status_tool(method)
        {
            added.push(tool);
        }
    }
    if added.is_empty() {
        return Err(syn::Error::new(
            item_impl.self_ty.span(),
            "#[idem::status_tools] found no method with #[idempotent(...)] above #[tool] in this impl block, so it has no status function to serve; put #[idempotent(...)] on the line above a tool's #[tool]",
        ));
    }
    item_impl.items.extend(added);
    Ok(quote!(#item_impl))
}

/// Below `#[tool_router]`, the router is already built: its function is in the impl and
/// the attribute is gone. A status tool added then would never be served.
fn check_order(item_impl: &ItemImpl) -> syn::Result<()> {
    if item_impl.attrs.iter().any(|attr| is_attr(attr, "tool_router")) {
        return Ok(());
    }
    let built = item_impl.items.iter().find_map(|item| match item {
        ImplItem::Fn(method) => match &method.sig.output {
            ReturnType::Type(_, ty) if returns_router(ty) => Some(method),
            _ => None,
        },
        _ => None,
    });
    match built {
        Some(method) => Err(syn::Error::new(
            method.sig.ident.span(),
            "#[idem::status_tools] must be placed above #[tool_router]: below it, the tool router is already built and the status tools would never be served",
        )),
        None => Ok(()),
    }
}

fn returns_router(ty: &Type) -> bool {
    matches!(ty, Type::Path(path) if path.path.segments.last().is_some_and(|s| s.ident == "ToolRouter"))
}

/// The status tool of one `#[idempotent]` `#[tool]` method, or `None` when the method is
/// not one (or its `#[idempotent]` has mistakes, which that attribute reports itself).
fn status_tool(method: &ImplItemFn) -> Option<ImplItem> {
    let idempotent = method.attrs.iter().position(|attr| is_attr(attr, "idempotent"))?;
    let tool = method.attrs.iter().position(|attr| is_attr(attr, "tool"))?;
    if tool < idempotent {
        return None;
    }
    let (vis, sig, block) = (&method.vis, &method.sig, &method.block);
    let function: ItemFn = syn::parse2(quote!(#vis #sig #block)).ok()?;
    let tokens = match &method.attrs[idempotent].meta {
        syn::Meta::List(list) => list.tokens.clone(),
        _ => TokenStream::new(),
    };
    let mut errors = Errors::default();
    let parsed = args::parse(tokens, &mut errors);
    let plan = validate::validate(parsed, &function, &mut errors)?;
    if !errors.is_empty() {
        return None;
    }
    let sig = &method.sig;
    let tool_name = format!("{}_status", sig.ident);
    let method_name = format_ident!("{}_status_tool", sig.ident);
    let description = description(&sig.ident, &plan);
    let doc =
        format!(" `{tool_name}` served as the read-only MCP tool `{tool_name}` (added by `#[idem::status_tools]`).");
    let ret = match &sig.output {
        ReturnType::Type(_, ty) => (**ty).clone(),
        ReturnType::Default => return None,
    };
    let krate = crate::expand::krate_at(&plan, ret.span());
    let (inputs, body, input_schema) = match &plan.params_key {
        Some(key) => from_json_arguments(sig, &plan, key, &krate),
        None => from_arguments(sig, &plan, &krate),
    };
    let tool_path = method.attrs[tool].path();
    let asyncness = sig.asyncness;
    let (vis, generics, where_clause) = (&method.vis, &sig.generics, &sig.generics.where_clause);
    let input_schema = input_schema.map(|schema| quote!(input_schema = #schema,));
    Some(syn::parse_quote_spanned! {ret.span()=>
        #[doc = #doc]
        #[#tool_path(
            name = #tool_name,
            description = #description,
            #input_schema
            annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
        )]
        #vis #asyncness fn #method_name #generics (#(#inputs),*)
            -> <#krate::__private::Rmcp as #krate::__private::StatusTool>::Answer
            #where_clause
        {
            #body
        }
    })
}

/// The status tool's description: one paragraph, naming the key's fields as the model
/// knows them (its JSON arguments).
fn description(tool: &Ident, plan: &Plan) -> String {
    let what = format!(
        "Read-only status of {tool}: not_found, in_progress, completed (with the result), failed, or unknown (a call was abandoned). \
         Call it when a {tool} call's outcome is unknown (after a timeout, IN_PROGRESS or OUTCOME_UNKNOWN)"
    );
    let never = "It never runs or repeats the action.";
    match &plan.params_key {
        Some(key) => format!("{what}, with only that call's key fields: {}. {never}", key.fields.join(", ")),
        None => {
            let fields: Vec<String> = plan.key_fields.iter().map(|field| field.placeholder.path_text()).collect();
            format!("{what}, with the same arguments as that call (it reads {}). {never}", fields.join(", "))
        }
    }
}

/// The status tool's parameters, body and input schema when the key comes from one
/// `Parameters<T>` argument: the JSON arguments, passed to `__idem_<tool>_status_json`
/// (which `#[idempotent]` generates: it reads the key's fields from them as the tool's key
/// does), and the input schema of `T` cut down to the key's fields. Other parameters the
/// status read needs (what the `store` expression uses) are taken as they are.
fn from_json_arguments(
    sig: &syn::Signature,
    plan: &Plan,
    key: &ParamsKey,
    krate: &TokenStream,
) -> (Vec<TokenStream>, TokenStream, Option<TokenStream>) {
    let FnArg::Typed(request) = &sig.inputs[key.arg] else { unreachable!("the key's argument is typed") };
    let args = Ident::new("__idem_args", Span::mixed_site());
    let mut inputs = Vec::new();
    let mut forwarded = Vec::new();
    for (i, input) in sig.inputs.iter().enumerate() {
        match input {
            FnArg::Receiver(receiver) => {
                let mut receiver = receiver.clone();
                receiver.attrs.clear();
                inputs.push(quote!(#receiver));
                forwarded.push(quote!(self));
            }
            FnArg::Typed(_) if i == key.arg => {
                inputs.push(quote!(#args: #krate::__private::StatusInput));
                forwarded.push(quote!(#args));
            }
            FnArg::Typed(typed) if plan.store_inputs.contains(&i) => {
                let name = Ident::new(&format!("__idem_arg{i}"), Span::mixed_site());
                let ty = &typed.ty;
                inputs.push(quote!(#name: #ty));
                forwarded.push(quote!(#name));
            }
            FnArg::Typed(_) => {}
        }
    }
    let awaited = sig.asyncness.map(|_| quote!(.await));
    let read = crate::expand::status_json_name(&sig.ident);
    let body = quote!(
        <#krate::__private::Rmcp as #krate::__private::StatusTool>::answer(Self::#read(#(#forwarded),*) #awaited)
    );
    let (request_ty, tool, names) = (&request.ty, sig.ident.to_string(), &key.fields);
    let schema = quote!(#krate::__private::status_input_schema::<#request_ty>(
        ::core::concat!(#tool, "_status"), &[#(#names),*]
    ));
    (inputs, body, Some(schema))
}

/// The status tool's parameters and body otherwise: the parameters of the tool that the
/// status function takes, as they are, passed to `<tool>_status`.
fn from_arguments(
    sig: &syn::Signature,
    plan: &Plan,
    krate: &TokenStream,
) -> (Vec<TokenStream>, TokenStream, Option<TokenStream>) {
    let mut inputs = Vec::new();
    let mut forwarded = Vec::new();
    for (i, input) in sig.inputs.iter().enumerate() {
        match input {
            FnArg::Receiver(receiver) => {
                let mut receiver = receiver.clone();
                receiver.attrs.clear();
                inputs.push(quote!(#receiver));
                forwarded.push(quote!(self));
            }
            FnArg::Typed(typed) if plan.status_inputs.contains(&i) => {
                let name = Ident::new(&format!("__idem_arg{i}"), Span::mixed_site());
                let ty = &typed.ty;
                inputs.push(quote!(#name: #ty));
                forwarded.push(quote!(#name));
            }
            FnArg::Typed(_) => {}
        }
    }
    let status_fn = format_ident!("{}_status", sig.ident);
    let awaited = sig.asyncness.map(|_| quote!(.await));
    let body = quote!(
        <#krate::__private::Rmcp as #krate::__private::StatusTool>::answer(Self::#status_fn(#(#forwarded),*) #awaited)
    );
    (inputs, body, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::ToTokens;

    /// The status tool added for `method`, as text without spaces.
    fn status_tool_of(method: ImplItemFn) -> String {
        status_tool(&method).expect("a status tool").to_token_stream().to_string().replace(' ', "")
    }

    #[test]
    fn a_key_from_parameters_gives_a_status_tool_taking_its_fields_only() {
        let tool = status_tool_of(syn::parse_quote! {
            #[idempotent(key = "invoice:<req.customer.id>:<p>", store = ctx.store)]
            #[tool]
            async fn send(&self, Parameters(req @ SendInvoice { period: p, .. }): Parameters<SendInvoice>, ctx: Ctx)
                -> Result<CallToolResult, ErrorData> { todo!() }
        });
        assert!(tool.contains("__idem_args:::idem::__private::StatusInput"), "{tool}");
        assert!(tool.contains("__idem_arg2:Ctx"), "the store's parameter is taken as it is: {tool}");
        assert!(tool.contains("Self::__idem_send_status_json(self,__idem_args,__idem_arg2).await"), "{tool}");
        assert!(
            tool.contains(
                r#"input_schema=::idem::__private::status_input_schema::<Parameters<SendInvoice>>(::core::concat!("send","_status"),&["customer","period"])"#
            ),
            "{tool}"
        );
        assert!(tool.contains("keyfields:customer,period."), "{tool}");
    }

    #[test]
    fn other_keys_keep_a_status_tool_taking_the_tools_arguments() {
        for method in [
            // The whole request is the key: no field to take on its own.
            syn::parse_quote! {
                #[idempotent(key = "ledger:<req>")]
                #[tool]
                async fn send(&self, Parameters(req): Parameters<Month>) -> Result<CallToolResult, ErrorData> { todo!() }
            },
            // The store comes from the request.
            syn::parse_quote! {
                #[idempotent(key = "ledger:<req.month>", store = req.store)]
                #[tool]
                async fn send(&self, Parameters(req): Parameters<Month>) -> Result<CallToolResult, ErrorData> { todo!() }
            },
            // A key field from another argument.
            syn::parse_quote! {
                #[idempotent(key = "ledger:<req.month>:<tenant>")]
                #[tool]
                async fn send(&self, Parameters(req): Parameters<Month>, tenant: Tenant) -> Result<CallToolResult, ErrorData> { todo!() }
            },
        ] {
            let tool = status_tool_of(method);
            assert!(tool.contains("__idem_arg1:Parameters<Month>"), "{tool}");
            assert!(tool.contains("Self::send_status(self,__idem_arg1"), "{tool}");
            assert!(!tool.contains("input_schema"), "{tool}");
            assert!(tool.contains("withthesameargumentsasthatcall"), "{tool}");
        }
    }
}
