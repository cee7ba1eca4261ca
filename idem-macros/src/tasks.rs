//! MCP Tasks for rmcp servers: `#[idem::tasks]` on the `ServerHandler` impl, and the
//! `ServesTasks` impl `#[idem::status_tools]` adds for the tools it sees.
//!
//! `#[idem::tasks]` goes BELOW `#[tool_handler]`, so it sees the `call_tool` and `get_info`
//! that `#[tool_handler]` generated (or the user wrote). Input:
//!
//! ```text
//! #[tool_handler]   // already expanded
//! #[idem::tasks]
//! impl ServerHandler for Billing {
//!     async fn call_tool(&self, request: CallToolRequestParams, context: RequestContext<RoleServer>)
//!         -> Result<CallToolResponse, ErrorData> { BODY }
//!     fn get_info(&self) -> ServerConfig { INFO }
//! }
//! ```
//!
//! Output:
//!
//! ```text
//! impl ServerHandler for Billing {
//!     #[allow(unused_mut)] // the signature is kept as written; its body moved below
//!     async fn call_tool(&self, request: ..., context: ...) -> Result<CallToolResponse, ErrorData> {
//!         // who the client is: tasks, questions to its user, answers it brings
//!         let __idem_client = ::idem::__private::rmcp::tasks::client(&request, &context);
//!         let __idem_server = ::idem::__private::rmcp::tasks::owned_server(self); // a clone
//!         ::idem::__private::rmcp::tasks::serve_call(__idem_client,
//!             async move { __idem_server.__idem_call_tool(request, context).await }).await
//!     }
//!     fn get_info(&self) -> ServerConfig {
//!         let mut __idem_info = (move || -> ServerConfig { INFO })();
//!         ::idem::__private::rmcp::tasks::advertise(&mut __idem_info);
//!         __idem_info
//!     }
//!     async fn get_task(&self, request: GetTaskParams, context: RequestContext<RoleServer>) -> Result<GetTaskResult, ErrorData> {
//!         let answer = ServesTasks::ask(self, &request.task_id, Ask::Get, &context).await; // each tool in turn
//!         ::idem::__private::rmcp::tasks::state_of(answer, &request.task_id)
//!     }
//!     // cancel_task and update_task alike, with Ask::Cancel / Ask::Update(&request.input_responses) and tasks::acknowledged
//! }
//!
//! impl Billing {
//!     async fn __idem_call_tool(&self, request: ..., context: ...) -> Result<CallToolResponse, ErrorData> { BODY }
//! }
//! ```

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::{FnArg, ImplItem, ImplItemFn, ItemImpl, Pat};

use crate::errors::Errors;
use crate::frameworks::is_attr;

pub(crate) fn tasks(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let krate = crate::attr::parse_crate_only(attr, "#[idem::tasks]")?;
    if let Some(krate) = &krate {
        // As `#[idempotent]` checks it: a name no dependency has is one error at the string.
        let mut errors = Errors::default();
        crate::krate::check(krate, &mut errors);
        if let Some(error) = errors.into_error() {
            return Err(error);
        }
    }
    let krate = krate.unwrap_or_else(|| syn::parse_quote!(::idem));
    let mut item_impl: ItemImpl = syn::parse2(item).map_err(|error| {
        syn::Error::new(
            error.span(),
            "#[idem::tasks] goes on an rmcp `impl ServerHandler for ...` block, below #[tool_handler]",
        )
    })?;
    let below_handler = "#[idem::tasks] must be placed below #[tool_handler], which writes the `call_tool` and `get_info` it wraps; write #[tool_handler(...)] on the line above #[idem::tasks]";
    if item_impl.attrs.iter().any(|attr| is_attr(attr, "tool_handler")) {
        return Err(syn::Error::new(Span::call_site(), below_handler));
    }
    let mut errors = Errors::default();
    let mut found = (false, false);
    let mut served = None;
    for item in &mut item_impl.items {
        let ImplItem::Fn(method) = item else { continue };
        if method.sig.ident == "call_tool" {
            found.0 = true;
            served = wrap_call_tool(method, &krate, &mut errors);
        } else if method.sig.ident == "get_info" {
            found.1 = true;
            wrap_get_info(method, &krate);
        } else if ["get_task", "cancel_task", "update_task"].iter().any(|name| method.sig.ident == name) {
            errors.at(
                method.sig.ident.span(),
                format!(
                    "#[idem::tasks] writes `{}` itself, from the tools' records; remove this one",
                    method.sig.ident
                ),
            );
        }
    }
    if !(found.0 && found.1) {
        errors.at(item_impl.self_ty.span(), below_handler);
    }
    if let Some(error) = errors.into_error() {
        return Err(error);
    }
    item_impl.items.extend(task_methods(&krate));
    let (impl_generics, _, where_clause) = item_impl.generics.split_for_impl();
    let self_ty = &item_impl.self_ty;
    Ok(quote! {
        #item_impl

        impl #impl_generics #self_ty #where_clause {
            #served
        }
    })
}

/// `call_tool`'s body moves to an inherent method, which `call_tool` runs on a clone of the
/// server as a task of its own (see `serve_call`).
fn wrap_call_tool(method: &mut ImplItemFn, krate: &syn::Path, errors: &mut Errors) -> Option<ImplItem> {
    let context = method.sig.inputs.iter().nth(2).and_then(|input| match input {
        FnArg::Typed(typed) => match &*typed.pat {
            Pat::Ident(ident) => Some(ident.ident.clone()),
            _ => None,
        },
        FnArg::Receiver(_) => None,
    });
    let Some(context) = context else {
        errors.at(method.sig.span(), "#[idem::tasks] needs `call_tool`'s request context bound to a name, e.g. `context: RequestContext<RoleServer>`");
        return None;
    };
    let args: Vec<syn::Ident> = method
        .sig
        .inputs
        .iter()
        .filter_map(|input| match input {
            FnArg::Typed(typed) => match &*typed.pat {
                Pat::Ident(ident) => Some(ident.ident.clone()),
                _ => None,
            },
            FnArg::Receiver(_) => None,
        })
        .collect();
    if args.len() + 1 != method.sig.inputs.len() {
        errors.at(method.sig.span(), "#[idem::tasks] needs `call_tool`'s arguments bound to names");
        return None;
    }
    let mut served = method.clone();
    served.attrs.retain(|attr| attr.path().is_ident("doc") || attr.path().is_ident("allow"));
    served.sig.ident = syn::Ident::new("__idem_call_tool", method.sig.ident.span());
    served.vis = syn::Visibility::Inherited;
    let tasks = quote!(#krate::__private::rmcp::tasks);
    let (client, server) =
        (syn::Ident::new("__idem_client", Span::mixed_site()), syn::Ident::new("__idem_server", Span::mixed_site()));
    let request = &args[0];
    let this = crate::params::receiver_self(&method.sig).unwrap_or_else(|| quote!(self));
    // The signature stays as written, `mut` bindings too: only the moved body uses them.
    method.attrs.push(syn::parse_quote!(#[allow(unused_mut)]));
    method.block = syn::parse_quote!({
        let #client = #tasks::client(&#request, &#context);
        let #server = #tasks::owned_server(#this);
        #tasks::serve_call(#client, async move { #server.__idem_call_tool(#(#args),*).await }).await
    });
    Some(syn::parse_quote!(#[doc(hidden)] #served))
}

/// `get_info` declares the tasks extension too.
fn wrap_get_info(method: &mut ImplItemFn, krate: &syn::Path) {
    let info = syn::Ident::new("__idem_info", Span::mixed_site());
    let (body, output) = (&method.block, &method.sig.output);
    method.block = syn::parse_quote!({
        let mut #info = (move || #output #body)();
        #krate::__private::rmcp::tasks::advertise(&mut #info);
        #info
    });
}

fn task_methods(krate: &syn::Path) -> Vec<ImplItem> {
    let tasks = quote!(#krate::__private::rmcp::tasks);
    // rmcp's own paths, as `#[tool_handler]` writes them: the server depends on rmcp.
    let rmcp = quote!(::rmcp);
    let context = quote!(#rmcp::service::RequestContext<#rmcp::RoleServer>);
    vec![
        syn::parse_quote! {
            async fn get_task(
                &self,
                request: #rmcp::model::GetTaskParams,
                context: #context,
            ) -> ::core::result::Result<#rmcp::model::GetTaskResult, #rmcp::ErrorData> {
                #tasks::state_of(#tasks::ServesTasks::ask(self, &request.task_id, #tasks::Ask::Get, &context).await, &request.task_id)
            }
        },
        syn::parse_quote! {
            async fn cancel_task(
                &self,
                request: #rmcp::model::CancelTaskParams,
                context: #context,
            ) -> ::core::result::Result<(), #rmcp::ErrorData> {
                #tasks::acknowledged(#tasks::ServesTasks::ask(self, &request.task_id, #tasks::Ask::Cancel, &context).await, &request.task_id)
            }
        },
        syn::parse_quote! {
            async fn update_task(
                &self,
                request: #rmcp::model::UpdateTaskParams,
                context: #context,
            ) -> ::core::result::Result<(), #rmcp::ErrorData> {
                #tasks::acknowledged(#tasks::ServesTasks::ask(self, &request.task_id, #tasks::Ask::Update(&request.input_responses), &context).await, &request.task_id)
            }
        },
    ]
}

/// The `ServesTasks` impl for the type of a `#[tool_router]` impl: `tasks/get` asks each
/// async `#[idempotent]` `#[tool]` method whether the task is its own. `None` when the
/// impl has no such method.
pub(crate) fn serves_tasks_impl(item_impl: &ItemImpl) -> Option<TokenStream> {
    let mut krate = None;
    let mut asks = Vec::new();
    for item in &item_impl.items {
        let ImplItem::Fn(method) = item else { continue };
        let Some(idempotent) = method.attrs.iter().position(|attr| is_attr(attr, "idempotent")) else { continue };
        let below = method.attrs.iter().position(|attr| is_attr(attr, "tool")).is_some_and(|tool| tool > idempotent);
        if !below || method.sig.asyncness.is_none() {
            continue;
        }
        let args = args_of(&method.attrs[idempotent]);
        krate.get_or_insert_with(|| args.krate.clone().unwrap_or_else(|| syn::parse_quote!(::idem)));
        let task_fn = format_ident!("__idem_{}_task", method.sig.ident);
        let receiver = method.sig.receiver().map(|_| quote!(self,));
        asks.push(quote!(Self::#task_fn(#receiver task_id, ask, context).await));
    }
    let krate = krate?;
    let tasks = quote!(#krate::__private::rmcp::tasks);
    let (impl_generics, _, where_clause) = item_impl.generics.split_for_impl();
    let self_ty = &item_impl.self_ty;
    let failed = syn::Ident::new("__idem_failed", Span::mixed_site());
    Some(quote! {
        impl #impl_generics #tasks::ServesTasks for #self_ty #where_clause {
            async fn ask(
                &self,
                task_id: &str,
                ask: #tasks::Ask<'_>,
                context: &::rmcp::service::RequestContext<::rmcp::RoleServer>,
            ) -> #tasks::ToolAnswer {
                let mut #failed = ::core::option::Option::None;
                #(
                    if let ::core::option::Option::Some(answer) = #tasks::first_answer(&mut #failed, #asks) {
                        return ::core::option::Option::Some(::core::result::Result::Ok(answer));
                    }
                )*
                #failed.map(::core::result::Result::Err)
            }
        }
    })
}

/// The arguments of an `#[idempotent(...)]`, as far as they parse (its own expansion
/// reports the rest).
fn args_of(attr: &syn::Attribute) -> crate::attr::Attr {
    let tokens = match &attr.meta {
        syn::Meta::List(list) => list.tokens.clone(),
        _ => TokenStream::new(),
    };
    let mut errors = Errors::default();
    crate::attr::parse(tokens, &mut errors)
}
