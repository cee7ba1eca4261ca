//! The names a key template can use: the function's parameters and the names bound by
//! their patterns (`Parameters(Req { customer, .. }): Parameters<Req>`), and what the model
//! calls each of them.

use syn::{FnArg, Ident, Pat, Signature, Type};

/// One name in scope in the function body.
pub struct Binding {
    pub ident: Ident,
    /// The declared type, known when the parameter is a plain `name: Type`.
    pub ty: Option<Type>,
    /// Which of `sig.inputs` binds it.
    pub arg: usize,
    /// Where the model's arguments hold the bound value, as a path of JSON names: a plain
    /// parameter is the argument of its name (`["amount"]`); `Parameters(req)` binds the
    /// whole argument object (`[]`), `Parameters(Req { period: p, .. })` its field
    /// `["period"]`. `None` where no argument is known to hold it.
    pub model_path: Option<Vec<String>>,
}

/// Every name the parameters bind, in order.
pub fn bindings(sig: &Signature) -> Vec<Binding> {
    let mut out = Vec::new();
    for (arg, input) in sig.inputs.iter().enumerate() {
        if let FnArg::Typed(typed) = input {
            let ty = matches!(&*typed.pat, Pat::Ident(p) if p.subpat.is_none()).then(|| (*typed.ty).clone());
            let model = match &*typed.pat {
                Pat::Ident(p) => Some(vec![p.ident.to_string()]),
                _ => None,
            };
            walk(&typed.pat, ty, arg, model, &mut out);
        }
    }
    out
}

/// `model` is where the model's arguments hold what `pat` matches, when known.
fn walk(pat: &Pat, ty: Option<Type>, arg: usize, model: Option<Vec<String>>, out: &mut Vec<Binding>) {
    match pat {
        Pat::Ident(p) => {
            out.push(Binding { ident: p.ident.clone(), ty, arg, model_path: model.clone() });
            if let Some((_, sub)) = &p.subpat {
                walk(sub, None, arg, model, out);
            }
        }
        Pat::Struct(p) => p.fields.iter().for_each(|f| {
            let field = match &f.member {
                syn::Member::Named(name) => model.clone().map(|mut path| {
                    path.push(name.to_string());
                    path
                }),
                syn::Member::Unnamed(_) => None,
            };
            walk(&f.pat, None, arg, field, out);
        }),
        // rmcp's `Parameters(x)`: `x` is the tool's whole argument object.
        Pat::TupleStruct(p)
            if p.path.segments.last().is_some_and(|s| s.ident == "Parameters") && p.elems.len() == 1 =>
        {
            walk(&p.elems[0], None, arg, Some(Vec::new()), out);
        }
        Pat::TupleStruct(p) => p.elems.iter().for_each(|e| walk(e, None, arg, None, out)),
        Pat::Tuple(p) => p.elems.iter().for_each(|e| walk(e, None, arg, None, out)),
        Pat::Slice(p) => p.elems.iter().for_each(|e| walk(e, None, arg, None, out)),
        Pat::Reference(p) => walk(&p.pat, None, arg, model, out),
        Pat::Paren(p) => walk(&p.pat, None, arg, model, out),
        Pat::Type(p) => walk(&p.pat, None, arg, model, out),
        _ => {}
    }
}

/// What the model calls the value at `path` (a binding and fields below it): `amount` for
/// `req.amount` where `Parameters(req)` binds the arguments, the Rust path where the model
/// sends that path itself (a plain parameter `req`) or where nothing is known.
pub fn model_name(bindings: &[Binding], path: &[String]) -> String {
    let model = bindings.iter().find(|b| b.ident == path[0]).and_then(|b| b.model_path.as_ref());
    match model {
        Some(model) if !(model.is_empty() && path.len() == 1) => {
            model.iter().chain(&path[1..]).cloned().collect::<Vec<_>>().join(".")
        }
        _ => path.join("."),
    }
}

/// The names, for "available: ..." lists.
pub fn names(bindings: &[Binding]) -> String {
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
    fn only_plain_parameters_have_known_types() {
        let sig: Signature = syn::parse_str("fn f(a: f64, Wrap(b): Wrap)").unwrap();
        let found = bindings(&sig);
        assert!(found[0].ty.is_some());
        assert!(found[1].ty.is_none());
    }
}
