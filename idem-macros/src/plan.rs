//! What expansion needs, lowered from a [`Tool`] that `valid.rs` found valid: the key's
//! fields and the bindings they start from, the compared fields by the names the model knows,
//! which parameters each generated sibling takes, and the approval and budget policies.

use proc_macro2::Span;
use syn::{Expr, FnArg, Ident, LitStr};

use crate::ast::Tool;
use crate::attr::FieldPath;
use crate::frameworks::Framework;
use crate::json_names::{self, JsonNamesPlan, UsedField};
use crate::params::{self, Binding};
use crate::template::{self, Piece, Placeholder};
use crate::{approval_text, describe, reads, scope};

/// A valid attribute on its function: everything expansion needs.
pub(crate) struct Plan {
    /// The framework whose tool this is (decided once, in `ast.rs`).
    pub framework: Framework,
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
    /// When and how a person is asked.
    pub approval: Option<ApprovalPlan>,
    /// The budget fresh runs are charged to.
    pub budget: Option<BudgetPlan>,
    /// Indices into the signature's inputs that the `scope` expression uses: what an rmcp
    /// tool's `tasks/get` extracts from its own request to learn the caller's scope.
    pub scope_inputs: Vec<usize>,
    /// Where the key's fields sit in the JSON arguments of an rmcp tool, when they all come
    /// from one `Parameters(..): Parameters<T>` argument; what its status tool takes.
    pub params_key: Option<ParamsKey>,
    /// The key and compared fields of the arguments the model sends, and the JSON names
    /// `json_names = [...]` gives.
    pub json_names: JsonNamesPlan,
    /// The paragraph added to the tool's description: generated, `describe = "..."`, or off.
    pub describe: describe::Given,
    /// `approval(when = ...)`'s condition as the model reads it (`amount > 1000.0`).
    pub approval_condition: Option<String>,
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

/// When a call asks a person, and what the request says.
pub(crate) struct ApprovalPlan {
    pub asks: Asks,
    /// The request's text template, in pieces; `None` for the default text.
    pub text: Option<(Vec<TextPiece>, Span)>,
    pub ttl_ms: Option<u64>,
    /// Called once per request made.
    pub notify: Option<Expr>,
    /// The tool's summary: the first sentence of its doc comment.
    pub summary: String,
}

/// Which calls ask, besides those the budget has no room for (when it asks then).
pub(crate) enum Asks {
    /// Every first call of an action.
    Always,
    /// A call whose condition holds.
    When(Expr),
    /// None: only a call the budget has no room for.
    OverBudgetOnly,
}

/// A piece of an approval request's text.
pub(crate) enum TextPiece {
    Literal(String),
    /// `<root.field>`: a parameter's value, written with `Display`.
    Value(Vec<Ident>),
}

/// A valid `budget`.
pub(crate) struct BudgetPlan {
    /// The `static` budget, as written.
    pub path: syn::Path,
    /// A call the budget has no room for asks a person.
    pub over_budget_asks: bool,
}

pub(crate) fn lower(tool: &Tool) -> Plan {
    let (attr, bindings) = (&tool.attr, &tool.bindings);
    let pieces = attr.key.as_ref().and_then(|key| template::parse(&key.value()).ok()).unwrap_or_default();
    let (key_fields, key_bindings) = key_fields(&pieces, bindings);
    let mut status_inputs: Vec<usize> = Vec::new();
    for binding in &key_bindings {
        if !status_inputs.contains(&binding.arg) {
            status_inputs.push(binding.arg);
        }
    }
    let mut store_inputs = match &attr.store {
        Some(store) => reads::inputs(quote::ToTokens::to_token_stream(store), bindings),
        None => Vec::new(),
    };
    // The scope is part of the record's identity: `<fn>_record_id` and the status function
    // take what it reads, as they take what the `store` expression reads.
    let mut key_inputs = status_inputs.clone();
    let scope_inputs = match &attr.scope {
        Some(scope) => reads::inputs(quote::ToTokens::to_token_stream(scope), bindings),
        None => Vec::new(),
    };
    for &arg in &scope_inputs {
        if !key_inputs.contains(&arg) {
            key_inputs.push(arg);
        }
        if !store_inputs.contains(&arg) {
            store_inputs.push(arg);
        }
    }
    key_inputs.sort_unstable();
    for arg in &store_inputs {
        if !status_inputs.contains(arg) {
            status_inputs.push(*arg);
        }
    }
    status_inputs.sort_unstable();
    store_inputs.sort_unstable();
    let params_key = params_key(&key_fields, &key_bindings, &tool.item.sig, &store_inputs);
    let mut compare = attr.compare.clone();
    compare.sort_by_key(FieldPath::text);
    let (compare, compare_names) = params::model_named(compare, bindings);
    let keyed =
        key_fields.iter().map(|field| UsedField { path: field.placeholder.path.clone(), recorded: &field.model_name });
    let compared =
        compare.iter().zip(&compare_names).map(|(field, name)| UsedField { path: field.path(), recorded: name });
    let json_names = json_names::lower(&attr.json_names, bindings, &keyed.chain(compared).collect::<Vec<_>>());
    Plan {
        framework: tool.framework,
        approval: approval(tool),
        budget: attr.budget.clone().map(|path| BudgetPlan { path, over_budget_asks: over_budget_asks(tool) }),
        pieces,
        key_fields,
        compare,
        compare_names,
        store: attr.store.clone(),
        scope: attr.scope.clone(),
        unscoped_identity: scope::unscoped_identity(tool),
        namespace: attr.namespace.clone(),
        lease_ms: attr.lease.map(|lease| lease.ms),
        max_hold_ms: attr.max_hold.map(|max_hold| max_hold.ms),
        retain_ms: attr.retain.map(|retain| retain.ms),
        timeout_ms: attr.timeout.map(|timeout| timeout.ms),
        keep_errors: attr.keep_errors.clone(),
        reconcile: attr.reconcile.clone(),
        krate: attr.krate.clone().unwrap_or_else(|| syn::parse_quote!(::idem)),
        status_inputs,
        key_inputs,
        store_inputs,
        scope_inputs,
        params_key,
        json_names,
        describe: describe::given(tool),
        approval_condition: attr
            .approval
            .as_ref()
            .and_then(|approval| approval.when.as_ref())
            .map(|condition| describe::condition(condition, bindings)),
    }
}

/// Each placeholder with the binding it starts from.
fn key_fields<'b>(pieces: &[Piece], bindings: &'b [Binding]) -> (Vec<KeyField>, Vec<&'b Binding>) {
    let mut fields = Vec::new();
    let mut found = Vec::new();
    for piece in pieces {
        let Piece::Placeholder(placeholder) = piece else { continue };
        let Some(binding) = bindings.iter().find(|b| b.ident == placeholder.path[0]) else { continue };
        let model_name = params::model_name(bindings, &placeholder.path);
        fields.push(KeyField { placeholder: placeholder.clone(), root: binding.ident.clone(), model_name });
        found.push(binding);
    }
    (fields, found)
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
    let FnArg::Typed(_) = &sig.inputs[arg] else { return None };
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

/// The approval policy, when the tool asks a person: on every first call (`always`), when
/// its condition holds, or only when its budget has no room (`over_budget` alone).
fn approval(tool: &Tool) -> Option<ApprovalPlan> {
    let approval = tool.attr.approval.as_ref()?;
    let asks = match (&approval.always, &approval.when) {
        (Some(_), _) => Asks::Always,
        (None, Some(condition)) => Asks::When(condition.clone()),
        (None, None) => Asks::OverBudgetOnly,
    };
    Some(ApprovalPlan {
        asks,
        text: approval.text.as_ref().map(|text| (text_pieces(text), text.span())),
        ttl_ms: approval.ttl.map(|ttl| ttl.ms),
        notify: approval.notify.clone(),
        summary: crate::docs::summary(&tool.item.attrs),
    })
}

/// The pieces of a valid text template, each value spanned at the literal.
fn text_pieces(text: &LitStr) -> Vec<TextPiece> {
    let span = text.span();
    let pieces = approval_text::parse(&text.value()).into_iter().filter_map(|piece| match piece {
        approval_text::Piece::Literal(text) => Some(TextPiece::Literal(text)),
        approval_text::Piece::Placeholder { path: Some(path), .. } => {
            Some(TextPiece::Value(path.iter().map(|segment| Ident::new(segment, span)).collect()))
        }
        _ => None,
    });
    pieces.collect()
}

/// Whether a call the budget has no room for asks a person: `approval(over_budget)`.
fn over_budget_asks(tool: &Tool) -> bool {
    tool.attr.approval.as_ref().is_some_and(|approval| approval.over_budget.is_some())
}
