//! Every rule between the attribute's arguments, and between an argument and the function
//! it is on (thiserror's `valid.rs`): what the key, `compare`, `json_names`, `scope` and the
//! approval may name, and which arguments need or contradict others. The parsed [`Tool`] is
//! only read, so no rule depends on the order of another. Each mistake is reported at its
//! narrowest token, and all of them in one run.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Ident, LitStr};

use crate::approval_text;
use crate::ast::Tool;
use crate::attr::{Duration, FieldPath};
use crate::errors::Errors;
use crate::frameworks::Framework;
use crate::json_names::{self, UsedField};
use crate::params::{self, Binding};
use crate::rules;
use crate::template::{self, Piece, Placeholder};

pub(crate) fn check(tool: &Tool, errors: &mut Errors) {
    let attr = &tool.attr;
    approval(tool, errors);
    crate::describe::check(tool, errors);
    if let Some(krate) = &attr.krate {
        crate::krate::check(krate, errors);
    }
    if let Some(timeout) = attr.timeout {
        timeout_fits(tool, timeout.span, errors);
    }
    if let Some(max_hold) = attr.max_hold {
        max_hold_fits(max_hold, attr.lease, errors);
    }
    let Some(key) = key(tool, errors) else { return };
    let no_such = no_such(tool);
    let key_fields = key_fields(tool, &key, &no_such, errors);
    if let Some(scope) = &attr.scope {
        scope_is_the_callers(tool, scope, errors);
    }
    if let (Some(_), Some(unscoped)) = (&attr.scope, &attr.unscoped) {
        errors.at(unscoped.span(), "`unscoped` contradicts `scope = ...`: keep one");
    }
    let compare = compare(tool, &key_fields, &no_such, errors);
    let (compare, compare_names) = params::model_named(compare, &tool.bindings);
    let keyed = key_fields.iter().map(|(field, name)| UsedField { path: field.path.clone(), recorded: name });
    let compared =
        compare.iter().zip(&compare_names).map(|(field, name)| UsedField { path: field.path(), recorded: name });
    json_names(tool, &keyed.chain(compared).collect::<Vec<_>>(), errors);
}

/// The key template's pieces, or `None` (reported) when it is missing or does not parse:
/// nothing more is said about the fields then.
fn key(tool: &Tool, errors: &mut Errors) -> Option<(LitStr, Vec<Piece>)> {
    let Some(key) = &tool.attr.key else {
        // After a syntax error the arguments past it were never read: no "missing key" then.
        if tool.attr.complete {
            errors.at(
                Span::call_site(),
                "missing `key = \"...\"`: name the business action with its fields, e.g. #[idempotent(key = \"invoice:<customer>:<period>\")]",
            );
        }
        return None;
    };
    match template::parse(&key.value()) {
        Ok(pieces) => Some((key.clone(), pieces)),
        Err(error) => {
            use template::TemplateError::{BadPath, Empty, EmptyPlaceholder, NoPlaceholder};
            match error {
                Empty | EmptyPlaceholder | BadPath { .. } | NoPlaceholder { .. } => {
                    errors.at(key.span(), format!("{error} (available: {})", params::names(&tool.bindings)));
                }
                _ => errors.at(key.span(), error),
            }
            None
        }
    }
}

/// Each placeholder names a binding that may be a key field; the path of each that does,
/// with the name the model knows it by.
fn key_fields<'p>(
    tool: &Tool,
    (key, pieces): &'p (LitStr, Vec<Piece>),
    no_such: &str,
    errors: &mut Errors,
) -> Vec<(&'p Placeholder, String)> {
    let bindings = &tool.bindings;
    let mut paths = Vec::new();
    for piece in pieces {
        let Piece::Placeholder(placeholder) = piece else { continue };
        let span = placeholder_span(key, placeholder);
        let root = &placeholder.path[0];
        let Some(binding) = bindings.iter().find(|b| b.ident == root) else {
            let message = if root == "self" {
                format!(
                    "placeholder {placeholder} cannot read `self`: a key template names the tool's parameters; take the value as a parameter (available: {})",
                    params::names(bindings)
                )
            } else {
                format!(
                    "unknown placeholder {placeholder} in key template; {no_such} {root} (available: {})",
                    params::names(bindings)
                )
            };
            errors.at(span, message);
            continue;
        };
        key_field_fits(placeholder, binding, span, errors);
        paths.push((placeholder, params::model_name(bindings, &placeholder.path)));
    }
    paths
}

fn key_field_fits(placeholder: &Placeholder, binding: &Binding, span: Span, errors: &mut Errors) {
    for segment in &placeholder.path {
        if let Some(why) = rules::forbidden_name(segment) {
            errors.at(span, format!("placeholder {placeholder} cannot be a key field: `{segment}` {why}"));
            return;
        }
    }
    if placeholder.path.len() == 1
        && let Some(ty) = &binding.ty
        && let Some((why, type_name)) = rules::forbidden_type(ty)
    {
        errors.at(ty.span(), format!("parameter `{}` cannot be a key field: `{type_name}` {why}", binding.ident));
    }
}

/// Each compared field names a binding, is not decided by the key already, and is listed
/// once; the fields that pass, sorted by how they are written.
fn compare(tool: &Tool, key_fields: &[(&Placeholder, String)], no_such: &str, errors: &mut Errors) -> Vec<FieldPath> {
    let bindings = &tool.bindings;
    let mut seen: Vec<String> = Vec::new();
    let mut kept = Vec::new();
    for field in &tool.attr.compare {
        let text = field.text();
        let span = field.segments.last().map_or_else(Span::call_site, Ident::span);
        if !bindings.iter().any(|b| b.ident == *field.root()) {
            errors.at(
                field.root().span(),
                format!(
                    "unknown field `{}` in `compare`; {no_such} {} (available: {})",
                    text,
                    field.root(),
                    params::names(bindings)
                ),
            );
        } else if let Some((placeholder, _)) = key_fields.iter().find(|(key, _)| covers(&key.path, field)) {
            errors.at(
                span,
                format!(
                    "`{text}` is already part of the key ({placeholder}); a different value is a different action, never a conflict, so remove it from `compare`"
                ),
            );
        } else if seen.contains(&text) {
            errors.at(span, format!("`{text}` is listed twice in `compare`; remove one of them"));
        } else {
            seen.push(text);
            kept.push(field.clone());
        }
    }
    kept.sort_by_key(FieldPath::text);
    kept
}

/// Whether a key placeholder's path already decides the compared field: the same path, or
/// a prefix of it (`<req>` covers `req.amount`).
fn covers(key_path: &[String], field: &FieldPath) -> bool {
    key_path.len() <= field.segments.len() && key_path.iter().zip(&field.segments).all(|(k, f)| f == k)
}

/// The start of an "unknown name" message: names bound inside parameter patterns count too.
fn no_such(tool: &Tool) -> String {
    let fn_name = &tool.item.sig.ident;
    if tool.bindings.iter().any(|b| b.ty.is_none()) {
        format!("{fn_name} has no parameter or pattern binding named")
    } else {
        format!("{fn_name} has no parameter")
    }
}

/// idem's default lease, `idem::store::DEFAULT_LEASE` (a test of the facade pins the two together).
const DEFAULT_LEASE_MS: u64 = 30_000;

/// Renewal stops at `max_hold`, so a `max_hold` shorter than one lease would never renew.
fn max_hold_fits(max_hold: Duration, lease: Option<Duration>, errors: &mut Errors) {
    let (lease_ms, whose) = match lease {
        Some(lease) => (lease.ms, "the lease"),
        None => (DEFAULT_LEASE_MS, "the default lease"),
    };
    let max_hold_ms = max_hold.ms;
    if max_hold_ms < lease_ms {
        errors.at(
            max_hold.span,
            format!(
                "`max_hold` ({max_hold_ms} ms) is shorter than {whose} ({lease_ms} ms): it bounds how long a running body keeps its key by renewing the lease, so make it at least one lease (default 1h), or shorten `lease`"
            ),
        );
    }
}

/// `timeout` lets the body run on after its caller got TIMEOUT, as a task of its own: the
/// body must be async and must not borrow from the caller.
fn timeout_fits(tool: &Tool, span: Span, errors: &mut Errors) {
    let sig = &tool.item.sig;
    if sig.asyncness.is_none() {
        errors.at(
            span,
            "`timeout` works on async tools: a sync body cannot be left running once its caller has its answer; make the tool `async fn`, or let the caller's framework time it out",
        );
        return;
    }
    for input in &sig.inputs {
        let borrowed = match input {
            // An rmcp tool's `timeout` is applied by `#[idem::tasks]`, which runs the whole
            // `tools/call` on a clone of the server.
            syn::FnArg::Receiver(_) if tool.framework == Framework::Rmcp => None,
            syn::FnArg::Receiver(receiver) => {
                matches!(receiver.kind, syn::ReceiverKind::Reference(..)).then(|| "`self`".to_owned())
            }
            syn::FnArg::Typed(typed) => matches!(&*typed.ty, syn::Type::Reference(_))
                .then(|| format!("`{}`", quote::ToTokens::to_token_stream(&typed.pat))),
        };
        if let Some(what) = borrowed {
            errors.at(
                input.span(),
                format!(
                    "`timeout` lets the body run on after its caller got TIMEOUT, so it cannot borrow {what} from the caller; take it by value (for a method, `self: Arc<Self>`)"
                ),
            );
        }
    }
}

/// A scope must come from the caller's authenticated context, never from what the model
/// fills in: an rmcp tool's scope may read `self` and extractors (`Extension<T>`), not its
/// `Parameters<T>`; a rig tool's arguments are all the model's, so its scope may read none
/// of them. Each model binding the scope reads is refused where the scope reads it.
fn scope_is_the_callers(tool: &Tool, scope: &syn::Expr, errors: &mut Errors) {
    for (binding, read_at) in crate::reads::reads(quote::ToTokens::to_token_stream(scope), &tool.bindings) {
        let syn::FnArg::Typed(typed) = &tool.item.sig.inputs[binding.arg] else { continue };
        let what = match tool.framework {
            Framework::Rmcp if params::is_parameters(&typed.ty) => {
                "an rmcp tool's `Parameters` are what the model sends"
            }
            Framework::Rig => "a rig tool's arguments are what the model sends",
            Framework::Adk if binding.params_path.is_some() => {
                "an ADK-Rust tool's argument struct is what the model sends"
            }
            _ => continue,
        };
        let instead = match tool.framework {
            Framework::Adk => {
                "from the tool's `ToolContext`, the user ADK's runner authenticated (`scope = ctx.user_id()`)"
            }
            _ => "from `self` or, for rmcp, an extractor such as `Extension<T>`",
        };
        errors.at(
            read_at,
            format!(
                "`scope` must not read `{}`: {what}, so a model could name another tenant; read the caller's \
                 identity {instead}",
                binding.ident
            ),
        );
    }
}

/// An approval group says which calls ask, without contradicting itself; `over_budget` needs
/// a budget; the condition and the text read the parameters only (they are evaluated before
/// the body runs).
fn approval(tool: &Tool, errors: &mut Errors) {
    let Some(approval) = &tool.attr.approval else { return };
    if !approval.says_when() {
        errors.at(
            approval.name.span(),
            "`approval(...)` must say which calls ask a person: add `always` (every first call), `when = <condition>` \
             (e.g. when = amount > 1000.0) or `over_budget` (a call its budget has no room for), e.g. \
             approval(always, text = \"...\")",
        );
    }
    if let (Some(always), Some(_)) = (&approval.always, &approval.when) {
        errors.at(always.span(), "`always` contradicts `when = ...` in `approval(...)`: keep one");
    }
    if let (Some(over_budget), None) = (&approval.over_budget, &tool.attr.budget) {
        errors.at(
            over_budget.span(),
            "`approval(over_budget)` needs `budget = ...`: it says that a call the budget has no room for asks a person",
        );
    }
    let (fn_name, bindings) = (&tool.item.sig.ident, &tool.bindings);
    if let Some(condition) = &approval.when {
        for (name, span) in crate::reads::not_parameters(quote::ToTokens::to_token_stream(condition), bindings) {
            let always = match name.as_str() {
                "required" | "always" => {
                    "; to ask on every first call, write `approval` alone or `approval(always, ...)`"
                }
                _ => "",
            };
            errors.at(
                span,
                format!(
                    "`approval(when = ...)` reads `{name}`, which is not a parameter of {fn_name}: the condition is \
                     evaluated before the body runs, from the call's parameters (available: {}){always}",
                    params::names(bindings)
                ),
            );
        }
    }
    if let Some(text) = &approval.text {
        let texts = approval_text::Checked { setting: "`approval(text = ...)`", example: "<amount> or <req.amount>" };
        texts.check(text, fn_name, bindings, "", errors);
    }
}

/// Each `json_names` entry is a field of the arguments the model sends that is a key or
/// compared field (`used`), or on the way to one, named once, with a name.
fn json_names(tool: &Tool, used: &[UsedField<'_>], errors: &mut Errors) {
    let bindings = &tool.bindings;
    let (paths, _) = json_names::argument_fields(bindings, used);
    let mut given: Vec<String> = Vec::new();
    for (field, name) in &tool.attr.json_names {
        let path = field.path();
        let span = field.root().span();
        if !params::in_arguments(bindings, &path) {
            errors.at(
                span,
                format!(
                    "`json_names` lists `{}`, which is not a field of the arguments the model sends (an rmcp `Parameters<T>`, an ADK-Rust tool's argument struct): only their fields have JSON names of their own",
                    field.text()
                ),
            );
            continue;
        }
        let recorded = params::model_name(bindings, &path);
        let on_the_way = |used: &str| used == recorded || used.starts_with(&format!("{recorded}."));
        if !paths.iter().any(|used| on_the_way(used)) {
            let known = if paths.is_empty() { "none".to_owned() } else { paths.join(", ") };
            errors.at(
                span,
                format!(
                    "`json_names` lists `{}`, which is neither a key field nor a compared field, nor a field on the way to one (the key and compared fields of the arguments: {known}); remove it",
                    field.text()
                ),
            );
        } else if name.value().is_empty() {
            errors.at(name.span(), format!("`json_names` gives `{}` an empty JSON name", field.text()));
        } else if given.contains(&recorded) {
            errors.at(span, format!("`{}` is listed twice in `json_names`; give it once", field.text()));
        } else {
            given.push(recorded);
        }
    }
}

/// The placeholder's own text inside the literal where the compiler can point there
/// (`Literal::subspan` is nightly-only today), else the whole literal.
fn placeholder_span(key: &LitStr, placeholder: &Placeholder) -> Span {
    let value = key.value();
    let token = key.token();
    let source = token.to_string();
    let needle = placeholder.to_string();
    if source.len() == value.len() + 2
        && let Some(start) = value.find(&needle)
    {
        return token.subspan(start + 1..start + 1 + needle.len()).unwrap_or_else(|| key.span());
    }
    key.span()
}

#[cfg(test)]
mod tests;
