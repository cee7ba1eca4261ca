//! `__idem_<tool>_task` (async rmcp tools): what `#[idem::tasks]` asks each tool about a
//! task id, through `#[idem::status_tools]`.
//!
//! Input: an async rmcp tool of [`expand`](super::expand), `scope = principal.tenant`
//! reading `Extension(principal): Extension<Principal>`. Output:
//!
//! ```text
//! #[doc(hidden)]
//! async fn __idem_send_invoice_task(&self, __idem_task: &str, __idem_ask: ::idem::__private::rmcp::tasks::Ask,
//!     __idem_context: &::rmcp::service::RequestContext<::rmcp::RoleServer>)
//!     -> ::idem::__private::rmcp::tasks::ToolAnswer
//! {
//!     static __IDEM_TOOL: ::idem::__private::Tool = /* the same */;
//!     let __idem_caller = '__idem_caller: {
//!         let mut __idem_parts = ToolCallContext::new(self, CallToolRequestParams::new("send_invoice"), __idem_context.clone());
//!         let Extension(principal) = match <Extension<Principal> as FromContextPart<_>>::from_context_part(&mut __idem_parts) {
//!             Ok(extracted) => extracted,
//!             Err(_) => break '__idem_caller Caller::Unidentified,
//!         };
//!         Caller::scoped(&(principal.tenant))
//!     };
//!     ::idem::__private::rmcp::tasks::ask::<R, _>(&__IDEM_TOOL, &::idem::__private::DefaultStore,
//!         (__idem_task, __idem_caller), __idem_ask).await
//! }
//! ```
//!
//! Without `scope`, the caller is `Caller::Anyone` and nothing is extracted.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::{FnArg, Ident, ItemFn, Type};

use crate::plan::Plan;

/// `__idem_<tool>_task` (async rmcp tools): `tasks/get`, `tasks/cancel` or `tasks/update`
/// for a task of this tool's, `None` for another's. `#[idem::status_tools]` asks each tool
/// in turn. A scoped tool's task is the caller's only: the parameters the scope reads are
/// extracted from the task request's own context, as rmcp extracts them for a call (an
/// `Authenticated<T>` or `Extension<T>`), and the scope is computed as the tool computes it.
pub(super) fn task_state_fn(
    plan: &Plan,
    item: &ItemFn,
    tool: &TokenStream,
    ret: &Type,
    store: &TokenStream,
) -> TokenStream {
    let krate = &plan.krate;
    let tasks = quote!(#krate::__private::rmcp::tasks);
    let sig = &item.sig;
    let name = format_ident!("__idem_{}_task", sig.ident);
    let (task, ask, context, caller) = (
        Ident::new("__idem_task", Span::mixed_site()),
        Ident::new("__idem_ask", Span::mixed_site()),
        Ident::new("__idem_context", Span::mixed_site()),
        Ident::new("__idem_caller", Span::mixed_site()),
    );
    let receiver = sig.receiver().map(|receiver| {
        let mut receiver = receiver.clone();
        receiver.attrs.clear();
        quote!(#receiver,)
    });
    let caller_is = match &plan.scope {
        None => quote!(#tasks::Caller::Anyone),
        Some(scope) => {
            let service = crate::params::receiver_self(sig).unwrap_or_else(|| quote!(&()));
            let tool_name = sig.ident.to_string();
            let parts = Ident::new("__idem_parts", Span::mixed_site());
            let label = syn::Lifetime::new("'__idem_caller", Span::mixed_site());
            let extracted = plan.scope_inputs.iter().filter_map(|&i| match &sig.inputs[i] {
                FnArg::Typed(typed) => {
                    let (pat, ty) = (&typed.pat, &typed.ty);
                    Some(quote! {
                        let #pat = match <#ty as ::rmcp::handler::server::common::FromContextPart<_>>::from_context_part(&mut #parts) {
                            ::core::result::Result::Ok(extracted) => extracted,
                            ::core::result::Result::Err(_) => break #label #tasks::Caller::Unidentified,
                        };
                    })
                }
                FnArg::Receiver(_) => None,
            });
            quote! {
                #label: {
                    let mut #parts = ::rmcp::handler::server::tool::ToolCallContext::new(
                        #service,
                        ::rmcp::model::CallToolRequestParams::new(#tool_name),
                        #context.clone(),
                    );
                    #(#extracted)*
                    #tasks::Caller::scoped(&(#scope))
                }
            }
        }
    };
    let (generics, where_clause) = (&sig.generics, &sig.generics.where_clause);
    quote! {
        #[doc(hidden)]
        #[allow(clippy::type_complexity, unused_variables, unused_mut)]
        async fn #name #generics (
            #receiver
            #task: &str,
            #ask: #tasks::Ask<'_>,
            #context: &::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> #tasks::ToolAnswer
            #where_clause
        {
            #tool
            let #caller = #caller_is;
            #tasks::ask::<#ret, _>(&__IDEM_TOOL, #store, (#task, #caller), #ask).await
        }
    }
}
