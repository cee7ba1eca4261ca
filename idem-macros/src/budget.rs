//! Validating `budget = PATH` and `over_budget = approval`.

use syn::Ident;

use crate::args::Args;
use crate::errors::Errors;

/// A validated `budget`.
pub(crate) struct BudgetPlan {
    /// The `static` budget, as written.
    pub path: syn::Path,
    /// `over_budget = approval`.
    pub over_budget_asks: bool,
}

/// Takes the budget arguments out of `args`: `over_budget` needs a `budget`.
pub(crate) fn validate(args: &mut Args, errors: &mut Errors) -> Option<BudgetPlan> {
    let over_budget: Option<Ident> = args.over_budget.take();
    let Some(path) = args.budget.take() else {
        if let Some(over_budget) = over_budget {
            errors.at(
                over_budget.span(),
                "`over_budget` needs `budget = ...`: it says what a call does when the budget has no room",
            );
        }
        return None;
    };
    Some(BudgetPlan { path, over_budget_asks: over_budget.is_some() })
}
