//! The names a key template can use: the function's parameters and the names bound by
//! their patterns (`Parameters(Req { customer, .. }): Parameters<Req>`).

use syn::{FnArg, Ident, Pat, Signature, Type};

/// One name in scope in the function body.
pub struct Binding {
    pub ident: Ident,
    /// The declared type, known when the parameter is a plain `name: Type`.
    pub ty: Option<Type>,
    /// Which of `sig.inputs` binds it.
    pub arg: usize,
}

/// Every name the parameters bind, in order.
pub fn bindings(sig: &Signature) -> Vec<Binding> {
    let mut out = Vec::new();
    for (arg, input) in sig.inputs.iter().enumerate() {
        if let FnArg::Typed(typed) = input {
            let ty = matches!(&*typed.pat, Pat::Ident(p) if p.subpat.is_none()).then(|| (*typed.ty).clone());
            walk(&typed.pat, ty, arg, &mut out);
        }
    }
    out
}

fn walk(pat: &Pat, ty: Option<Type>, arg: usize, out: &mut Vec<Binding>) {
    match pat {
        Pat::Ident(p) => {
            out.push(Binding { ident: p.ident.clone(), ty, arg });
            if let Some((_, sub)) = &p.subpat {
                walk(sub, None, arg, out);
            }
        }
        Pat::Struct(p) => p.fields.iter().for_each(|f| walk(&f.pat, None, arg, out)),
        Pat::TupleStruct(p) => p.elems.iter().for_each(|e| walk(e, None, arg, out)),
        Pat::Tuple(p) => p.elems.iter().for_each(|e| walk(e, None, arg, out)),
        Pat::Slice(p) => p.elems.iter().for_each(|e| walk(e, None, arg, out)),
        Pat::Reference(p) => walk(&p.pat, None, arg, out),
        Pat::Paren(p) => walk(&p.pat, None, arg, out),
        Pat::Type(p) => walk(&p.pat, None, arg, out),
        _ => {}
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
    fn only_plain_parameters_have_known_types() {
        let sig: Signature = syn::parse_str("fn f(a: f64, Wrap(b): Wrap)").unwrap();
        let found = bindings(&sig);
        assert!(found[0].ty.is_some());
        assert!(found[1].ty.is_none());
    }
}
