//! The paragraph `#[idempotent]` adds to a tool's description, after the user's own text:
//! what a repeat gets, which differences are refused, which status tool to call after a
//! timeout, and, where they apply, the approval rule and the budget. Every fact in it comes
//! from the plan, so a change to the key or `compare` changes the text.
//!
//! rmcp and plain functions join the [`Part`]s at run time (`idem_runtime::describe`, with
//! [`tokens`]); rig's `#[rig_tool]` and ADK-Rust's `#[tool]` take a literal, so [`literal`]
//! joins them here, each field by its Rust name or the name `json_names` gives, the budget
//! by its `static`.

use proc_macro2::TokenStream;
use quote::quote;

use crate::describe::{Given, Part};
use crate::json_names;
use crate::plan::{Asks, Plan};

/// The paragraph of `plan`'s tool `tool`: generated, the user's, or none.
pub(crate) fn parts(plan: &Plan, tool: &str) -> Vec<Part> {
    match &plan.describe {
        Given::Off => Vec::new(),
        Given::Text(parts) => parts.clone(),
        Given::Generated => generated(plan, tool),
    }
}

/// One to three sentences, and one for each of approval and budget where they apply.
fn generated(plan: &Plan, tool: &str) -> Vec<Part> {
    let mut out = Paragraph::default();
    let key: Vec<Part> = plan.key_fields.iter().map(|field| model_field(plan, &field.model_name)).collect();
    let status = format!("{tool}_status");
    // A key always has a placeholder (`valid.rs`).
    out.text("Safe to retry: a repeat for the same ");
    out.list(&key);
    out.text(" never runs it twice; it gets the first call's result, or IN_PROGRESS while that call runs.");
    if !plan.compare_names.is_empty() {
        let compared: Vec<Part> = plan.compare_names.iter().map(|name| model_field(plan, name)).collect();
        out.text(" A repeat with a different ");
        out.list_or(&compared);
        out.text(" is refused with CONFLICT: ask the user.");
    }
    out.text(&format!(" After a TIMEOUT or IN_PROGRESS, call {status} with the same "));
    out.list(&key);
    out.text(" instead of calling again.");
    let asks = match plan.approval.as_ref().map(|approval| &approval.asks) {
        Some(Asks::Always) => Some("A person must approve each new action first".to_owned()),
        Some(Asks::When(_)) => {
            let condition = plan.approval_condition.as_deref().unwrap_or_default();
            Some(format!("It needs a person's approval when {condition}"))
        }
        // `approval(over_budget)` alone: the budget's sentence says it.
        Some(Asks::OverBudgetOnly) | None => None,
    };
    if let Some(asks) = asks {
        out.text(&format!(" {asks}: it then answers APPROVAL_REQUIRED, and {status} shows the decision."));
    }
    if let Some(budget) = &plan.budget {
        out.text(" It is limited by ");
        out.parts.push(Part::Budget);
        out.text(match budget.over_budget_asks {
            true => ": a call without room needs a person's approval (APPROVAL_REQUIRED).",
            false => ": a call without room answers BUDGET_EXCEEDED.",
        });
    }
    out.parts
}

/// A key or compared field, by the name the tool records it under: a field of the
/// arguments the model sends is resolved to its JSON name.
fn model_field(plan: &Plan, name: &str) -> Part {
    match plan.json_names.paths.iter().any(|path| path == name) {
        true => Part::Field(name.to_owned()),
        false => Part::Text(name.to_owned()),
    }
}

#[derive(Default)]
struct Paragraph {
    parts: Vec<Part>,
}

impl Paragraph {
    fn text(&mut self, text: &str) {
        match self.parts.last_mut() {
            Some(Part::Text(last)) => last.push_str(text),
            _ => self.parts.push(Part::Text(text.to_owned())),
        }
    }

    /// "customer", "customer and period", "customer, period and plan".
    fn list(&mut self, items: &[Part]) {
        self.joined(items, " and ");
    }

    /// "amount", "amount or currency", "amount, currency or memo".
    fn list_or(&mut self, items: &[Part]) {
        self.joined(items, " or ");
    }

    fn joined(&mut self, items: &[Part], last: &str) {
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                self.text(if i + 1 == items.len() { last } else { ", " });
            }
            match item {
                Part::Text(text) => self.text(text),
                other => self.parts.push(other.clone()),
            }
        }
    }
}

/// A key or compared field's name as text fixed at compile time: [`literal`]'s name for it.
pub(crate) fn compile_time_name(plan: &Plan, name: &str) -> String {
    literal(plan, &[model_field(plan, name)])
}

/// The paragraph as one literal, for the frameworks that take one (rig, ADK-Rust): each
/// field by the name `json_names` gives it or its Rust name, the budget by its `static`.
pub(crate) fn literal(plan: &Plan, parts: &[Part]) -> String {
    let mut out = String::new();
    for part in parts {
        match part {
            Part::Text(text) => out.push_str(text),
            Part::Field(path) => out.push_str(&json_names::given_path(&plan.json_names, path)),
            Part::Budget => {
                let name = plan.budget.as_ref().and_then(|budget| budget.path.segments.last());
                let name = name.map(|segment| segment.ident.to_string()).unwrap_or_default();
                out.push_str(&format!("the budget {name}"));
            }
        }
    }
    out
}

/// The parts as the runtime takes them: `&[Part::Text("..."), Part::Field("customer"), ...]`.
pub(crate) fn tokens(plan: &Plan, parts: &[Part]) -> TokenStream {
    let krate = &plan.krate;
    let parts = parts.iter().map(|part| match part {
        Part::Text(text) => quote!(#krate::__private::Part::Text(#text)),
        Part::Field(path) => quote!(#krate::__private::Part::Field(#path)),
        Part::Budget => quote!(#krate::__private::Part::Budget),
    });
    quote!(&[#(#parts),*])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::Errors;

    /// The paragraph of `send_invoice` under `#[idempotent(attr)]`, as rig and ADK get it.
    fn text(attr: TokenStream) -> String {
        let item: syn::ItemFn = syn::parse_quote!(
            fn send_invoice(customer: String, period: String, amount: f64, memo: String) -> Result<(), E> {
                Ok(())
            }
        );
        let mut errors = Errors::default();
        let plan = crate::plan(attr, &item, &mut errors).unwrap_or_else(|| panic!("{:?}", errors.into_error()));
        literal(&plan, &parts(&plan, "send_invoice"))
    }

    #[test]
    fn every_fact_in_the_paragraph_comes_from_the_attribute() {
        assert_eq!(
            text(quote!(key = "invoice:<customer>:<period>", compare = [amount])),
            "Safe to retry: a repeat for the same customer and period never runs it twice; it gets the first \
             call's result, or IN_PROGRESS while that call runs. A repeat with a different amount is refused with \
             CONFLICT: ask the user. After a TIMEOUT or IN_PROGRESS, call send_invoice_status with the same \
             customer and period instead of calling again."
        );
        let other_key = text(quote!(key = "invoice:<customer>", compare = [amount, memo]));
        assert!(other_key.contains("for the same customer never runs"), "{other_key}");
        assert!(other_key.contains("a different amount or memo is refused"), "{other_key}");
        assert!(other_key.contains("send_invoice_status with the same customer instead"), "{other_key}");
        let nothing_compared = text(quote!(key = "invoice:<customer>:<period>:<memo>"));
        assert!(!nothing_compared.contains("CONFLICT"), "{nothing_compared}");
        assert!(nothing_compared.contains("customer, period and memo"), "{nothing_compared}");
        let always = text(quote!(key = "invoice:<customer>", approval));
        assert!(
            always.ends_with(
                "A person must approve each new action first: it then answers \
            APPROVAL_REQUIRED, and send_invoice_status shows the decision."
            ),
            "{always}"
        );
        let budgeted = text(quote!(key = "invoice:<customer>", budget = INVOICES));
        assert!(
            budgeted.ends_with("It is limited by the budget INVOICES: a call without room answers BUDGET_EXCEEDED.")
        );
    }

    #[test]
    fn describe_replaces_the_paragraph_or_leaves_it_out() {
        let given = text(quote!(key = "invoice:<customer>", describe = "Once per <customer> and <period>."));
        assert_eq!(given, "Once per customer and period.");
        assert_eq!(text(quote!(key = "invoice:<customer>", describe = off)), "");
    }
}
