//! The tool's description as each framework shows it to the model, with idem's paragraph
//! (`paragraph.rs`) after the user's own text, and `<tool>_description()`, which returns it.
//!
//! Input: the tool of [`expand`](super::expand). Output, for an rmcp tool (its `#[tool]`
//! re-emitted by `frameworks.rs` with this description):
//!
//! ```text
//! #[tool(description = ::idem::__private::describe(
//!     &*("Create and send the invoice."),
//!     &[Part::Text("Safe to retry: a repeat for the same "), Part::Field("customer"), ...],
//!     Some(::idem::__private::rmcp_arguments_schema::<Parameters<SendInvoice>>),
//!     &[], None,
//! ), ...)]
//! async fn send_invoice(..) { .. }
//!
//! /// The description `send_invoice` is shown to the model with ...
//! fn send_invoice_description() -> String { /* the same expression */ }
//! ```
//!
//! rig's `#[rig_tool(description = "...")]` and ADK-Rust's doc comment take a literal: the
//! paragraph is joined at compile time (`paragraph::literal`), and `<tool>_description()`
//! returns that literal with the user's text.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, ItemFn};

use super::paragraph;
use crate::describe::Part;
use crate::frameworks::{Descriptions, Framework, rig_own_description, rmcp_own_description};
use crate::plan::Plan;

/// The tool's paragraph and how its framework takes it.
pub(crate) struct Described {
    parts: Vec<Part>,
    /// The function's doc comment as paragraphs, the user's text when the framework's
    /// attribute gives none.
    docs: Option<String>,
    /// The values of the doc comment's `#[doc = ...]`s when one is not a literal
    /// (`#[doc = include_str!("send.md")]`): `docs` is `None` then.
    included: Vec<Expr>,
    framework: Framework,
    /// Where the field names are found at run time: the arguments' schema.
    schema: Option<TokenStream>,
}

impl Described {
    pub(crate) fn new(plan: &Plan, item: &ItemFn, schema: Option<TokenStream>) -> Self {
        let parts = paragraph::parts(plan, &item.sig.ident.to_string());
        let docs = crate::docs::description(&item.attrs);
        let included = match docs {
            Some(_) => Vec::new(),
            None => crate::docs::doc_values(&item.attrs),
        };
        Described { parts, docs, included, framework: plan.framework, schema }
    }

    /// The expression of the description joined at run time, after `own` (a `&str`).
    fn at_run_time(&self, plan: &Plan, own: &TokenStream) -> TokenStream {
        let krate = &plan.krate;
        let parts = paragraph::tokens(plan, &self.parts);
        let schema = match &self.schema {
            Some(schema) => quote!(::core::option::Option::Some(#schema)),
            None => quote!(::core::option::Option::None),
        };
        let given = plan.json_names.given_tokens();
        let budget = match &plan.budget {
            Some(budget) => {
                // As the tool's static names it: a path that is not a budget is reported
                // once, there (rustc folds the same error at the same token).
                let path = &budget.path;
                let at = super::krate_at(plan, path.span());
                let budget =
                    quote_spanned!(path.span()=> { let budget: &'static #at::budget::Budget = &#path; budget });
                quote!(::core::option::Option::Some(#budget))
            }
            None => quote!(::core::option::Option::None),
        };
        quote!(#krate::__private::describe(&*(#own), #parts, #schema, #given, #budget))
    }

    /// The description an rmcp `#[tool]` gets: its own `description = ...` or the doc
    /// comment, then the paragraph. `None` keeps the attribute's own (`describe = off`).
    fn rmcp(&self, plan: &Plan, own: Option<&Expr>) -> Option<TokenStream> {
        if self.parts.is_empty() {
            return match own {
                Some(_) => None,
                None => self.docs.as_ref().map(|docs| quote!(#docs)),
            };
        }
        let own = match own {
            Some(own) => quote!(#own),
            None => self.doc_text(),
        };
        Some(self.at_run_time(plan, &own))
    }

    /// The doc comment as a `&str` expression: its paragraphs, or the values of its
    /// `#[doc = ...]`s one per line (as rmcp joins them) when one is not a literal.
    fn doc_text(&self) -> TokenStream {
        match &self.docs {
            Some(docs) => quote!(#docs),
            None if !self.included.is_empty() => {
                let included = &self.included;
                quote!([#(#included),*].join("\n"))
            }
            None => quote!(""),
        }
    }

    /// The description rig's `#[rig_tool]` gets, a literal: its own `description = "..."` or
    /// the doc comment, then the paragraph. `None` keeps the attribute's own.
    fn rig(&self, plan: &Plan, own: Option<&Expr>) -> Option<String> {
        // rig takes a literal, which an included doc comment is not: left to rig.
        if self.parts.is_empty() || own.is_none() && !self.included.is_empty() {
            return if own.is_some() { None } else { self.docs.clone() };
        }
        let own = match own {
            Some(Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(own), .. })) => Some(own.value()),
            Some(_) => return None, // rig reports a description that is not a literal
            None => self.docs.clone(),
        };
        Some(joined(own.as_deref().unwrap_or_default(), &paragraph::literal(plan, &self.parts)))
    }

    /// What the framework's attribute gets (`frameworks::tool_attrs`).
    pub(crate) fn descriptions(&self, plan: &Plan, item: &ItemFn) -> Descriptions {
        let (rmcp, rig) = match self.framework {
            Framework::Rmcp => (self.rmcp(plan, rmcp_own_description(item).as_ref()), None),
            Framework::Rig => (None, self.rig(plan, rig_own_description(item).as_ref())),
            _ => (None, None),
        };
        Descriptions { rmcp, rig, adk_line: self.adk_line(plan).filter(|_| self.framework == Framework::Adk) }
    }

    /// The doc line ADK-Rust's `#[tool]` adds to the description (it joins doc lines with a
    /// space), or none.
    fn adk_line(&self, plan: &Plan) -> Option<String> {
        (!self.parts.is_empty()).then(|| paragraph::literal(plan, &self.parts))
    }
}

/// `own`, a blank line, `paragraph`; either alone when the other is empty.
fn joined(own: &str, paragraph: &str) -> String {
    match (own.trim().is_empty(), paragraph.is_empty()) {
        (_, true) => own.to_owned(),
        (true, false) => paragraph.to_owned(),
        (false, false) => format!("{}\n\n{paragraph}", own.trim_end()),
    }
}

/// `<tool>_description()`: the description the framework shows the model, for a schema of
/// your own (or a test).
pub(super) fn description_fn(plan: &Plan, item: &ItemFn, described: &Described) -> TokenStream {
    let sig = &item.sig;
    let name = format_ident!("{}_description", sig.ident);
    let tool = sig.ident.to_string();
    let body = match described.framework {
        Framework::Rmcp => {
            // Without a paragraph (`describe = off`) rmcp shows its own description, or the
            // doc comment, or none.
            let own = rmcp_own_description(item);
            let description = match (described.rmcp(plan, own.as_ref()), own) {
                (Some(description), _) => description,
                (None, Some(own)) => quote!(#own),
                (None, None) => described.doc_text(),
            };
            quote!(::std::string::String::from(#description))
        }
        Framework::Rig => {
            let own = rig_own_description(item);
            let kept = match &own {
                Some(Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(own), .. })) => Some(own.value()),
                _ => None,
            };
            let text = described.rig(plan, own.as_ref()).or(kept).unwrap_or_default();
            quote!(::std::string::String::from(#text))
        }
        Framework::Adk => {
            let text = adk_description(item, described.adk_line(plan));
            quote!(::std::string::String::from(#text))
        }
        Framework::None => described.at_run_time(plan, &described.doc_text()),
    };
    let doc = format!(
        " The description `{tool}` is shown to the model with: its own text, then the paragraph \
         `#[idempotent]` adds (what a repeat gets, which status tool to call). For a tool schema of your own."
    );
    let vis = &item.vis;
    quote! {
        #[doc = #doc]
        #vis fn #name() -> ::std::string::String {
            #body
        }
    }
}

/// What ADK-Rust's `#[tool]` makes of the doc comment with `line` added: each doc line
/// trimmed, joined with a space; the function's name with spaces when there is none.
fn adk_description(item: &ItemFn, line: Option<String>) -> String {
    let mut lines = crate::docs::doc_lines(&item.attrs);
    lines.extend(line);
    let lines: Vec<String> = lines.iter().map(|line| line.trim().to_owned()).collect();
    match lines.is_empty() {
        true => item.sig.ident.to_string().replace('_', " "),
        false => lines.join(" "),
    }
}
