//! `budget = PATH`: the `budget` field of the tool's static.
//!
//! Input: `#[idempotent(key = "refund:<order>", compare = [amount], budget = REFUNDS, over_budget = approval)]`
//!
//! Output:
//!
//! ```text
//! budget: Some(&::idem::__private::BudgetPolicy {
//!     budget: { const BUDGET: &::idem::Budget = ::idem::__private::budget_of(&REFUNDS, &["amount"]); BUDGET },
//!     over_budget_asks: true,
//! }),
//! ```
//!
//! The `const` checks, where the tool compiles, that a sum budget adds up a compared field.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::validate::Plan;

pub(super) fn policy(plan: &Plan) -> TokenStream {
    let Some(budget) = &plan.budget else { return quote!(::core::option::Option::None) };
    let krate = &plan.krate;
    let path = &budget.path;
    let at = super::krate_at(plan, path.span());
    let compare = &plan.compare_names;
    let asks = budget.over_budget_asks;
    let checked = quote_spanned!(path.span()=> {
        const BUDGET: &'static #at::Budget = #at::__private::budget_of(&#path, &[#(#compare),*]);
        BUDGET
    });
    quote! {
        ::core::option::Option::Some(&#krate::__private::BudgetPolicy { budget: #checked, over_budget_asks: #asks })
    }
}
