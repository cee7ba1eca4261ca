//! Expansion: the tool keeps its signature; its body is wrapped in one runtime call; a
//! read-only `<tool>_status` sibling and a `<tool>_record_id` sibling are added. Paths
//! start at `::idem`, or at what `crate = "..."` names.
//!
//! Input:
//!
//! ```text
//! #[idempotent(key = "invoice:<customer>:<period>", compare = [amount])]
//! pub async fn send_invoice(customer: String, period: String, amount: f64, memo: String)
//!     -> Result<Invoice, ToolError>
//! { BODY }
//! ```
//!
//! Output:
//!
//! ```text
//! pub async fn send_invoice(customer: String, period: String, amount: f64, memo: String)
//!     -> Result<Invoice, ToolError>
//! {
//!     static __IDEM_TOOL: ::idem::__private::Tool = ::idem::__private::Tool {
//!         name: "send_invoice",
//!         namespace: concat!(module_path!(), "::", "send_invoice"),
//!         site: concat!(file!(), ":", line!(), ":", column!()),
//!         ..
//!     };
//!     let call = ::idem::__private::Call::new(
//!         &__IDEM_TOOL,
//!         &[::idem::__private::key_part(&customer), ::idem::__private::key_part(&period)],
//!         [::idem::__private::compared(&amount)],
//!     );
//!     ::idem::__private::run_async(call, &::idem::__private::DefaultStore, async move { BODY }).await
//! }
//!
//! /// Read-only status of `send_invoice` ...
//! pub async fn send_invoice_status(customer: String, period: String)
//!     -> ::core::result::Result<::idem::Status<::idem::__private::ValueOf<Result<Invoice, ToolError>>>, ::idem::Error>
//! {
//!     static __IDEM_TOOL: ::idem::__private::Tool = /* the same */;
//!     let read = ::idem::__private::status_async(&__IDEM_TOOL, &::idem::__private::DefaultStore,
//!         &[::idem::__private::key_part(&customer), ::idem::__private::key_part(&period)]);
//!     read.await
//! }
//!
//! /// The namespace and key of `send_invoice`'s record ...
//! pub fn send_invoice_record_id(customer: String, period: String)
//!     -> ::core::result::Result<::idem::store::OwnedRecordId, ::idem::Error>
//! {
//!     static __IDEM_TOOL: ::idem::__private::Tool = /* the same */;
//!     ::idem::__private::record_id(&__IDEM_TOOL, &[::idem::__private::key_part(&customer), ...])
//! }
//! ```
//!
//! Frameworks (see `frameworks.rs`): an rmcp `#[tool(...)]` below the attribute is re-emitted
//! as `#[tool(description = "<the doc comment as paragraphs>", ..., annotations(...,
//! idempotent_hint = true))]` (the description only when it has none). When the key's fields
//! all come from the rmcp tool's `Parameters<T>` argument, a hidden sibling serves the
//! status tool of `#[idem::status_tools]` from the call's JSON arguments:
//!
//! ```text
//! #[doc(hidden)]
//! async fn __idem_send_invoice_status_json(&self, __idem_args: ::idem::__private::StatusInput)
//!     -> ::core::result::Result<::idem::Status<ValueOf<R>>, ::idem::Error>
//! {
//!     static __IDEM_TOOL: ::idem::__private::Tool = /* the same */;
//!     let mut __idem_args = ::idem::__private::StatusArgs::new("send_invoice", &["customer", "period"], __idem_args);
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
use syn::{FnArg, ItemFn, Pat, ReturnType, Type};

use crate::frameworks::{self, Framework};
use crate::template::Piece;
use crate::validate::Plan;

pub fn expand(plan: &Plan, item: &ItemFn) -> TokenStream {
    let krate = &plan.krate;
    let tool = tool_static(plan, item);
    let ret = return_type(item);
    let is_async = item.sig.asyncness.is_some();
    let store = store_expr(plan);
    let key_parts = key_parts(plan);
    let compared = plan.compare.iter().map(|field| {
        let (root, rest) = (field.root(), &field.segments[1..]);
        let krate = krate_at(plan, root.span());
        quote_spanned!(root.span()=> #krate::__private::compared(&#root #(.#rest)*))
    });
    let call = Ident::new("__idem_call", Span::mixed_site());
    let block = &item.block;
    let (hook, policy) = (hook(plan, is_async, &ret), policy(plan, &ret));
    let at_ret = krate_at(plan, ret.span());
    // An rmcp tool's timeout is the `tools/call`'s, applied by `#[idem::tasks]` (see `Tool::timeout`).
    let own_timeout = plan.timeout_ms.filter(|_| !serves_tasks(plan, item));
    let run = match (is_async, own_timeout) {
        (true, Some(ms)) => quote_spanned!(ret.span()=>
            #at_ret::__private::run_async_timeout(#call, #store, async move #block, #hook, #policy,
                ::core::time::Duration::from_millis(#ms)).await
        ),
        (true, None) => {
            quote_spanned!(ret.span()=> #at_ret::__private::run_async(#call, #store, async move #block, #hook, #policy).await)
        }
        (false, _) => quote_spanned!(ret.span()=>
            #at_ret::__private::run_sync(#call, #store, move || -> #ret #block, #hook, #policy)
        ),
    };
    // One check of the return type, where the user wrote it: rustc then reports an unfit
    // type once, at the type, instead of once per generic call that needs it.
    let assert_output = quote_spanned!(ret.span()=> let _: #at_ret::__private::StatusOf<#ret> = ::core::result::Result::Ok(#at_ret::Status::NotFound););
    let attrs = frameworks::tool_attrs(&item.attrs);
    let vis = &item.vis;
    let sig = &item.sig;
    let status = status_fn(plan, item, &tool, &ret, &store, &key_parts);
    let status_json = status_json_fn(plan, item, &tool, &ret, &store);
    let record_id = record_id_fn(plan, item, &tool, &key_parts);
    let task_state = serves_tasks(plan, item).then(|| task_state_fn(plan, item, &tool, &ret, &store));
    let unscoped_warning = crate::scope::unscoped_warning(plan.unscoped_identity.as_ref(), &item.sig.ident);
    quote! {
        #(#attrs)*
        #vis #sig {
            #tool
            #assert_output
            #unscoped_warning
            let #call = #krate::__private::Call::new(&__IDEM_TOOL, &[#(#key_parts),*], [#(#compared),*]);
            #run
        }

        #status

        #status_json

        #record_id

        #task_state
    }
}

/// `__idem_<tool>_task` (async rmcp tools): `tasks/get`, `tasks/cancel` or `tasks/update`
/// for a task of this tool's, `None` for another's. `#[idem::status_tools]` asks each tool
/// in turn. A scoped tool's task is the caller's only: the parameters the scope reads are
/// extracted from the task request's own context, as rmcp extracts them for a call (an
/// `Authenticated<T>` or `Extension<T>`), and the scope is computed as the tool computes it.
fn task_state_fn(plan: &Plan, item: &ItemFn, tool: &TokenStream, ret: &Type, store: &TokenStream) -> TokenStream {
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
            let service = if sig.receiver().is_some() { quote!(self) } else { quote!(&()) };
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
            #ask: #tasks::Ask,
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

use syn::Ident;

/// The reconcile hook: the user's expression, wrapped where its closure argument's type is
/// inferred and where a hook that does not fit the tool is reported, or none.
fn hook(plan: &Plan, is_async: bool, ret: &Type) -> TokenStream {
    let krate = &plan.krate;
    let Some(hook) = &plan.reconcile else { return quote!(#krate::__private::NoReconcile) };
    let wrap = if is_async { quote!(reconcile_async) } else { quote!(reconcile_sync) };
    // The tool's stored value as the hook's answer type, spanned at the return type: an
    // unfit return type is reported there once, with the tool's other checks of it.
    let at_ret = krate_at(plan, ret.span());
    let value = quote_spanned!(ret.span()=> #at_ret::__private::ValueOf<#ret>);
    let krate = krate_at(plan, hook.span());
    quote_spanned!(hook.span()=> #krate::__private::#wrap::<#value, _, _>(#hook))
}

/// The error policy. `on_error = keep` is checked at the `keep` token, with the tool's error
/// type: an error type that cannot be stored is reported there in idem's words, and once
/// (the call's own bound on the policy is the same, at the same token). The default policy
/// is spanned at the return type, where rustc already reports an unfit return type (the
/// same span lets it report that once).
fn policy(plan: &Plan, ret: &Type) -> TokenStream {
    match &plan.keep_errors {
        Some(keep) => {
            let krate = krate_at(plan, keep.span());
            quote_spanned!(keep.span()=> #krate::__private::keep::<#krate::__private::ErrorOf<#ret>>())
        }
        None => {
            let krate = krate_at(plan, ret.span());
            quote_spanned!(ret.span()=> #krate::__private::Release)
        }
    }
}

/// The tool's compile-time description, emitted identically in the tool and its status
/// function so both derive the same key in the same namespace.
fn tool_static(plan: &Plan, item: &ItemFn) -> TokenStream {
    let krate = &plan.krate;
    let name = item.sig.ident.to_string();
    let status_fn = format!("{name}_status");
    // The module path tells apart functions of one name in different modules; methods of
    // one name in two impl blocks of a module still meet, which `Claim` catches at run time.
    let (namespace, namespace_given) = match &plan.namespace {
        Some(namespace) => (quote!(#namespace), true),
        None => (quote!(::core::concat!(::core::module_path!(), "::", #name)), false),
    };
    // A scope comes first, hashed (exactly as given, not case folded: two tenants whose ids
    // differ only in case stay apart) to 32 hex digits and a `/`: every key of a scoped tool
    // starts with one, so no key text can pass for another scope's.
    let scope = plan.scope.as_ref().map(|_| {
        quote!(
            #krate::__private::Segment::Field("scope", #krate::__private::FieldMode { normalize: false, hash: true }),
            #krate::__private::Segment::Literal("/"),
        )
    });
    let segments = plan.pieces.iter().map(|piece| match piece {
        Piece::Literal(text) => quote!(#krate::__private::Segment::Literal(#text)),
        Piece::Placeholder(p) => {
            let normalize = !p.exact;
            let hash = p.hash;
            let path = plan.key_fields.iter().find(|k| k.placeholder.path == p.path).map_or_else(|| p.path_text(), |k| k.model_name.clone());
            quote!(#krate::__private::Segment::Field(#path, #krate::__private::FieldMode { normalize: #normalize, hash: #hash }))
        }
    });
    let compare = &plan.compare_names;
    let compare_written = plan.compare.iter().map(|field| field.text());
    let lease = match plan.lease_ms {
        Some(ms) => quote!(::core::time::Duration::from_millis(#ms)),
        None => quote!(#krate::__private::DEFAULT_LEASE),
    };
    let max_hold = match plan.max_hold_ms {
        Some(ms) => quote!(::core::time::Duration::from_millis(#ms)),
        None => quote!(#krate::__private::DEFAULT_MAX_HOLD),
    };
    let retain = match plan.retain_ms {
        Some(ms) => quote!(::core::time::Duration::from_millis(#ms)),
        None => quote!(#krate::__private::DEFAULT_RETAIN),
    };
    let serves_tasks = serves_tasks(plan, item);
    let serving = match serves_tasks {
        true => quote!(::core::option::Option::Some(&#krate::__private::rmcp::tasks::SERVING)),
        false => quote!(::core::option::Option::None),
    };
    let timeout = match plan.timeout_ms.filter(|_| serves_tasks) {
        Some(ms) => quote!(::core::option::Option::Some(::core::time::Duration::from_millis(#ms))),
        None => quote!(::core::option::Option::None),
    };
    quote! {
        static __IDEM_TOOL: #krate::__private::Tool = #krate::__private::Tool {
            name: #name,
            namespace: #namespace,
            namespace_given: #namespace_given,
            site: ::core::concat!(::core::file!(), ":", ::core::line!(), ":", ::core::column!()),
            template: &[#scope #(#segments),*],
            compare: &[#(#compare),*],
            compare_written: &[#(#compare_written),*],
            status_fn: #status_fn,
            lease: #lease,
            max_hold: #max_hold,
            retain: #retain,
            serving: #serving,
            timeout: #timeout,
            instruments: #krate::__private::instruments!(#name),
            claim: #krate::__private::Claim::new(),
        };
    }
}

/// Whether the tool's calls may answer with an MCP task: async rmcp tools, whose task
/// state `#[idem::status_tools]` serves.
fn serves_tasks(_plan: &Plan, item: &ItemFn) -> bool {
    item.sig.asyncness.is_some() && frameworks::detect(&item.attrs) == Framework::Rmcp
}

/// One `key_part(&value)` per placeholder, spanned at the binding so that a type that
/// cannot be a key field is reported on the parameter.
fn key_parts(plan: &Plan) -> Vec<TokenStream> {
    let fields = plan.key_fields.iter().map(|field| {
        let root = &field.root;
        let rest = field.placeholder.path[1..].iter().map(|s| Ident::new(s, root.span()));
        let krate = krate_at(plan, root.span());
        quote_spanned!(root.span()=> #krate::__private::key_part(&#root #(.#rest)*))
    });
    scope_part(plan).into_iter().chain(fields).collect()
}

/// The scope's key part, first of the key's parts (see the template), spanned at the
/// user's expression so that a value that cannot be a scope is reported there.
fn scope_part(plan: &Plan) -> Option<TokenStream> {
    let scope = plan.scope.as_ref()?;
    let krate = krate_at(plan, scope.span());
    Some(quote_spanned!(scope.span()=> #krate::__private::scope_part(&(#scope))))
}

/// The store argument, `&(expr)`, spanned at the user's expression so that a value that
/// is not a store is reported there.
fn store_expr(plan: &Plan) -> TokenStream {
    let krate = &plan.krate;
    match &plan.store {
        Some(store) => quote_spanned!(store.span()=> &(#store)),
        None => quote!(&#krate::__private::DefaultStore),
    }
}

/// The facade's path with every token at `span`. Inside `quote_spanned!` the path must
/// carry the span of the tokens around it: a path at the attribute's span makes rustc
/// report an unmet bound twice, once at the attribute.
pub fn krate_at(plan: &Plan, span: Span) -> TokenStream {
    let path = plan.krate.to_token_stream();
    path.into_iter()
        .map(|mut token| {
            token.set_span(span);
            token
        })
        .collect()
}

fn return_type(item: &ItemFn) -> Type {
    match &item.sig.output {
        ReturnType::Type(_, ty) => (**ty).clone(),
        ReturnType::Default => syn::parse_quote_spanned!(item.sig.ident.span()=> ()),
    }
}

/// `<tool>_status`: the tool's receiver and the parameters the key uses, nothing else.
fn status_fn(
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
    let doc = format!(
        " Read-only status of `{tool_name}` for these key fields: not found, in progress, completed \
         (with its result), failed, or unknown (a call was abandoned). Never reserves or runs anything; \
         call it when a call's outcome is unknown, e.g. after a timeout."
    );
    // rig reads (and removes) parameter doc comments: a rig status tool keeps them.
    let keep_docs = frameworks::detect(&item.attrs) == Framework::Rig;
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
    let rig = frameworks::detect(&item.attrs) == Framework::Rig;
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

/// `__idem_<tool>_status_json`, for the status tool `#[idem::status_tools]` adds to an
/// rmcp tool whose key comes from its JSON arguments (`plan.params_key`): the status read
/// from a status tool call's arguments. It reads each key field by its JSON name as the
/// type the request gives it (inferred from a closure that reads the field, never named),
/// builds the key parts from them as the tool builds them, and reads with the same
/// `__IDEM_TOOL` and store expression, so the key is exactly the tool's. It takes the
/// receiver and what the `store` expression uses. Nothing for other tools.
fn status_json_fn(plan: &Plan, item: &ItemFn, tool: &TokenStream, ret: &Type, store: &TokenStream) -> TokenStream {
    let Some(key) = plan.params_key.as_ref().filter(|_| frameworks::detect(&item.attrs) == Framework::Rmcp) else {
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
    let tool_name = sig.ident.to_string();
    let names = &key.fields;
    let reader = Ident::new("__idem_r", Span::mixed_site());
    // Each value is spanned at the first key field read from it (call-site hygiene: a
    // mixed-site span is shown at the attribute): a type that cannot be a key field is then
    // reported at the parameter, as in the tool, and rustc reports it once.
    let values: Vec<Ident> = (0..names.len())
        .map(|i| {
            let first = key.parts.iter().position(|(index, _)| *index == i).expect("every field is used");
            Ident::new(&format!("__idem_field{i}"), plan.key_fields[first].root.span())
        })
        .collect();
    let reads = names.iter().zip(&values).map(|(name, value)| {
        let field = Ident::new(name, request_ty.span());
        quote_spanned!(request_ty.span()=> let #value = #args.field(#name, |#reader: &#request_ty| &#reader.0.#field);)
    });
    // Spanned (and located) where the tool's own key parts are, so that a type that cannot
    // be a key field is reported once, at the parameter.
    let fields = plan.key_fields.iter().zip(&key.parts).map(|(field, (index, rest))| {
        let root = &field.root;
        let value = &values[*index];
        let rest = rest.iter().map(|segment| Ident::new(segment, root.span()));
        let krate = krate_at(plan, root.span());
        quote_spanned!(root.span()=> #krate::__private::key_part(&#value #(.#rest)*))
    });
    let parts = scope_part(plan).into_iter().chain(fields);
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
            let mut #args = #krate::__private::StatusArgs::new(#tool_name, &[#(#names),*], #args);
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
pub fn status_json_name(tool: &Ident) -> Ident {
    format_ident!("__idem_{}_status_json", tool)
}

/// `<tool>_record_id`: the record's namespace and key for the key's fields, to read or
/// settle it through a `Store` without repeating the namespace by hand.
fn record_id_fn(plan: &Plan, item: &ItemFn, tool: &TokenStream, key_parts: &[TokenStream]) -> TokenStream {
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

/// A parameter for the status function: no attributes (they belong to the tool's schema),
/// except doc comments when `keep_docs`, and no `mut` (the status function never changes it).
fn strip_attrs(input: &FnArg, keep_docs: bool) -> FnArg {
    let mut input = input.clone();
    match &mut input {
        FnArg::Receiver(receiver) => receiver.attrs.clear(),
        FnArg::Typed(typed) => {
            typed.attrs.retain(|attr| keep_docs && attr.path().is_ident("doc"));
            if let Pat::Ident(ident) = &mut *typed.pat {
                ident.mutability = None;
            }
        }
    }
    input
}
