//! `approval` and `approval(...)`: which calls ask a person, and what they are asked. The
//! group holds every setting of the approval, so none of them can be written without it.
//!
//! `approval` alone is `approval(always)`. In the group: `always`, `when = <condition>`,
//! `over_budget` (which calls ask), `text = "..."`, `ttl = "1d"`, `notify = f` (the request).

use syn::meta::ParseNestedMeta;
use syn::{Expr, Ident, LitStr, Token};

use super::value::{self, Duration};

const SETTINGS: &str = "expected one of: always, when, over_budget, text, ttl, notify";

/// The approval as written.
pub(crate) struct ApprovalAttr {
    /// The `approval` token, where a rule about the whole group points.
    pub name: Ident,
    /// `always`: every first call of an action asks (what `approval` alone says).
    pub always: Option<Ident>,
    /// `when = amount > 1000.0`: a call asks when the condition over its parameters holds.
    pub when: Option<Expr>,
    /// `over_budget`: a call the tool's budget has no room for asks, instead of answering
    /// BUDGET_EXCEEDED.
    pub over_budget: Option<Ident>,
    /// `text = "Pay <supplier> <amount> EUR"`: what the person reads.
    pub text: Option<LitStr>,
    /// `ttl = "1d"`: how long a request waits for a decision.
    pub ttl: Option<Duration>,
    /// `notify = path::to::fn`: called once per request made.
    pub notify: Option<Expr>,
}

impl ApprovalAttr {
    /// Whether it says which calls ask: `approval(text = "...")` alone does not.
    pub(crate) fn says_when(&self) -> bool {
        self.always.is_some() || self.when.is_some() || self.over_budget.is_some()
    }
}

/// `approval` alone, or `approval(...)`, after the name (`meta`).
pub(crate) fn parse(meta: &ParseNestedMeta) -> syn::Result<ApprovalAttr> {
    let name = meta.path.get_ident().cloned().expect("an identifier");
    let mut approval = ApprovalAttr {
        name: name.clone(),
        always: None,
        when: None,
        over_budget: None,
        text: None,
        ttl: None,
        notify: None,
    };
    if meta.input.is_empty() || meta.input.peek(Token![,]) {
        approval.always = Some(name);
        return Ok(approval);
    }
    if !meta.input.peek(syn::token::Paren) {
        return Err(meta.error(FORM));
    }
    meta.parse_nested_meta(|setting| self::setting(&mut approval, &setting))?;
    Ok(approval)
}

const FORM: &str = "write `approval` (every first call asks) or `approval(...)` with its settings, e.g. approval(when = amount > 1000.0, text = \"Pay <supplier> <amount> EUR\")";

fn setting(approval: &mut ApprovalAttr, meta: &ParseNestedMeta) -> syn::Result<()> {
    let Some(name) = meta.path.get_ident().map(Ident::to_string) else {
        return Err(meta.error(format!("unknown setting in `approval(...)`; {SETTINGS}")));
    };
    match name.as_str() {
        "always" => once(meta, &mut approval.always, || flag(meta)),
        "over_budget" => once(meta, &mut approval.over_budget, || flag(meta)),
        "when" => once(meta, &mut approval.when, || meta.value()?.parse()),
        "text" => once(meta, &mut approval.text, || {
            value::string(meta, "`text` takes a string literal template, e.g. text = \"Pay <supplier> <amount> EUR\"")
        }),
        "ttl" => once(meta, &mut approval.ttl, || value::duration(meta, "ttl")),
        "notify" => once(meta, &mut approval.notify, || meta.value()?.parse()),
        other => {
            // `on_request`, `on_approval_request`: a hook is named by its job.
            let hook = match other.starts_with("on_") {
                true => "; the hook called once per request made is `notify = f`",
                false => "",
            };
            Err(meta.error(format!("unknown setting `{other}` in `approval(...)`; {SETTINGS}{hook}")))
        }
    }
}

/// A word alone: `always`, `over_budget`.
fn flag(meta: &ParseNestedMeta) -> syn::Result<Ident> {
    let name = meta.path.get_ident().cloned().expect("an identifier");
    if !meta.input.is_empty() && !meta.input.peek(Token![,]) {
        return Err(meta.error(format!("`{name}` takes no value: write `{name}` alone")));
    }
    Ok(name)
}

fn once<T>(meta: &ParseNestedMeta, slot: &mut Option<T>, parse: impl FnOnce() -> syn::Result<T>) -> syn::Result<()> {
    if slot.is_some() {
        let name = meta.path.get_ident().map(Ident::to_string).unwrap_or_default();
        return Err(meta.error(format!("duplicate setting `{name}` in `approval(...)`; give it once")));
    }
    *slot = Some(parse()?);
    Ok(())
}
