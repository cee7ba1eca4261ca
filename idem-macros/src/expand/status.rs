//! `<tool>_status`: the read-only status of the tool's call for the key's fields, and,
//! for an rmcp tool, its form that reads those fields from a status tool's JSON arguments.
//!
//! Input: the tool of [`expand`](super::expand). Output:
//!
//! ```text
//! /// Read-only status of `send_invoice` ...
//! pub async fn send_invoice_status(customer: String, period: String)
//!     -> ::core::result::Result<::idem::Status<::idem::__private::ValueOf<Result<Invoice, ToolError>>>, ::idem::Error>
//! {
//!     static __IDEM_TOOL: ::idem::__private::Tool = /* the same */;
//!     let read = ::idem::__private::status_async(&__IDEM_TOOL, &::idem::__private::DefaultStore,
//!         &[::idem::__private::key_part(&customer), ::idem::__private::key_part(&period)]);
//!     read.await
//! }
//! ```
//!
//! When the key's fields all come from the rmcp tool's `Parameters<T>` argument, a hidden
//! sibling serves the status tool of `#[idem::status_tools]` from the call's JSON arguments:
//!
//! ```text
//! #[doc(hidden)]
//! async fn __idem_send_invoice_status_json(&self, __idem_args: ::idem::__private::StatusInput)
//!     -> ::core::result::Result<::idem::Status<ValueOf<R>>, ::idem::Error>
//! {
//!     static __IDEM_TOOL: ::idem::__private::Tool = /* the same */;
//!     // Where the JSON names of the fields are found (see `expand.rs`'s `arguments_schema`).
//!     __IDEM_TOOL.json_names.read_from(::idem::__private::rmcp_arguments_schema::<Parameters<SendInvoice>>);
//!     // Each field read by its JSON name: `customerId` under `#[serde(rename_all = "camelCase")]`.
//!     let mut __idem_args = ::idem::__private::StatusArgs::new(&__IDEM_TOOL, &["customer", "period"], __idem_args.0);
//!     let __idem_field0 = __idem_args.field("customer", |__idem_r: &Parameters<SendInvoice>| &__idem_r.0.customer);
//!     let __idem_field1 = __idem_args.field("period", |__idem_r: &Parameters<SendInvoice>| &__idem_r.0.period);
//!     let (Some(__idem_field0), Some(__idem_field1),) = (__idem_field0, __idem_field1,) else {
//!         return Err(__idem_args.into_error()); // INVALID_KEY, naming the fields
//!     };
//!     let read = ::idem::__private::status_async(&__IDEM_TOOL, &(self.store),
//!         &[::idem::__private::key_part(&__idem_field0), ::idem::__private::key_part(&__idem_field1)]);
//!     read.await
//! }
//! ```
//!
//! A rig `#[rig_tool(...)]` gets the same description and stays on the tool, and the status
//! function gets one too, returning the tool's own error type:
//!
//! ```text
//! /// Read-only status of `send_invoice` ...
//! #[rig_tool(params(customer = "..."))]
//! pub async fn send_invoice_status(customer: String, period: String)
//!     -> ::core::result::Result<::idem::Status<ValueOf<R>>, ::idem::__private::ErrorOf<R>>
//! { ...; ::core::result::Result::map_err(read.await, ::core::convert::Into::into) }
//! ```

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{FnArg, Ident, ItemFn, Pat, Type};

use super::{krate_at, scope_part, strip_attrs};
use crate::frameworks::{self, Framework};
use crate::plan::{ParamsKey, Plan};

/// `<tool>_status`: the tool's receiver and the parameters the key uses, nothing else.
pub(super) fn status_fn(
    plan: &Plan,
    item: &ItemFn,
    tool: &TokenStream,
    ret: &Type,
    store: &TokenStream,
    key_parts: &[TokenStream],
) -> TokenStream {
    let krate = &plan.krate;
    let sig = &item.sig;
    let name = format_ident!("{}_status", sig.ident);
    let tool_name = sig.ident.to_string();
    // A leading space, as a `///` line has.
    let fields: Vec<String> =
        plan.key_fields.iter().map(|field| super::paragraph::compile_time_name(plan, &field.model_name)).collect();
    let doc = format!(" {}", crate::docs::status_doc(&tool_name, plan.approval.is_some(), &fields.join(", ")));
    // rig reads (and removes) parameter doc comments: a rig status tool keeps them.
    let keep_docs = plan.framework == Framework::Rig;
    let inputs = sig.inputs.iter().enumerate().filter_map(|(i, input)| match input {
        FnArg::Receiver(_) => Some(strip_attrs(input, false)),
        FnArg::Typed(_) if plan.status_inputs.contains(&i) => Some(strip_attrs(input, keep_docs)),
        FnArg::Typed(_) => None,
    });
    let (asyncness, read, awaited) = if sig.asyncness.is_some() {
        (quote!(async), quote!(#krate::__private::status_async), quote!(.await))
    } else {
        (quote!(), quote!(#krate::__private::status_sync), quote!())
    };
    let read_var = Ident::new("__idem_read", Span::mixed_site());
    // A rig tool's status function is a rig tool too: `#[rig_tool]` on it, and the tool's own
    // error type (rig shows the model only `ToolExecutionError`s).
    let rig_tool = item.attrs.iter().find(|attr| frameworks::is_attr(attr, "rig_tool"));
    let rig = plan.framework == Framework::Rig;
    let at_ret = krate_at(plan, ret.span());
    let (value_of, answer) = match rig_tool.filter(|_| rig) {
        Some(rig_tool) => (
            quote_spanned!(ret.span()=> ::core::result::Result<#at_ret::Status<#at_ret::__private::ValueOf<#ret>>, #at_ret::__private::ErrorOf<#ret>>),
            frameworks::rig_status_attr(rig_tool, &kept_names(plan, sig)),
        ),
        _ => (
            quote_spanned!(ret.span()=> ::core::result::Result<#at_ret::Status<#at_ret::__private::ValueOf<#ret>>, #at_ret::Error>),
            quote!(),
        ),
    };
    let read_result = if answer.is_empty() {
        quote!(#read_var #awaited)
    } else {
        quote!(::core::result::Result::map_err(#read_var #awaited, ::core::convert::Into::into))
    };
    let vis = &item.vis;
    let generics = &sig.generics;
    let where_clause = &sig.generics.where_clause;
    quote! {
        #[doc = #doc]
        #answer
        #[allow(unused_variables, clippy::unused_async, clippy::type_complexity)]
        #vis #asyncness fn #name #generics (#(#inputs),*)
            -> #value_of
            #where_clause
        {
            #tool
            // A statement of its own: the key parts are borrowed only while the key is built,
            // never across the read's await.
            let #read_var = #read(&__IDEM_TOOL, #store, &[#(#key_parts),*]);
            #read_result
        }
    }
}

/// How a status tool reads the key's fields from its JSON arguments (`args`, a
/// `StatusArgs`) and builds the key from them as the tool does: for rmcp's status tools
/// and ADK's.
pub(super) struct KeyReads {
    /// `__idem_field<i>`, one per field of `key.fields`.
    pub values: Vec<Ident>,
    /// `let __idem_field<i> = args.field("customer", |r: &Request| &r<through>.customer);`
    pub reads: Vec<TokenStream>,
    /// The key parts, the scope's first, as the tool's own.
    pub parts: Vec<TokenStream>,
}

/// [`KeyReads`] for a request of type `request_ty` whose fields are reached through
/// `through` (`.0` for rmcp's `Parameters<T>`, nothing for ADK's argument struct).
pub(super) fn key_reads(
    plan: &Plan,
    key: &ParamsKey,
    request_ty: &Type,
    args: &Ident,
    through: TokenStream,
) -> KeyReads {
    let reader = Ident::new("__idem_r", Span::mixed_site());
    // Each value is spanned at the first key field read from it (call-site hygiene: a
    // mixed-site span is shown at the attribute): a type that cannot be a key field is then
    // reported at the parameter, as in the tool, and rustc reports it once.
    let values: Vec<Ident> = (0..key.fields.len())
        .map(|i| {
            let first = key.parts.iter().position(|(index, _)| *index == i).expect("every field is used");
            Ident::new(&format!("__idem_field{i}"), plan.key_fields[first].root.span())
        })
        .collect();
    let reads = key
        .fields
        .iter()
        .zip(&values)
        .map(|(name, value)| {
            let field = Ident::new(name, request_ty.span());
            quote_spanned!(request_ty.span()=>
                let #value = #args.field(#name, |#reader: &#request_ty| &#reader #through .#field);)
        })
        .collect();
    // Spanned (and located) where the tool's own key parts are, so that a type that cannot
    // be a key field is reported once, at the parameter.
    let fields = plan.key_fields.iter().zip(&key.parts).map(|(field, (index, rest))| {
        let root = &field.root;
        let value = &values[*index];
        let rest = rest.iter().map(|segment| Ident::new(segment, root.span()));
        let krate = krate_at(plan, root.span());
        quote_spanned!(root.span()=> #krate::__private::key_part(&#value #(.#rest)*))
    });
    let parts = scope_part(plan).into_iter().chain(fields).collect();
    KeyReads { values, reads, parts }
}

/// `__idem_<tool>_status_json`, for the status tool `#[idem::status_tools]` adds to an
/// rmcp tool whose key comes from its JSON arguments (`plan.params_key`): the status read
/// from a status tool call's arguments. It reads each key field by its JSON name as the
/// type the request gives it (inferred from a closure that reads the field, never named),
/// builds the key parts from them as the tool builds them, and reads with the same
/// `__IDEM_TOOL` and store expression, so the key is exactly the tool's. It takes the
/// receiver and what the `store` expression uses. Nothing for other tools.
pub(super) fn status_json_fn(
    plan: &Plan,
    item: &ItemFn,
    tool: &TokenStream,
    ret: &Type,
    store: &TokenStream,
) -> TokenStream {
    let Some(key) = plan.params_key.as_ref().filter(|_| plan.framework == Framework::Rmcp) else {
        return TokenStream::new();
    };
    let krate = &plan.krate;
    let sig = &item.sig;
    let name = status_json_name(&sig.ident);
    let args = Ident::new("__idem_args", Span::mixed_site());
    let FnArg::Typed(request) = &sig.inputs[key.arg] else { unreachable!("the key's argument is typed") };
    let request_ty = &request.ty;
    let inputs = sig.inputs.iter().enumerate().filter_map(|(i, input)| match input {
        FnArg::Receiver(_) => Some(strip_attrs(input, false).into_token_stream()),
        FnArg::Typed(_) if i == key.arg => Some(quote!(#args: #krate::__private::StatusInput)),
        FnArg::Typed(_) if plan.store_inputs.contains(&i) => Some(strip_attrs(input, false).into_token_stream()),
        FnArg::Typed(_) => None,
    });
    let names = &key.fields;
    let KeyReads { values, reads, parts } = key_reads(plan, key, request_ty, &args, quote!(.0));
    let (asyncness, read, awaited) = if sig.asyncness.is_some() {
        (quote!(async), quote!(#krate::__private::status_async), quote!(.await))
    } else {
        (quote!(), quote!(#krate::__private::status_sync), quote!())
    };
    let read_var = Ident::new("__idem_read", Span::mixed_site());
    let at_ret = krate_at(plan, ret.span());
    let (vis, generics, where_clause) = (&item.vis, &sig.generics, &sig.generics.where_clause);
    quote! {
        #[doc(hidden)]
        // Unused without `#[idem::status_tools]`.
        #[allow(dead_code, unused_variables, clippy::unused_async, clippy::type_complexity)]
        #vis #asyncness fn #name #generics (#(#inputs),*)
            -> ::core::result::Result<#at_ret::Status<#at_ret::__private::ValueOf<#ret>>, #at_ret::Error>
            #where_clause
        {
            #tool
            let mut #args = #krate::__private::StatusArgs::new(&__IDEM_TOOL, &[#(#names),*], #args.0);
            #(#reads)*
            let (#(::core::option::Option::Some(#values),)*) = (#(#values,)*) else {
                return ::core::result::Result::Err(#args.into_error());
            };
            // A statement of its own: the key parts are borrowed only while the key is built.
            let #read_var = #read(&__IDEM_TOOL, #store, &[#(#parts),*]);
            #read_var #awaited
        }
    }
}

/// The name of the status read from a status tool's JSON arguments:
/// `__idem_send_invoice_status_json`.
pub(crate) fn status_json_name(tool: &Ident) -> Ident {
    format_ident!("__idem_{}_status_json", tool)
}

/// The names of the parameters the status function keeps.
fn kept_names(plan: &Plan, sig: &syn::Signature) -> Vec<String> {
    let typed = sig.inputs.iter().enumerate().filter(|(i, _)| plan.status_inputs.contains(i));
    typed
        .filter_map(|(_, input)| match input {
            FnArg::Typed(typed) => match &*typed.pat {
                Pat::Ident(ident) => Some(ident.ident.to_string()),
                _ => None,
            },
            FnArg::Receiver(_) => None,
        })
        .collect()
}
