//! The warning for a tool that takes the caller's identity but shares its records across
//! callers (no `scope`, no `unscoped`). That a scope comes from the caller, never from the
//! model, is `valid.rs`'s rule.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use quote::quote_spanned;
use syn::Ident;
use syn::spanned::Spanned;

use crate::ast::Tool;
use crate::frameworks::Framework;

/// An rmcp tool that takes an `Extension<T>` or the whole `Extensions` (how rmcp hands a
/// tool the authenticated request), or an ADK-Rust tool that takes its `ToolContext` (which
/// names the user), serves many callers, yet without `scope` its records are shared by all of
/// them: that deserves a warning, unless `unscoped` says it is meant.
pub(crate) fn unscoped_identity(tool: &Tool) -> Option<(Span, String)> {
    if tool.attr.scope.is_some() || tool.attr.unscoped.is_some() {
        return None;
    }
    tool.item.sig.inputs.iter().find_map(|input| {
        let syn::FnArg::Typed(typed) = input else { return None };
        let identity = match tool.framework {
            Framework::Rmcp => {
                let syn::Type::Path(path) = &*typed.ty else { return None };
                let last = path.path.segments.last()?;
                last.ident == "Extension" || last.ident == "Extensions"
            }
            Framework::Adk => typed.ty.to_token_stream().to_string().contains("ToolContext"),
            _ => false,
        };
        identity.then(|| (typed.ty.span(), typed.ty.to_token_stream().to_string()))
    })
}

/// A warning (stable Rust has no other way for a macro to warn: the use of a deprecated
/// item, spanned at the extractor) for tool `name`, which takes the caller's identity but
/// shares its records across callers: `identity` is what [`unscoped_identity`] found.
pub(crate) fn unscoped_warning(identity: Option<&(Span, String)>, name: &Ident) -> TokenStream {
    let Some((span, ty)) = identity else { return TokenStream::new() };
    let example = match ty.contains("ToolContext") {
        true => "`scope = ctx.user_id()` for ADK-Rust's `ctx: Arc<dyn ToolContext>`",
        false => "`scope = principal.tenant` for `Extension(principal)`",
    };
    let note = format!(
        "`{name}` takes `{}`, the caller's identity, but its idempotency records are shared by every caller: \
         one caller's repeat replays another's result. Scope them with `scope = <the caller's id>` in \
         #[idempotent(...)] (e.g. {example}), or write `unscoped` there if every caller shares them on purpose",
        ty.replace(" < ", "<").replace(" >", ">")
    );
    let warning = Ident::new("__idem_records_shared_by_every_caller", *span);
    quote_spanned! {*span=>
        #[deprecated(note = #note)]
        #[allow(non_upper_case_globals)]
        const #warning: () = ();
        let () = #warning;
    }
}
