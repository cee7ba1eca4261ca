//! Validation: the template against the function's parameters, the rules for key fields,
//! the `compare` list and the function's shape. Every mistake is reported in one run.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Expr, Ident, ItemFn, LitStr};

use crate::args::{Args, FieldPath};
use crate::errors::Errors;
use crate::params::{self, Binding};
use crate::rules;
use crate::template::{self, Piece, Placeholder};

/// A validated attribute: everything expansion needs.
pub(crate) struct Plan {
    pub pieces: Vec<Piece>,
    /// One per placeholder, in template order: the binding it starts from.
    pub key_fields: Vec<KeyField>,
    /// Sorted by their model names.
    pub compare: Vec<FieldPath>,
    /// What the model calls each compared field (`amount` for `req.amount` under
    /// `Parameters(req)`), in `compare`'s order: the names records and messages use.
    pub compare_names: Vec<String>,
    pub store: Option<Expr>,
    /// `scope = expr`: hashed into the record's identity ahead of the key.
    pub scope: Option<Expr>,
    /// An identity extractor (`Extension<T>`) the tool takes while its records are shared
    /// by every caller (no `scope`, no `unscoped`): where, and what, for a warning.
    pub unscoped_identity: Option<(Span, String)>,
    pub namespace: Option<LitStr>,
    pub lease_ms: Option<u64>,
    pub max_hold_ms: Option<u64>,
    pub retain_ms: Option<u64>,
    pub timeout_ms: Option<u64>,
    /// `on_error = keep`: the `keep` token, where an error type that cannot be kept is reported.
    pub keep_errors: Option<Ident>,
    pub reconcile: Option<Expr>,
    /// The facade's path in generated code: `::idem`, or what `crate = "..."` names.
    pub krate: syn::Path,
    /// Indices into the signature's inputs that the status function takes.
    pub status_inputs: Vec<usize>,
    /// Indices into the signature's inputs that the key uses: what `<fn>_record_id` takes.
    pub key_inputs: Vec<usize>,
    /// Indices into the signature's inputs that the `store` or `scope` expression uses:
    /// what the status function takes besides the key's fields.
    pub store_inputs: Vec<usize>,
    /// `approval = ...` and its companions, validated.
    pub approval: Option<crate::approval::ApprovalPlan>,
    /// `budget = ...` and `over_budget = ...`, validated.
    pub budget: Option<crate::budget::BudgetPlan>,
    /// Indices into the signature's inputs that the `scope` expression uses: what an rmcp
    /// tool's `tasks/get` extracts from its own request to learn the caller's scope.
    pub scope_inputs: Vec<usize>,
    /// Where the key's fields sit in the JSON arguments of an rmcp tool, when they all come
    /// from one `Parameters(..): Parameters<T>` argument; what its status tool takes.
    pub params_key: Option<ParamsKey>,
    /// The key and compared fields of the arguments the model sends, and the JSON names
    /// `json_names = [...]` gives.
    pub json_names: crate::json_names::JsonNamesPlan,
}

/// The key of an rmcp tool as JSON arguments: every key field comes from one
/// `Parameters(req): Parameters<T>` argument (`<req.customer>`, or a name bound in its
/// pattern), so a status tool can take those top-level properties only.
pub(crate) struct ParamsKey {
    /// The index of the `Parameters<T>` argument in the signature's inputs.
    pub arg: usize,
    /// The top-level JSON properties the key reads (field names of `T`), in template order,
    /// each once: `customer`, `period`.
    pub fields: Vec<String>,
    /// Per key field, in `key_fields` order: which of `fields`, and the path below it
    /// (`["id"]` for `<req.customer.id>`).
    pub parts: Vec<(usize, Vec<String>)>,
}

pub(crate) struct KeyField {
    pub placeholder: Placeholder,
    /// The binding, spanned where the user declared it.
    pub root: Ident,
    /// What the model calls the field, for messages.
    pub model_name: String,
}

pub(crate) fn validate(mut args: Args, item: &ItemFn, errors: &mut Errors) -> Option<Plan> {
    check_shape(item, errors);
    let approval = crate::approval::validate(&mut args, item, &params::bindings_of(item), errors);
    let budget = crate::budget::validate(&mut args, errors);
    if let Some(krate) = &args.krate {
        crate::krate::check(krate, errors);
    }
    if let Some((_, span)) = args.timeout {
        check_timeout(item, span, errors);
    }
    if let Some(max_hold) = args.max_hold {
        check_max_hold(max_hold, args.lease, errors);
    }
    let Some(key) = args.key else {
        // After a syntax error the arguments past it were never read: no "missing key" then.
        if args.complete {
            errors.at(
                Span::call_site(),
                "missing `key = \"...\"`: name the business action with its fields, e.g. #[idempotent(key = \"invoice:<customer>:<period>\")]",
            );
        }
        return None;
    };
    let fn_name = item.sig.ident.to_string();
    let bindings = params::bindings_of(item);
    let pieces = match template::parse(&key.value()) {
        Ok(pieces) => pieces,
        Err(error) => {
            use template::TemplateError::{BadPath, Empty, EmptyPlaceholder, NoPlaceholder};
            match error {
                Empty | EmptyPlaceholder | BadPath { .. } | NoPlaceholder { .. } => {
                    errors.at(key.span(), format!("{error} (available: {})", params::names(&bindings)));
                }
                _ => errors.at(key.span(), error),
            }
            return None;
        }
    };
    let no_such = no_such(&fn_name, &bindings);
    let mut key_fields = Vec::new();
    let mut key_bindings = Vec::new();
    let mut status_inputs = Vec::new();
    for piece in &pieces {
        let Piece::Placeholder(placeholder) = piece else { continue };
        let span = placeholder_span(&key, placeholder);
        let root = &placeholder.path[0];
        let Some(binding) = bindings.iter().find(|b| b.ident == root) else {
            if root == "self" {
                errors.at(
                    span,
                    format!(
                        "placeholder {placeholder} cannot read `self`: a key template names the tool's parameters; take the value as a parameter (available: {})",
                        params::names(&bindings)
                    ),
                );
                continue;
            }
            errors.at(
                span,
                format!(
                    "unknown placeholder {placeholder} in key template; {no_such} {root} (available: {})",
                    params::names(&bindings)
                ),
            );
            continue;
        };
        check_key_field(placeholder, binding, span, errors);
        if !status_inputs.contains(&binding.arg) {
            status_inputs.push(binding.arg);
        }
        let model_name = params::model_name(&bindings, &placeholder.path);
        key_fields.push(KeyField { placeholder: placeholder.clone(), root: binding.ident.clone(), model_name });
        key_bindings.push(binding);
    }
    let mut store_inputs = Vec::new();
    if let Some(store) = &args.store {
        store_inputs = crate::reads::inputs(quote::ToTokens::to_token_stream(store), &bindings);
    }
    // The scope is part of the record's identity: `<fn>_record_id` and the status function
    // take what it reads, as they take what the `store` expression reads.
    let mut key_inputs = status_inputs.clone();
    let mut scope_inputs = Vec::new();
    if let Some(scope) = &args.scope {
        scope_inputs = crate::scope::inputs(scope, &bindings, item, errors);
        for &arg in &scope_inputs {
            if !key_inputs.contains(&arg) {
                key_inputs.push(arg);
            }
            if !store_inputs.contains(&arg) {
                store_inputs.push(arg);
            }
        }
    }
    key_inputs.sort_unstable();
    let unscoped_identity = crate::scope::unscoped_identity((&args.scope, &args.unscoped), item, errors);
    for arg in &store_inputs {
        if !status_inputs.contains(arg) {
            status_inputs.push(*arg);
        }
    }
    status_inputs.sort_unstable();
    store_inputs.sort_unstable();
    let params_key = params_key(&key_fields, &key_bindings, &item.sig, &store_inputs);
    let compare = check_compare(args.compare, &key_fields, &bindings, &no_such, errors);
    let (compare, compare_names) = model_named(compare, &bindings);
    let json_names = {
        let keyed = key_fields.iter().map(|field| (field.placeholder.path.clone(), field.model_name.as_str()));
        let compared = compare
            .iter()
            .zip(&compare_names)
            .map(|(field, name)| (field.segments.iter().map(Ident::to_string).collect(), name.as_str()));
        let used: Vec<_> =
            keyed.chain(compared).map(|(path, recorded)| crate::json_names::UsedField { path, recorded }).collect();
        crate::json_names::validate(&args.json_names, &bindings, &used, errors)
    };
    errors.is_empty().then_some(Plan {
        approval,
        budget,
        pieces,
        key_fields,
        compare,
        compare_names,
        store: args.store,
        scope: args.scope,
        unscoped_identity,
        namespace: args.namespace,
        lease_ms: args.lease.map(|(ms, _)| ms),
        max_hold_ms: args.max_hold.map(|(ms, _)| ms),
        retain_ms: args.retain.map(|(ms, _)| ms),
        timeout_ms: args.timeout.map(|(ms, _)| ms),
        keep_errors: args.keep_errors,
        reconcile: args.reconcile,
        krate: args.krate.unwrap_or_else(|| syn::parse_quote!(::idem)),
        status_inputs,
        key_inputs,
        store_inputs,
        scope_inputs,
        params_key,
        json_names,
    })
}

/// The key as JSON arguments, when every key field comes from one `Parameters<T>` argument
/// (or an ADK-Rust tool's argument struct) that the `store` expression does not use, and
/// names a field of `T` (not `<req>` whole).
fn params_key(
    key_fields: &[KeyField],
    key_bindings: &[&Binding],
    sig: &syn::Signature,
    store_inputs: &[usize],
) -> Option<ParamsKey> {
    let arg = key_bindings.first()?.arg;
    let syn::FnArg::Typed(_) = &sig.inputs[arg] else { return None };
    if key_bindings.first()?.params_path.is_none() || store_inputs.contains(&arg) {
        return None;
    }
    let mut fields: Vec<String> = Vec::new();
    let mut parts = Vec::new();
    for (field, binding) in key_fields.iter().zip(key_bindings) {
        if binding.arg != arg {
            return None;
        }
        let mut path = binding.params_path.clone()?;
        path.extend(field.placeholder.path[1..].iter().cloned());
        let (first, rest) = path.split_first()?;
        let index = match fields.iter().position(|known| known == first) {
            Some(index) => index,
            None => {
                fields.push(first.clone());
                fields.len() - 1
            }
        };
        parts.push((index, rest.to_vec()));
    }
    Some(ParamsKey { arg, fields, parts })
}

/// idem's default lease, `idem::store::DEFAULT_LEASE` (a test of the facade pins the two together).
const DEFAULT_LEASE_MS: u64 = 30_000;

/// Renewal stops at `max_hold`, so a `max_hold` shorter than one lease would never renew.
fn check_max_hold((max_hold_ms, span): (u64, Span), lease: Option<(u64, Span)>, errors: &mut Errors) {
    let (lease_ms, whose) = match lease {
        Some((ms, _)) => (ms, "the lease"),
        None => (DEFAULT_LEASE_MS, "the default lease"),
    };
    if max_hold_ms < lease_ms {
        errors.at(
            span,
            format!(
                "`max_hold` ({max_hold_ms} ms) is shorter than {whose} ({lease_ms} ms): it bounds how long a running body keeps its key by renewing the lease, so make it at least one lease (default 1h), or shorten `lease`"
            ),
        );
    }
}

/// `timeout` lets the body run on after its caller got TIMEOUT, as a task of its own: the
/// body must be async and must not borrow from the caller.
fn check_timeout(item: &ItemFn, span: Span, errors: &mut Errors) {
    let sig = &item.sig;
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
            syn::FnArg::Receiver(_) if crate::frameworks::detect(item) == crate::frameworks::Framework::Rmcp => None,
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

fn check_key_field(placeholder: &Placeholder, binding: &Binding, span: Span, errors: &mut Errors) {
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

fn check_compare(
    compare: Vec<FieldPath>,
    key_fields: &[KeyField],
    bindings: &[Binding],
    no_such: &str,
    errors: &mut Errors,
) -> Vec<FieldPath> {
    let mut seen: Vec<String> = Vec::new();
    let mut kept = Vec::new();
    for field in compare {
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
        } else if let Some(key_field) = key_fields.iter().find(|k| covers(&k.placeholder.path, &field)) {
            errors.at(
                span,
                format!(
                    "`{text}` is already part of the key ({}); a different value is a different action, never a conflict, so remove it from `compare`",
                    key_field.placeholder
                ),
            );
        } else if seen.contains(&text) {
            errors.at(span, format!("`{text}` is listed twice in `compare`; remove one of them"));
        } else {
            seen.push(text);
            kept.push(field);
        }
    }
    kept.sort_by_key(FieldPath::text);
    kept
}

/// The compared fields with the names the model knows them by, sorted by those names (the
/// order the runtime writes them in). Two fields the model would know by one name keep
/// their Rust names: a record must never mix them up.
fn model_named(compare: Vec<FieldPath>, bindings: &[Binding]) -> (Vec<FieldPath>, Vec<String>) {
    let path = |field: &FieldPath| field.segments.iter().map(Ident::to_string).collect::<Vec<_>>();
    let mut named: Vec<(String, FieldPath)> =
        compare.into_iter().map(|field| (params::model_name(bindings, &path(&field)), field)).collect();
    let mut names: Vec<&String> = named.iter().map(|(name, _)| name).collect();
    names.sort();
    if names.windows(2).any(|pair| pair[0] == pair[1]) {
        named.iter_mut().for_each(|(name, field)| *name = field.text());
    }
    named.sort_by(|a, b| a.0.cmp(&b.0));
    named.into_iter().map(|(name, field)| (field, name)).unzip()
}

/// The start of an "unknown name" message: names bound inside parameter patterns count too.
fn no_such(fn_name: &str, bindings: &[Binding]) -> String {
    if bindings.iter().any(|b| b.ty.is_none()) {
        format!("{fn_name} has no parameter or pattern binding named")
    } else {
        format!("{fn_name} has no parameter")
    }
}

/// Whether a key placeholder's path already decides the compared field: the same path, or
/// a prefix of it (`<req>` covers `req.amount`).
fn covers(key_path: &[String], field: &FieldPath) -> bool {
    key_path.len() <= field.segments.len() && key_path.iter().zip(&field.segments).all(|(k, f)| f == k)
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
