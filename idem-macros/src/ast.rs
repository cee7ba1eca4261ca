//! The model of one `#[idempotent]` tool, built once per expansion (thiserror's `ast.rs`):
//! the function, the framework whose tool it is (decided here and nowhere else), what its
//! parameters bind, and its attribute as parsed. `valid.rs` checks it, `plan.rs` lowers it
//! for expansion; neither changes it.

use proc_macro2::TokenStream;
use syn::ItemFn;
use syn::spanned::Spanned;

use crate::attr::{self, Attr};
use crate::errors::Errors;
use crate::frameworks::{self, Framework};
use crate::params::{self, Binding};

pub(crate) struct Tool<'a> {
    pub item: &'a ItemFn,
    /// The framework whose tool attribute sits below `#[idempotent]`.
    pub framework: Framework,
    /// Every name the parameters bind (an rmcp `Parameters<T>` or an ADK-Rust argument
    /// struct knowing the JSON fields below it).
    pub bindings: Vec<Binding>,
    pub attr: Attr,
}

impl<'a> Tool<'a> {
    /// `item` as a tool with the attribute `tokens`, or `None` when the function cannot be
    /// read as one (then nothing about its arguments is said: a cascade would follow).
    pub(crate) fn parse(tokens: TokenStream, item: &'a ItemFn, errors: &mut Errors) -> Option<Tool<'a>> {
        let framework = frameworks::detect(item);
        frameworks::check_order(item, errors);
        frameworks::check_tool(item, errors);
        if framework == Framework::Rmcp {
            frameworks::check_rmcp_return(item, errors);
        }
        if !errors.is_empty() {
            return None;
        }
        let attr = attr::parse(tokens, errors);
        check_shape(item, errors);
        let bindings = params::bindings_of(item, framework);
        Some(Tool { item, framework, bindings, attr })
    }
}

/// What a function must be to be a tool at all: a run-time function with a return type
/// that carries idem's answers.
fn check_shape(item: &ItemFn, errors: &mut Errors) {
    let sig = &item.sig;
    if let Some(constness) = &sig.constness {
        errors.at(
            constness.span,
            "#[idempotent] cannot be used on a `const fn`: it reserves a key in a store at run time",
        );
    }
    if let Some(abi) = &sig.abi {
        errors
            .at(abi.span(), "#[idempotent] cannot be used on an `extern` function; wrap it in a Rust function instead");
    }
    if let syn::ReturnType::Default = sig.output {
        errors.at(
            sig.ident.span(),
            format!(
                "#[idempotent] tool `{}` has no return type, so it cannot return a replay or idem's errors (IN_PROGRESS, CONFLICT, ...); return `Result<T, E>` where `T: Serialize + DeserializeOwned` and `E: From<idem::Error>`, e.g. `-> Result<(), idem::Error>`",
                sig.ident
            ),
        );
    }
    if let Some(variadic) = &sig.variadic {
        errors.at(variadic.span(), "#[idempotent] cannot be used on a variadic function");
    }
}
