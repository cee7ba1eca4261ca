//! Expansion: the tool keeps its signature; its body is wrapped in one runtime call; a
//! read-only `<tool>_status` sibling and a `<tool>_record_id` sibling are added (each in a
//! file of its own below, with its Input / Output). Paths start at `::idem`, or at what
//! `crate = "..."` names.
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
//!     ::idem::__private::run_async(call, &::idem::__private::DefaultStore, ::idem::__private::Uncharged,
//!         async move { BODY }, ::idem::__private::NoReconcile, ::idem::__private::Release).await
//! }
//! ```
//!
//! Frameworks (see `frameworks.rs`): an rmcp `#[tool(...)]` below the attribute is re-emitted
//! as `#[tool(description = "<the doc comment as paragraphs>", ..., annotations(...,
//! idempotent_hint = true))]` (the description only when it has none). The siblings an rmcp
//! or rig tool gets besides are in `status.rs` and `task.rs`; an ADK-Rust tool's status tool
//! is in `adk.rs`.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{FnArg, Ident, ItemFn, Pat, ReturnType, Type};

use crate::frameworks::{self, Framework};
use crate::plan::Plan;
use crate::template::Piece;

mod adk;
mod approval;
mod budget;
mod description;
mod paragraph;
mod record_id;
mod status;
mod task;

use description::{Described, description_fn};
use record_id::record_id_fn;
pub(crate) use status::status_json_name;
use status::{status_fn, status_json_fn};
use task::task_state_fn;

pub(crate) fn expand(plan: &Plan, item: &ItemFn) -> TokenStream {
    let krate = &plan.krate;
    let tool = tool_static(plan, item);
    let ret = return_type(item);
    let is_async = item.sig.asyncness.is_some();
    let store = store_expr(plan);
    let reserving = reserving(plan);
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
            #at_ret::__private::run_async_timeout(#call, #store, #reserving, async move #block, #hook, #policy,
                ::core::time::Duration::from_millis(#ms)).await
        ),
        (true, None) => {
            quote_spanned!(ret.span()=> #at_ret::__private::run_async(#call, #store, #reserving, async move #block, #hook, #policy).await)
        }
        (false, _) => quote_spanned!(ret.span()=>
            #at_ret::__private::run_sync(#call, #store, #reserving, move || -> #ret #block, #hook, #policy)
        ),
    };
    // One check of the return type, where the user wrote it: rustc then reports an unfit
    // type once, at the type, instead of once per generic call that needs it.
    let assert_output = quote_spanned!(ret.span()=> let _: #at_ret::__private::StatusOf<#ret> = ::core::result::Result::Ok(#at_ret::Status::NotFound););
    let described = Described::new(plan, item, arguments_schema(plan, item));
    let attrs = frameworks::tool_attrs(item, plan.framework, &described.descriptions(plan, item));
    let description = description_fn(plan, item, &described);
    let vis = &item.vis;
    let sig = &item.sig;
    let status = status_fn(plan, item, &tool, &ret, &store, &key_parts);
    let status_json = status_json_fn(plan, item, &tool, &ret, &store);
    let adk_status = adk::status_tool(plan, item, &tool, &ret, &store);
    let record_id = record_id_fn(plan, item, &tool, &key_parts);
    let task_state = serves_tasks(plan, item).then(|| task_state_fn(plan, item, &tool, &ret, &store));
    let unscoped_warning = crate::scope::unscoped_warning(plan.unscoped_identity.as_ref(), &item.sig.ident);
    let asking = approval::asking(plan, &call);
    let budget_check = budget::check(plan);
    quote! {
        #(#attrs)*
        #vis #sig {
            #tool
            #budget_check
            #assert_output
            #unscoped_warning
            let #call = #krate::__private::Call::new(&__IDEM_TOOL, &[#(#key_parts),*], [#(#compared),*]);
            #asking
            #run
        }

        #status

        #status_json

        #adk_status

        #record_id

        #description

        #task_state
    }
}

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
    let approval = approval::policy(plan);
    let budget = budget::policy(plan);
    let given = plan.json_names.given_tokens();
    let json_paths = &plan.json_names.paths;
    let read_json_names = arguments_schema(plan, item).map(|schema| quote!(__IDEM_TOOL.json_names.read_from(#schema);));
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
            approval: #approval,
            budget: #budget,
            instruments: #krate::__private::instruments!(#name),
            claim: #krate::__private::Claim::new(),
            json_names: #krate::__private::JsonNames::new(#given, &[#(#json_paths),*]),
        };
        #read_json_names
    }
}

/// Where the JSON names of the tool's fields are found: a function giving the JSON schema
/// of the arguments the model sends, as the model is shown it (rmcp's input schema of the
/// `Parameters<T>` argument, the parameters of the tool ADK's `#[tool]` makes). Read where
/// the argument type is in scope (a `static` cannot name a generic impl's parameters).
/// None for other tools, and when no key or compared field comes from such arguments.
fn arguments_schema(plan: &Plan, item: &ItemFn) -> Option<TokenStream> {
    let krate = &plan.krate;
    let arg = plan.json_names.arg?;
    match plan.framework {
        Framework::Rmcp => {
            let FnArg::Typed(typed) = &item.sig.inputs[arg] else { return None };
            let ty = &typed.ty;
            crate::params::is_parameters(ty).then(|| quote!(#krate::__private::rmcp_arguments_schema::<#ty>))
        }
        Framework::Adk => {
            let tool_struct = Ident::new(&adk::adk_struct_name(&item.sig.ident.to_string()), Span::call_site());
            let schema = Ident::new("__idem_arguments_schema", Span::mixed_site());
            Some(quote!({
                fn #schema() -> ::core::option::Option<#krate::__private::JsonObject> {
                    #krate::__private::adk::arguments_schema(&#tool_struct)
                }
                #schema
            }))
        }
        _ => None,
    }
}

/// Whether the tool's calls may answer with an MCP task: async rmcp tools, whose task
/// state `#[idem::status_tools]` serves.
fn serves_tasks(plan: &Plan, item: &ItemFn) -> bool {
    item.sig.asyncness.is_some() && plan.framework == Framework::Rmcp
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

/// How the call reserves its key: `Charged` (through the store's budgets) for a tool with
/// `budget = ...`, `Uncharged` otherwise. Spanned at the `store = ...` expression, so that a
/// store that keeps no budgets is reported there, in the words of
/// `idem::store::BudgetStore`'s diagnostic (and a value that is no store at all once, with
/// the store's own bound).
fn reserving(plan: &Plan) -> TokenStream {
    let marker = if plan.budget.is_some() { "Charged" } else { "Uncharged" };
    let span = plan.store.as_ref().map_or_else(Span::call_site, |store| store.span());
    let (at, marker) = (krate_at(plan, span), Ident::new(marker, span));
    quote_spanned!(span=> #at::__private::#marker)
}

/// The facade's path with every token at `span`. Inside `quote_spanned!` the path must
/// carry the span of the tokens around it: a path at the attribute's span makes rustc
/// report an unmet bound twice, once at the attribute.
pub(crate) fn krate_at(plan: &Plan, span: Span) -> TokenStream {
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
