//! The status tool of an ADK-Rust tool: a unit struct named as ADK's `#[tool]` names its
//! structs, implementing ADK's `Tool`, that reads the key's fields from the call's JSON
//! arguments and the scope from its `ToolContext`.
//!
//! Input: an ADK tool (its key's fields all fields of the argument struct):
//!
//! ```text
//! #[idempotent(key = "invoice:<args.customer>:<args.period>", compare = [args.amount], scope = ctx.user_id())]
//! #[tool]
//! pub async fn send_invoice(ctx: Arc<dyn ToolContext>, args: InvoiceArgs) -> Result<Value, AdkError> { BODY }
//! ```
//!
//! Output, beside the tool and its status function:
//!
//! ```text
//! /// Read-only status of `send_invoice` ...
//! pub struct SendInvoiceStatus;
//!
//! #[::idem::__private::adk::async_trait]
//! impl ::idem::__private::adk::Tool for SendInvoiceStatus {
//!     fn name(&self) -> &str { "send_invoice_status" }
//!     fn description(&self) -> &str { "Read-only status of `send_invoice` ..." }
//!     fn parameters_schema(&self) -> Option<Value> {
//!         // ADK's own schema of the tool (`SendInvoice`, made by its `#[tool]`), cut to the key's
//!         // fields, each by its JSON name (with the names `json_names = [...]` gives)
//!         ::idem::__private::adk::status_schema(Tool::parameters_schema(&SendInvoice), &["customer", "period"], &[])
//!     }
//!     fn is_read_only(&self) -> bool { true }
//!     fn is_concurrency_safe(&self) -> bool { true }
//!     async fn execute(&self, __idem_ctx: Arc<dyn ToolContext>, __idem_args: Value) -> Result<Value, AdkError> {
//!         static __IDEM_TOOL: ::idem::__private::Tool = /* the tool's */;
//!         __IDEM_TOOL.json_names.read_from(/* a fn: arguments_schema(&SendInvoice) */);
//!         let ctx: Arc<dyn ToolContext> = __idem_ctx; // what the scope (or store) reads
//!         let mut __idem_args = StatusArgs::new(&__IDEM_TOOL, &["customer", "period"], arguments(__idem_args));
//!         let __idem_field0 = __idem_args.field("customer", |__idem_r: &InvoiceArgs| &__idem_r.customer);
//!         let __idem_field1 = __idem_args.field("period", |__idem_r: &InvoiceArgs| &__idem_r.period);
//!         let (Some(__idem_field0), Some(__idem_field1),) = (__idem_field0, __idem_field1,) else {
//!             return Err(tool_error(__idem_args.into_error())); // INVALID_KEY, naming the fields
//!         };
//!         let __idem_read = status_async(&__IDEM_TOOL, STORE, &[scope_part(&(ctx.user_id())), key_part(&__idem_field0), ..]);
//!         status_answer::<ValueOf<Result<Value, AdkError>>>(__idem_read.await)
//!     }
//! }
//! ```

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::spanned::Spanned;
use syn::{FnArg, Ident, ItemFn, Type};

use super::krate_at;
use super::status::{KeyReads, key_reads};
use crate::frameworks::Framework;
use crate::plan::Plan;

/// The status tool of an async ADK tool whose key comes from its argument struct; nothing
/// for other tools (their `<tool>_status` function is all they get).
pub(super) fn status_tool(
    plan: &Plan,
    item: &ItemFn,
    tool: &TokenStream,
    ret: &Type,
    store: &TokenStream,
) -> TokenStream {
    let sig = &item.sig;
    let key = match &plan.params_key {
        Some(key) if plan.framework == Framework::Adk && sig.asyncness.is_some() => key,
        _ => return TokenStream::new(),
    };
    let krate = &plan.krate;
    let adk = quote!(#krate::__private::adk);
    let FnArg::Typed(request) = &sig.inputs[key.arg] else { unreachable!("the key's argument is typed") };
    let request_ty = &request.ty;
    let tool_name = sig.ident.to_string();
    let status_name = format!("{tool_name}_status");
    let tool_struct = Ident::new(&adk_struct_name(&tool_name), Span::call_site());
    let status_struct = Ident::new(&adk_struct_name(&status_name), Span::call_site());
    // The fields by their JSON names, known at run time (the tool's schema): `{fields}`.
    let doc = crate::docs::status_doc(&tool_name, plan.approval.is_some(), "{fields}");
    let struct_doc = crate::docs::status_doc(&tool_name, plan.approval.is_some(), &key.fields.join(", "));
    let (ctx, args) = (Ident::new("__idem_ctx", Span::mixed_site()), Ident::new("__idem_args", Span::mixed_site()));
    // The context, bound as the tool binds it, for a scope (or store) that reads it.
    let context =
        sig.inputs.iter().enumerate().filter(|(i, _)| plan.store_inputs.contains(i)).filter_map(|(_, input)| {
            let FnArg::Typed(typed) = input else { return None };
            let (pat, ty) = (&typed.pat, &typed.ty);
            Some(quote!(let #pat: #ty = #ctx;))
        });
    let names = &key.fields;
    let given = plan.json_names.given_tokens();
    // The fields ADK's description (a literal) names, and the names it gives them: the
    // status tool, built with the tool, says when one is not what the model sees.
    let described = super::paragraph::parts(plan, &tool_name).into_iter().filter_map(|part| match part {
        crate::describe::Part::Field(path) => {
            let name = crate::json_names::given_path(&plan.json_names, &path);
            Some(quote!((#path, #name)))
        }
        _ => None,
    });
    let KeyReads { values, reads, parts } = key_reads(plan, key, request_ty, &args, TokenStream::new());
    let read = Ident::new("__idem_read", Span::mixed_site());
    let at_ret = krate_at(plan, ret.span());
    let vis = &item.vis;
    quote! {
        #[doc = #struct_doc]
        #vis struct #status_struct;

        #[#adk::async_trait]
        impl #adk::Tool for #status_struct {
            fn name(&self) -> &str {
                #status_name
            }

            fn description(&self) -> &str {
                static DESCRIPTION: ::std::sync::OnceLock<::std::string::String> = ::std::sync::OnceLock::new();
                DESCRIPTION.get_or_init(|| {
                    #adk::status_description(&#tool_struct, &[#(#names),*], #given, #doc, &[#(#described),*])
                })
            }

            fn parameters_schema(&self) -> ::core::option::Option<#adk::Value> {
                #adk::status_schema(#adk::Tool::parameters_schema(&#tool_struct), &[#(#names),*], #given)
            }

            fn is_read_only(&self) -> bool {
                true
            }

            fn is_concurrency_safe(&self) -> bool {
                true
            }

            #[allow(unused_variables, clippy::type_complexity)]
            async fn execute(
                &self,
                #ctx: ::std::sync::Arc<dyn #adk::ToolContext>,
                #args: #adk::Value,
            ) -> ::core::result::Result<#adk::Value, #adk::AdkError> {
                #tool
                #(#context)*
                let mut #args = #krate::__private::StatusArgs::new(&__IDEM_TOOL, &[#(#names),*], #adk::arguments(#args));
                #(#reads)*
                let (#(::core::option::Option::Some(#values),)*) = (#(#values,)*) else {
                    return ::core::result::Result::Err(#adk::tool_error(#args.into_error()));
                };
                // A statement of its own: the key parts are borrowed only while the key is built.
                let #read = #krate::__private::status_async(&__IDEM_TOOL, #store, &[#(#parts),*]);
                #adk::status_answer::<#at_ret::__private::ValueOf<#ret>>(#read.await)
            }
        }
    }
}

/// The struct ADK's `#[tool]` makes for function `name`: `send_invoice` -> `SendInvoice`
/// (each `_`-separated part with its first letter upper-cased, as adk-rust-macros does).
pub(super) fn adk_struct_name(name: &str) -> String {
    name.split('_')
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map(|first| first.to_uppercase().chain(chars).collect::<String>()).unwrap_or_default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structs_are_named_as_adk_names_them() {
        assert_eq!(adk_struct_name("send_invoice"), "SendInvoice");
        assert_eq!(adk_struct_name("send_invoice_status"), "SendInvoiceStatus");
        assert_eq!(adk_struct_name("get2_x"), "Get2X");
    }
}
