//! `<tool>_record_id`: the namespace and key of the tool's record for the key's fields.
//!
//! Input: the tool of [`expand`](super::expand). Output:
//!
//! ```text
//! /// The namespace and key of `send_invoice`'s record ...
//! pub fn send_invoice_record_id(customer: String, period: String)
//!     -> ::core::result::Result<::idem::store::OwnedRecordId, ::idem::Error>
//! {
//!     static __IDEM_TOOL: ::idem::__private::Tool = /* the same */;
//!     ::idem::__private::record_id(&__IDEM_TOOL, &[::idem::__private::key_part(&customer), ...])
//! }
//! ```

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote};
use syn::{FnArg, ItemFn};

use super::strip_attrs;
use crate::plan::Plan;

/// `<tool>_record_id`: the record's namespace and key for the key's fields, to read or
/// settle it through a `Store` without repeating the namespace by hand.
pub(super) fn record_id_fn(plan: &Plan, item: &ItemFn, tool: &TokenStream, key_parts: &[TokenStream]) -> TokenStream {
    let krate = &plan.krate;
    let sig = &item.sig;
    let name = format_ident!("{}_record_id", sig.ident);
    let doc = format!(
        " The namespace and key of `{}`'s record for these key fields, to read or settle it \
         through a store: `store.read(id.as_record_id())`. Builds the key only; reads nothing.",
        sig.ident
    );
    // The receiver only when the scope reads it: the key is built from the key's fields
    // and the scope.
    let scope_reads_self = plan.scope.as_ref().is_some_and(|scope| mentions_self(scope.to_token_stream()));
    let inputs = sig.inputs.iter().enumerate().filter_map(|(i, input)| match input {
        FnArg::Receiver(_) if scope_reads_self => Some(strip_attrs(input, false)),
        FnArg::Typed(_) if plan.key_inputs.contains(&i) => Some(strip_attrs(input, false)),
        _ => None,
    });
    let (vis, generics, where_clause) = (&item.vis, &sig.generics, &sig.generics.where_clause);
    quote! {
        #[doc = #doc]
        #[allow(unused_variables, clippy::type_complexity)]
        #vis fn #name #generics (#(#inputs),*)
            -> ::core::result::Result<#krate::store::OwnedRecordId, #krate::Error>
            #where_clause
        {
            #tool
            #krate::__private::record_id(&__IDEM_TOOL, &[#(#key_parts),*])
        }
    }
}

/// Whether `tokens` use `self`.
fn mentions_self(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|token| match token {
        proc_macro2::TokenTree::Ident(ident) => ident == "self",
        proc_macro2::TokenTree::Group(group) => mentions_self(group.stream()),
        _ => false,
    })
}
