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
use syn::{FnArg, ImplItem, ImplItemFn, ItemFn, ItemImpl, ReturnType, Type};

use crate::errors::Errors;
use crate::frameworks::is_attr;
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
    let serves_tasks = crate::tasks::serves_tasks_impl(&item_impl);
    item_impl.items.extend(added);
    Ok(quote!(#item_impl #serves_tasks))
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
    // With the tool's attributes: validation treats an rmcp tool as one (its `timeout`).
    let tool_attr = &method.attrs[tool];
    let function: ItemFn = syn::parse2(quote!(#tool_attr #vis #sig #block)).ok()?;
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
    let (status_fn, method_name) = (format_ident!("{}_status", sig.ident), format_ident!("{}_status_tool", sig.ident));
    let fields: Vec<String> = plan.key_fields.iter().map(|field| field.placeholder.path_text()).collect();
    let description = format!(
        "Read-only status of {name}: not_found, in_progress, completed (with the result), failed, or unknown (a call was abandoned). \
         Call it with the same arguments as {name} (it reads {fields}) when a call's outcome is unknown: after a timeout, \
         IN_PROGRESS or OUTCOME_UNKNOWN. It never runs or repeats the action.",
        name = sig.ident,
        fields = fields.join(", "),
    );
    let doc =
        format!(" `{status_fn}` served as the read-only MCP tool `{tool_name}` (added by `#[idem::status_tools]`).");
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
                let name = syn::Ident::new(&format!("__idem_arg{i}"), Span::mixed_site());
                let ty = &typed.ty;
                inputs.push(quote!(#name: #ty));
                forwarded.push(quote!(#name));
            }
            FnArg::Typed(_) => {}
        }
    }
    let ret = match &sig.output {
        ReturnType::Type(_, ty) => (**ty).clone(),
        ReturnType::Default => return None,
    };
    let tool_path = method.attrs[tool].path();
    let (asyncness, awaited) = match sig.asyncness {
        Some(_) => (quote!(async), quote!(.await)),
        None => (quote!(), quote!()),
    };
    let (vis, generics, where_clause) = (&method.vis, &sig.generics, &sig.generics.where_clause);
    let krate = crate::expand::krate_at(&plan, ret.span());
    Some(syn::parse_quote_spanned! {ret.span()=>
        #[doc = #doc]
        #[#tool_path(
            name = #tool_name,
            description = #description,
            annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
        )]
        #vis #asyncness fn #method_name #generics (#(#inputs),*)
            -> <#krate::__private::Rmcp as #krate::__private::StatusTool>::Answer
            #where_clause
        {
            <#krate::__private::Rmcp as #krate::__private::StatusTool>::answer(Self::#status_fn(#(#forwarded),*) #awaited)
        }
    })
}
