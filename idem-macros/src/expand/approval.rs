//! `approval(...)`: the tool's approval policy, and the call's request when it asks.
//!
//! Input:
//!
//! ```text
//! #[idempotent(key = "payment:<supplier>:<invoice>", compare = [amount],
//!     approval(when = amount > 1000.0, text = "Pay <supplier> <amount> EUR"))]
//! ```
//!
//! Output, in the tool's static and after the call is gathered:
//!
//! ```text
//! approval: Some(&::idem::__private::ApprovalPolicy {
//!     ttl: ::idem::__private::DEFAULT_APPROVAL_TTL,
//!     summary: "Pay a supplier's invoice.",
//!     on_request: None,
//! }),
//! ...
//! let __idem_call = if ::idem::__private::approval_condition(amount > 1000.0) {
//!     __idem_call.asking(Some(::idem::__private::approval_text(&[&"Pay ", &supplier, &" ", &amount, &" EUR"])))
//! } else {
//!     __idem_call
//! };
//! ```
//!
//! `approval` alone (or `always`) asks with `if true`; `approval(over_budget)` alone asks
//! nothing here (the runtime asks when the budget has no room), and a tool whose budget asks
//! gets its text rendered for every call: `let __idem_call = __idem_call.describing(Some(..));`.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::Ident;
use syn::spanned::Spanned;

use crate::plan::{Asks, Plan, TextPiece};

/// The `approval` field of the tool's static.
pub(super) fn policy(plan: &Plan) -> TokenStream {
    let krate = &plan.krate;
    let Some(approval) = &plan.approval else { return quote!(::core::option::Option::None) };
    let ttl = match approval.ttl_ms {
        Some(ms) => quote!(::core::time::Duration::from_millis(#ms)),
        None => quote!(#krate::__private::DEFAULT_APPROVAL_TTL),
    };
    let summary = &approval.summary;
    let on_request = match &approval.notify {
        Some(hook) => {
            let krate = super::krate_at(plan, hook.span());
            quote_spanned!(hook.span()=> ::core::option::Option::Some(#hook as fn(&#krate::approval::Request)))
        }
        None => quote!(::core::option::Option::None),
    };
    quote! {
        ::core::option::Option::Some(&#krate::__private::ApprovalPolicy { ttl: #ttl, summary: #summary, on_request: #on_request })
    }
}

/// `call`, asking for approval when the call's condition holds.
pub(super) fn asking(plan: &Plan, call: &Ident) -> Option<TokenStream> {
    let approval = plan.approval.as_ref()?;
    let krate = &plan.krate;
    let condition = match &approval.asks {
        Asks::Always => Some(quote!(true)),
        Asks::When(condition) => {
            let krate = super::krate_at(plan, condition.span());
            Some(quote_spanned!(condition.span()=> #krate::__private::approval_condition(#condition)))
        }
        Asks::OverBudgetOnly => None,
    };
    let text = match &approval.text {
        None => quote!(::core::option::Option::None),
        Some((pieces, span)) => {
            let pieces = pieces.iter().map(|piece| match piece {
                TextPiece::Literal(text) => quote!(&#text),
                TextPiece::Value(path) => {
                    let (root, rest) = (&path[0], &path[1..]);
                    quote_spanned!(*span=> &#root #(.#rest)*)
                }
            });
            quote!(::core::option::Option::Some(#krate::__private::approval_text(&[#(#pieces),*])))
        }
    };
    let asking = Ident::new("asking", Span::call_site());
    // A tool that asks when over budget (`approval(over_budget)`) may ask on any call: its
    // text is rendered for each.
    let over_budget = plan.budget.as_ref().is_some_and(|budget| budget.over_budget_asks);
    let describing = (over_budget && approval.text.is_some()).then(|| {
        let describing = Ident::new("describing", Span::call_site());
        quote!(let #call = #call.#describing(#text);)
    });
    let ask = condition.map(|condition| quote!(let #call = if #condition { #call.#asking(#text) } else { #call };));
    Some(quote! {
        #describing
        #ask
    })
}
