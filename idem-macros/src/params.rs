//! The names a key template can use: the function's parameters and the names bound by
//! their patterns (`Parameters(Req { customer, .. }): Parameters<Req>`), and what the model
//! calls each of them.

use quote::ToTokens;
use syn::{FnArg, Ident, ItemFn, Member, Pat, Signature, Type};

use crate::attr::FieldPath;
use crate::frameworks::Framework;

/// One name in scope in the function body.
pub(crate) struct Binding {
    pub ident: Ident,
    /// The declared type, known when the parameter is a plain `name: Type`.
    pub ty: Option<Type>,
    /// Which of `sig.inputs` binds it.
    pub arg: usize,
    /// Inside an rmcp `Parameters(..): Parameters<T>` argument, the struct fields from `T`
    /// to the binding: `[]` for `Parameters(req)`, `["period"]` for `p` in
    /// `Parameters(T { period: p, .. })`. `None` elsewhere (and below tuple patterns).
    pub params_path: Option<Vec<String>>,
}

/// The receiver's own `self` token, for generated code that uses the receiver. `self` is
/// hygienic: one made by the macro names no receiver that came from another macro's context
/// (a `macro_rules!` that writes the impl block, say, while its methods come from its caller).
pub(crate) fn receiver_self(sig: &Signature) -> Option<proc_macro2::TokenStream> {
    sig.receiver().map(|receiver| receiver.self_token.to_token_stream())
}

/// Every name the parameters bind, in order (tools: [`bindings_of`]).
#[cfg(test)]
pub(crate) fn bindings(sig: &Signature) -> Vec<Binding> {
    bindings_with(sig, None)
}

/// [`bindings`] of a tool: an ADK-Rust tool's argument struct (the parameter that is not its
/// `ToolContext`) is what the model sends, as rmcp's `Parameters<T>` is, so its bindings get
/// the JSON path of what they bind (`[]` for `args`, `["period"]` for `p` in
/// `InvoiceArgs { period: p, .. }`).
pub(crate) fn bindings_of(item: &ItemFn, framework: Framework) -> Vec<Binding> {
    let adk = framework == Framework::Adk;
    bindings_with(&item.sig, adk.then(|| adk_args(&item.sig)).flatten())
}

/// The argument struct of an ADK-Rust tool, as ADK's `#[tool]` finds it: the first typed
/// parameter whose type does not name `ToolContext`.
pub(crate) fn adk_args(sig: &Signature) -> Option<usize> {
    sig.inputs.iter().position(|input| match input {
        FnArg::Typed(typed) => !typed.ty.to_token_stream().to_string().contains("ToolContext"),
        FnArg::Receiver(_) => false,
    })
}

fn bindings_with(sig: &Signature, model_args: Option<usize>) -> Vec<Binding> {
    let mut out = Vec::new();
    for (arg, input) in sig.inputs.iter().enumerate() {
        if let FnArg::Typed(typed) = input {
            let ty = matches!(&*typed.pat, Pat::Ident(p) if p.subpat.is_none()).then(|| (*typed.ty).clone());
            if model_args == Some(arg) {
                walk(&typed.pat, ty, arg, Some(Vec::new()), &mut out);
                continue;
            }
            match (&*typed.pat, is_parameters(&typed.ty)) {
                (Pat::TupleStruct(p), true)
                    if p.elems.len() == 1 && p.path.segments.last().is_some_and(|s| s.ident == "Parameters") =>
                {
                    walk(&p.elems[0], None, arg, Some(Vec::new()), &mut out);
                }
                (pat, _) => walk(pat, ty, arg, None, &mut out),
            }
        }
    }
    out
}

/// rmcp's `Parameters<T>`, spelled with any path prefix.
pub(crate) fn is_parameters(ty: &Type) -> bool {
    matches!(ty, Type::Path(path) if path.qself.is_none() && path.path.segments.last().is_some_and(|s| {
        s.ident == "Parameters" && matches!(&s.arguments, syn::PathArguments::AngleBracketed(args) if args.args.len() == 1)
    }))
}

fn walk(pat: &Pat, ty: Option<Type>, arg: usize, path: Option<Vec<String>>, out: &mut Vec<Binding>) {
    match pat {
        Pat::Ident(p) => {
            out.push(Binding { ident: p.ident.clone(), ty, arg, params_path: path.clone() });
            if let Some((_, sub)) = &p.subpat {
                walk(sub, None, arg, path, out);
            }
        }
        Pat::Struct(p) => p.fields.iter().for_each(|f| {
            let field = match &f.member {
                Member::Named(name) => path.clone().map(|mut path| {
                    path.push(name.to_string());
                    path
                }),
                Member::Unnamed(_) => None,
            };
            walk(&f.pat, None, arg, field, out);
        }),
        Pat::TupleStruct(p) => p.elems.iter().for_each(|e| walk(e, None, arg, None, out)),
        Pat::Tuple(p) => p.elems.iter().for_each(|e| walk(e, None, arg, None, out)),
        Pat::Slice(p) => p.elems.iter().for_each(|e| walk(e, None, arg, None, out)),
        Pat::Reference(p) => walk(&p.pat, None, arg, None, out),
        Pat::Paren(p) => walk(&p.pat, None, arg, path, out),
        Pat::Type(p) => walk(&p.pat, None, arg, path, out),
        _ => {}
    }
}

/// What the model calls the value at `path` (a binding and fields below it): `amount` for
/// `req.amount` where `Parameters(req)` binds the arguments, `period` for `p` bound by
/// `Parameters(Req { period: p, .. })`; the Rust path where the model sends that path itself
/// (a plain parameter `req`) or where nothing is known.
pub(crate) fn model_name(bindings: &[Binding], path: &[String]) -> String {
    let fields = bindings.iter().find(|b| b.ident == path[0]).and_then(|b| b.params_path.as_ref());
    match fields {
        Some(fields) if !(fields.is_empty() && path.len() == 1) => {
            fields.iter().chain(&path[1..]).cloned().collect::<Vec<_>>().join(".")
        }
        _ => path.join("."),
    }
}

/// The compared fields with the names the model knows them by, sorted by those names (the
/// order the runtime writes them in). Two fields the model would know by one name keep
/// their Rust names: a record must never mix them up.
pub(crate) fn model_named(compare: Vec<FieldPath>, bindings: &[Binding]) -> (Vec<FieldPath>, Vec<String>) {
    let mut named: Vec<(String, FieldPath)> =
        compare.into_iter().map(|field| (model_name(bindings, &field.path()), field)).collect();
    let mut names: Vec<&String> = named.iter().map(|(name, _)| name).collect();
    names.sort();
    if names.windows(2).any(|pair| pair[0] == pair[1]) {
        named.iter_mut().for_each(|(name, field)| *name = field.text());
    }
    named.sort_by(|a, b| a.0.cmp(&b.0));
    named.into_iter().map(|(name, field)| (field, name)).unzip()
}

/// Whether `path` (a binding and fields below it) is a field of the arguments the model
/// sends: below an rmcp `Parameters<T>` or an ADK-Rust argument struct, and not them whole.
pub(crate) fn in_arguments(bindings: &[Binding], path: &[String]) -> bool {
    match bindings.iter().find(|b| b.ident == path[0]).and_then(|b| b.params_path.as_ref()) {
        Some(fields) => !(fields.is_empty() && path.len() == 1),
        None => false,
    }
}

/// The names, for "available: ..." lists.
pub(crate) fn names(bindings: &[Binding]) -> String {
    if bindings.is_empty() {
        return "none: the function has no named parameters".to_owned();
    }
    bindings.iter().map(|b| b.ident.to_string()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names_of(sig: &str) -> Vec<String> {
        let sig: Signature = syn::parse_str(sig).unwrap();
        bindings(&sig).iter().map(|b| b.ident.to_string()).collect()
    }

    #[test]
    fn plain_parameters_and_pattern_bindings() {
        assert_eq!(names_of("fn f(&self, customer: String, mut period: String)"), ["customer", "period"]);
        assert_eq!(
            names_of("fn f(Parameters(Req { customer, period: p, .. }): Parameters<Req>, (a, _): (u8, u8))"),
            ["customer", "p", "a"]
        );
        assert_eq!(names_of("fn f(whole @ Req { id, .. }: Req)"), ["whole", "id"]);
    }

    #[test]
    fn model_names_are_the_arguments_the_model_sends() {
        let sig: Signature = syn::parse_str(
            "fn f(&self, Parameters(req): Parameters<Req>, Parameters(Other { period: p, customer, .. }): Parameters<Other>, amount: f64, (a, _): (u8, u8))",
        )
        .unwrap();
        let found = bindings(&sig);
        let name = |path: &[&str]| model_name(&found, &path.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(name(&["req", "amount"]), "amount");
        assert_eq!(name(&["req", "customer", "id"]), "customer.id");
        assert_eq!(name(&["req"]), "req", "the whole arguments have no name of their own");
        assert_eq!(name(&["p"]), "period");
        assert_eq!(name(&["customer"]), "customer");
        assert_eq!(name(&["amount"]), "amount");
        assert_eq!(name(&["a"]), "a", "unknown: the Rust name");
    }

    #[test]
    fn bindings_inside_rmcp_parameters_know_their_fields() {
        let sig: Signature = syn::parse_str(
            "fn f(Parameters(Req { customer, period: p, inner: Inner { id, .. }, .. }): Parameters<Req>, \
             Parameters(req): rmcp::handler::server::wrapper::Parameters<Other>, plain: Parameters<Req>, \
             Wrap(w): Wrap<Req>, Parameters((a, b)): Parameters<(u8, u8)>)",
        )
        .unwrap();
        let paths: Vec<(String, Option<String>)> = bindings(&sig)
            .iter()
            .map(|b| (b.ident.to_string(), b.params_path.as_ref().map(|path| path.join("."))))
            .collect();
        let expected = [
            ("customer", Some("customer")),
            ("p", Some("period")),
            ("id", Some("inner.id")),
            ("req", Some("")),
            ("plain", None),
            ("w", None),
            ("a", None),
            ("b", None),
        ];
        let expected: Vec<(String, Option<String>)> =
            expected.iter().map(|(name, path)| ((*name).to_owned(), path.map(str::to_owned))).collect();
        assert_eq!(paths, expected);
    }

    #[test]
    fn only_plain_parameters_have_known_types() {
        let sig: Signature = syn::parse_str("fn f(a: f64, Wrap(b): Wrap)").unwrap();
        let found = bindings(&sig);
        assert!(found[0].ty.is_some());
        assert!(found[1].ty.is_none());
    }
}
