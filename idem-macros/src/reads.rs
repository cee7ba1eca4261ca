//! Which of the function's bindings an expression (`store = ...`, `scope = ...`) reads: the
//! roots of its paths, never the names after them; and which values an approval condition
//! reads that are no parameters. `principal.tenant` reads `principal`
//! only, even when a `Parameters(Req { tenant, .. })` pattern also binds a `tenant`.
//!
//! Read from the tokens rather than the syntax tree, so that every expression form
//! (closures, blocks, macros) is covered by one rule. An identifier is a read unless the
//! tokens around it say it is a name inside something else: a field or method after a
//! single `.`, a path segment before or after `::`, a field name or type ascription
//! before a single `:`, a macro's name before `!`. Inside a macro's arguments a string's
//! inline format arguments (`"{tenant}"`) are reads too. The rule errs towards a read
//! (a closure's parameter that shadows a binding counts), which for `scope` means
//! refusing rather than letting model input through.

use proc_macro2::{Delimiter, Spacing, Span, TokenStream, TokenTree};

use crate::params::Binding;

/// Each binding `tokens` read, once, in order of first read, with the span of that read.
pub(crate) fn reads(tokens: TokenStream, bindings: &[Binding]) -> Vec<(&Binding, Span)> {
    let mut found = Vec::new();
    walk(tokens, false, bindings, &mut found);
    found
}

/// The signature indices of the arguments that bind what `tokens` read, in order of first
/// read, each once.
pub(crate) fn inputs(tokens: TokenStream, bindings: &[Binding]) -> Vec<usize> {
    let mut args: Vec<usize> = Vec::new();
    for (binding, _) in reads(tokens, bindings) {
        if !args.contains(&binding.arg) {
            args.push(binding.arg);
        }
    }
    args
}

fn walk<'b>(tokens: TokenStream, in_macro: bool, bindings: &'b [Binding], found: &mut Vec<(&'b Binding, Span)>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, token) in tokens.iter().enumerate() {
        match token {
            TokenTree::Ident(ident) if is_root(&tokens, i) => note(&ident.to_string(), ident.span(), bindings, found),
            TokenTree::Group(group) => {
                let macro_args = i > 0 && is_punct(&tokens[i - 1], '!') && group.delimiter() != Delimiter::None;
                walk(group.stream(), in_macro || macro_args, bindings, found);
            }
            TokenTree::Literal(literal) if in_macro => {
                for name in inline_format_args(&literal.to_string()) {
                    note(name, literal.span(), bindings, found);
                }
            }
            _ => {}
        }
    }
}

fn note<'b>(name: &str, span: Span, bindings: &'b [Binding], found: &mut Vec<(&'b Binding, Span)>) {
    if let Some(binding) = bindings.iter().find(|b| b.ident == name)
        && !found.iter().any(|(seen, _)| std::ptr::eq(*seen, binding))
    {
        found.push((binding, span));
    }
}

/// Whether the identifier at `i` names a value in scope rather than something inside
/// another item (see the module docs).
fn is_root(tokens: &[TokenTree], i: usize) -> bool {
    let before = |n: usize| i.checked_sub(n).map(|at| &tokens[at]);
    let after = |n: usize| tokens.get(i + n);
    // `a.tenant` (a field or method), but not `..tenant` (a range).
    let after_single_dot = before(1).is_some_and(|t| is_punct(t, '.')) && !before(2).is_some_and(|t| is_punct(t, '.'));
    // `Type::tenant`.
    let after_path_sep = before(1).is_some_and(|t| is_punct(t, ':')) && before(2).is_some_and(|t| is_joint(t, ':'));
    // `tenant::Type`, or `tenant: value` / `tenant: Type` (a field name, an ascription).
    let before_colon = after(1).is_some_and(|t| is_punct(t, ':'));
    // `tenant!(...)`.
    let before_bang = after(1).is_some_and(|t| is_punct(t, '!'));
    !(after_single_dot || after_path_sep || before_colon || before_bang)
}

fn is_punct(token: &TokenTree, ch: char) -> bool {
    matches!(token, TokenTree::Punct(p) if p.as_char() == ch)
}

fn is_joint(token: &TokenTree, ch: char) -> bool {
    matches!(token, TokenTree::Punct(p) if p.as_char() == ch && p.spacing() == Spacing::Joint)
}

/// The names a format string reads inline: `tenant` and `id` in `"{tenant}/{id:>4}"`,
/// nothing in `"{{tenant}}"`, `"{0}"` or `"{}"`. Raw strings too.
fn inline_format_args(literal: &str) -> Vec<&str> {
    let Some(body) = literal.find('"').map(|start| &literal[start + 1..]) else { return Vec::new() };
    let mut names = Vec::new();
    let mut rest = body;
    while let Some(open) = rest.find('{') {
        rest = &rest[open + 1..];
        if let Some(escaped) = rest.strip_prefix('{') {
            rest = escaped;
            continue;
        }
        let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
        let name = &rest[..end];
        if name.starts_with(|c: char| c.is_alphabetic() || c == '_') {
            names.push(name);
        }
        rest = &rest[end..];
    }
    names
}

/// The names an expression reads that are not parameters: lowercase roots (a value, not a
/// type, constant or enum variant) that no binding of the function has, other than a
/// function it calls and `self`.
pub(crate) fn not_parameters(tokens: TokenStream, bindings: &[Binding]) -> Vec<(String, Span)> {
    let mut closure_parameters = Vec::new();
    collect_closure_parameters(tokens.clone(), &mut closure_parameters);
    let mut found: Vec<(String, Span)> = Vec::new();
    walk_values(tokens, (bindings, &closure_parameters), &mut found);
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

fn walk_values(tokens: TokenStream, (bindings, closures): (&[Binding], &[String]), found: &mut Vec<(String, Span)>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, token) in tokens.iter().enumerate() {
        match token {
            TokenTree::Ident(ident) if is_root(&tokens, i) => {
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
            TokenTree::Group(group) => walk_values(group.stream(), (bindings, closures), found),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(expr: &str) -> Vec<String> {
        let sig: syn::Signature = syn::parse_str(
            "fn f(&self, Extension(principal): Extension<Principal>, \
             Parameters(Req { tenant, for_tenant, .. }): Parameters<Req>, store: Store, id: u64)",
        )
        .unwrap();
        let bindings = crate::params::bindings(&sig);
        let tokens: TokenStream = expr.parse().unwrap();
        reads(tokens, &bindings).iter().map(|(binding, _)| binding.ident.to_string()).collect()
    }

    #[test]
    fn a_field_or_method_is_not_a_read_of_a_binding_of_that_name() {
        assert_eq!(read("principal.tenant"), ["principal"]);
        assert_eq!(read("&principal.tenant.clone()"), ["principal"]);
        assert_eq!(read("(principal).tenant"), ["principal"]);
        assert_eq!(read("self.tenant(id)"), ["id"]);
        assert_eq!(read("self.store"), Vec::<String>::new());
        assert_eq!(read("*self.store"), Vec::<String>::new());
    }

    #[test]
    fn the_root_is_read_wherever_it_appears() {
        assert_eq!(read("for_tenant"), ["for_tenant"]);
        assert_eq!(read("tenant"), ["tenant"]);
        assert_eq!(read("lookup(&for_tenant, principal.tenant)"), ["for_tenant", "principal"]);
        assert_eq!(read("if id > 0 { tenant.clone() } else { String::new() }"), ["id", "tenant"]);
        assert_eq!(read("0..id"), ["id"]);
        assert_eq!(read("|x: u64| x + id"), ["id"]);
        assert_eq!(read("store.pick(tenant).store"), ["store", "tenant"]);
    }

    #[test]
    fn path_segments_field_names_and_macro_names_are_not_reads() {
        assert_eq!(read("Tenant::tenant(principal)"), ["principal"]);
        assert_eq!(read("tenant::current()"), Vec::<String>::new());
        assert_eq!(read("Scope { tenant: principal.id, for_tenant }"), ["principal", "for_tenant"]);
        assert_eq!(read("id as u64"), ["id"]);
        assert_eq!(read("tenant!(principal)"), ["principal"]);
    }

    #[test]
    fn a_macros_format_string_reads_its_inline_arguments() {
        assert_eq!(read(r#"format!("{for_tenant}/{}", principal.tenant)"#), ["for_tenant", "principal"]);
        assert_eq!(read(r#"format!("{{tenant}} {0} {:?}", principal)"#), ["principal"]);
        assert_eq!(read(r##"format!(r#"{tenant:>4}"#)"##), ["tenant"]);
        assert_eq!(read(r#"String::from("{tenant}")"#), Vec::<String>::new(), "not a macro's string");
    }

    #[test]
    fn inline_format_arguments() {
        assert_eq!(inline_format_args(r#""{a}-{b:?}-{{c}}-{0}-{}""#), ["a", "b"]);
        assert_eq!(inline_format_args(r#""plain""#), Vec::<&str>::new());
    }
}
