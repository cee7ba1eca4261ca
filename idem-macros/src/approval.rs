//! Validating `approval = ...`, `approval_text = "..."`, `approval_ttl = "..."` and
//! `on_approval_request = ...`: what the condition and the text may read (the parameters,
//! evaluated before the body runs), and that the other three come with `approval`.

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use syn::{Expr, Ident, ItemFn, LitStr};

use crate::args::{ApprovalArg, Args};
use crate::errors::Errors;
use crate::params::{self, Binding};

/// A validated `approval`.
pub(crate) struct ApprovalPlan {
    /// The condition; `None` for `approval = required`.
    pub condition: Option<Expr>,
    /// The request's text from `approval_text`, in pieces; `None` for the default text.
    pub text: Option<(Vec<TextPiece>, Span)>,
    pub ttl_ms: Option<u64>,
    pub on_request: Option<Expr>,
    /// The tool's summary: the first sentence of its doc comment.
    pub summary: String,
}

/// A piece of an `approval_text` template.
pub(crate) enum TextPiece {
    Literal(String),
    /// `<root.field>`: a parameter's value, written with `Display`.
    Value(Vec<Ident>),
}

/// Takes the approval arguments out of `args` and checks them.
pub(crate) fn validate(
    args: &mut Args,
    item: &ItemFn,
    bindings: &[Binding],
    errors: &mut Errors,
) -> Option<ApprovalPlan> {
    // `over_budget = approval` alone: the tool asks only when its budget has no room.
    let only_over_budget = args.over_budget.is_some() && args.budget.is_some();
    let approval =
        args.approval.take().or_else(|| only_over_budget.then(|| ApprovalArg::When(syn::parse_quote!(false))));
    let (text, ttl, hook) = (args.approval_text.take(), args.approval_ttl.take(), args.on_approval_request.take());
    let Some(approval) = approval else {
        let needs = "needs `approval = ...` (`required`, or a condition over the parameters such as `amount > 1000.0`) or `over_budget = approval`";
        if let Some(text) = &text {
            errors.at(text.span(), format!("`approval_text` {needs}"));
        }
        if let Some((_, span)) = ttl {
            errors.at(span, format!("`approval_ttl` {needs}"));
        }
        if let Some(hook) = &hook {
            errors.at(syn::spanned::Spanned::span(hook), format!("`on_approval_request` {needs}"));
        }
        return None;
    };
    let fn_name = &item.sig.ident;
    let condition = match approval {
        ApprovalArg::Required => None,
        ApprovalArg::When(condition) => {
            for (name, span) in not_parameters(quote::ToTokens::to_token_stream(&condition), bindings) {
                errors.at(
                    span,
                    format!(
                        "`approval` reads `{name}`, which is not a parameter of {fn_name}: the condition is evaluated \
                         before the body runs, from the call's parameters (available: {})",
                        params::names(bindings)
                    ),
                );
            }
            Some(condition)
        }
    };
    let text = text.and_then(|text| template(&text, fn_name, bindings, errors).map(|pieces| (pieces, text.span())));
    let summary =
        crate::docs::description(&item.attrs).map(|docs| first_sentence(&docs).to_owned()).unwrap_or_default();
    Some(ApprovalPlan { condition, text, ttl_ms: ttl.map(|(ms, _)| ms), on_request: hook, summary })
}

/// The first sentence of a doc comment: up to the first `. ` or the first paragraph's end.
fn first_sentence(docs: &str) -> &str {
    let paragraph = docs.split("\n\n").next().unwrap_or(docs).trim();
    match paragraph.find(". ") {
        Some(end) => &paragraph[..=end],
        None => paragraph,
    }
}

/// The pieces of an `approval_text` template: literal text and `<param>` or
/// `<param.field>` placeholders naming the parameters.
fn template(text: &LitStr, fn_name: &Ident, bindings: &[Binding], errors: &mut Errors) -> Option<Vec<TextPiece>> {
    let value = text.value();
    let mut pieces = Vec::new();
    let mut rest = value.as_str();
    let mut ok = true;
    while let Some(open) = rest.find('<') {
        if open > 0 {
            pieces.push(TextPiece::Literal(rest[..open].to_owned()));
        }
        let Some(close) = rest[open..].find('>') else {
            errors.at(text.span(), format!("unclosed placeholder in approval_text: `{}` has no `>`", &rest[open..]));
            return None;
        };
        let inside = rest[open + 1..open + close].trim();
        let path: Vec<&str> = inside.split('.').collect();
        let valid = !inside.is_empty() && path.iter().all(|segment| syn::parse_str::<Ident>(segment).is_ok());
        match (valid, bindings.iter().find(|binding| binding.ident == path[0])) {
            (true, Some(_)) => {
                pieces.push(TextPiece::Value(path.iter().map(|segment| Ident::new(segment, text.span())).collect()));
            }
            (true, None) => {
                errors.at(
                    text.span(),
                    format!(
                        "unknown placeholder <{inside}> in approval_text; {fn_name} has no parameter {} (available: {})",
                        path[0],
                        params::names(bindings)
                    ),
                );
                ok = false;
            }
            (false, _) => {
                errors.at(
                    text.span(),
                    format!("placeholder <{inside}> in approval_text must name a parameter or a field path, e.g. <amount> or <req.amount>"),
                );
                ok = false;
            }
        }
        rest = &rest[open + close + 1..];
    }
    if !rest.is_empty() {
        pieces.push(TextPiece::Literal(rest.to_owned()));
    }
    ok.then_some(pieces)
}

/// The names an expression reads that are not parameters: lowercase roots (a value, not a
/// type, constant or enum variant) that no binding of the function has, other than a
/// function it calls and `self`.
fn not_parameters(tokens: TokenStream, bindings: &[Binding]) -> Vec<(String, Span)> {
    let mut closure_parameters = Vec::new();
    collect_closure_parameters(tokens.clone(), &mut closure_parameters);
    let mut found: Vec<(String, Span)> = Vec::new();
    walk(tokens, (bindings, &closure_parameters), &mut found);
    found
}

/// The names between a closure's `|` bars, at any depth: `|x, y| ...` binds `x` and `y`,
/// whose uses in its body read the closure's own parameters.
fn collect_closure_parameters(tokens: TokenStream, names: &mut Vec<String>) {
    let mut inside = false;
    for token in tokens {
        match token {
            TokenTree::Punct(punct) if punct.as_char() == '|' => inside = !inside,
            TokenTree::Ident(ident) if inside => names.push(ident.to_string()),
            TokenTree::Group(group) => collect_closure_parameters(group.stream(), names),
            _ => {}
        }
    }
}

const KEYWORDS: &[&str] = &[
    "self", "true", "false", "as", "if", "else", "match", "let", "move", "async", "await", "return", "mut", "ref",
    "crate", "super", "in", "for", "while", "loop", "break", "continue", "unsafe", "where", "dyn", "impl",
];

fn walk(tokens: TokenStream, (bindings, closures): (&[Binding], &[String]), found: &mut Vec<(String, Span)>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, token) in tokens.iter().enumerate() {
        match token {
            TokenTree::Ident(ident) if crate::reads::is_root(&tokens, i) => {
                let name = ident.to_string();
                let called = tokens.get(i + 1).is_some_and(
                    |next| matches!(next, TokenTree::Group(group) if group.delimiter() == Delimiter::Parenthesis),
                );
                let value_like = name.starts_with(|c: char| c.is_lowercase() || c == '_');
                let known = bindings.iter().any(|binding| binding.ident == name)
                    || closures.contains(&name)
                    || KEYWORDS.contains(&name.as_str());
                if value_like && !called && !known && !found.iter().any(|(n, _)| *n == name) {
                    found.push((name, ident.span()));
                }
            }
            TokenTree::Group(group) => walk(group.stream(), (bindings, closures), found),
            _ => {}
        }
    }
}
