//! `budget = PATH`: the `budget` field of the tool's static.
//!
//! Input: `#[idempotent(key = "refund:<order>", compare = [amount], budget = REFUNDS, approval(over_budget))]`
//!
//! Output: the `budget` field of the tool's static,
//!
//! ```text
//! budget: Some(&::idem::__private::BudgetPolicy { budget: &REFUNDS, over_budget_asks: true }),
//! ```
//!
//! and, in the tool's body only (the static is repeated in the status functions), a
//! `const` that checks, where the user wrote the path, that a sum budget adds up a
//! compared field:
//!
//! ```text
//! const _: &::idem::budget::Budget = ::idem::__private::budget_of(&REFUNDS, &["amount"]);
//! ```

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::plan::Plan;

pub(super) fn policy(plan: &Plan) -> TokenStream {
    let Some(budget) = &plan.budget else { return quote!(::core::option::Option::None) };
    let krate = &plan.krate;
    let path = &budget.path;
    let at = super::krate_at(plan, path.span());
    let asks = budget.over_budget_asks;
    let budget = quote_spanned!(path.span()=> { let budget: &'static #at::budget::Budget = &#path; budget });
    quote! {
        ::core::option::Option::Some(&#krate::__private::BudgetPolicy { budget: #budget, over_budget_asks: #asks })
    }
}

/// The compile-time check of a sum budget's field, once per tool.
pub(super) fn check(plan: &Plan) -> Option<TokenStream> {
    let budget = plan.budget.as_ref()?;
    let path = &budget.path;
    let at = super::krate_at(plan, path.span());
    let compare = &plan.compare_names;
    Some(quote_spanned!(path.span()=>
        const _: &#at::budget::Budget = #at::__private::budget_of(&#path, &[#(#compare),*]);
    ))
}
