//! The attribute's grammar: `#[idempotent(...)]`'s tokens into an [`Attr`], each argument
//! as written, with its spans. Every argument is parsed here and nowhere else; what one
//! argument says about another is `valid.rs`'s.
//!
//! `key = "..."`, `compare = [a, b.c]`, `json_names = [args.customer_id = "custId"]`,
//! `store = expr`, `scope = expr`, `unscoped`, `namespace = "..."`, `lease = "30s"`,
//! `max_hold = "1h"`, `retain = "7d"`, `timeout = "2s"`, `on_error = keep`, `reconcile = f`,
//! `approval` or `approval(...)` (`attr/approval.rs`), `budget = PATH`, `describe = "..."` or
//! `describe = off`, `crate = "my_idem"`.
//!
//! The grammar's rules, which the crate docs' table shows and ARCHITECTURE.md explains: an
//! argument with one value is `name = value`; a feature with settings of its own is a group,
//! `name(setting, ...)`, holding every setting that means nothing without it; a word alone is
//! a flag. A word of idem's stands only where a name stands (before `=`, or alone); after `=`
//! comes either your Rust (an expression, a path) or a value of a fixed shape (a string, a
//! duration, a list, `keep`), never one of both. Hooks are named by their job (`reconcile`,
//! `notify`); `on_<event> = <word>` picks what idem does (`on_error = keep`).

use proc_macro2::TokenStream;
use syn::meta::ParseNestedMeta;
use syn::{Expr, Ident, LitStr, Token};

use crate::errors::Errors;

mod approval;
mod old;
mod value;

pub(crate) use approval::ApprovalAttr;
pub(crate) use value::{Duration, FieldPath};

const EXPECTED: &str = "expected one of: key, compare, json_names, store, scope, unscoped, namespace, lease, max_hold, retain, timeout, on_error, reconcile, approval, budget, describe, crate";
const COMPARE_HELP: &str = "`compare` takes a list of parameters or field paths, e.g. compare = [amount, req.memo]";
const JSON_NAMES_HELP: &str = "`json_names` takes a list of fields of the arguments with the JSON name each has, for fields `#[serde(rename = \"...\")]` renames, e.g. json_names = [args.customer_id = \"custId\"]";

/// The parsed attribute: each argument as written. Never changed once parsed.
#[derive(Default)]
pub(crate) struct Attr {
    pub key: Option<LitStr>,
    pub compare: Vec<FieldPath>,
    pub store: Option<Expr>,
    /// `scope = expr`: whose records these are (a tenant, a user), evaluated per call.
    pub scope: Option<Expr>,
    /// `unscoped`: records shared by every caller on purpose, even though the tool takes an
    /// identity extractor (no warning then).
    pub unscoped: Option<Ident>,
    pub namespace: Option<LitStr>,
    pub lease: Option<Duration>,
    pub max_hold: Option<Duration>,
    pub retain: Option<Duration>,
    pub timeout: Option<Duration>,
    /// `on_error = keep`: the body's errors are the final answer (the `keep` token).
    pub keep_errors: Option<Ident>,
    pub reconcile: Option<Expr>,
    /// `approval` or `approval(...)`: which calls ask a person, and what they are asked.
    pub approval: Option<ApprovalAttr>,
    /// `budget = PATH`: the `static` budget fresh runs are charged to.
    pub budget: Option<syn::Path>,
    /// `json_names = [args.customer_id = "custId"]`: the JSON names of fields that serde's
    /// `rename` renames, which the macro cannot see.
    pub json_names: Vec<(FieldPath, LitStr)>,
    /// `describe = "..."` or `describe = off`: the paragraph idem adds to the tool's
    /// description, replaced or left out (`None`: generated).
    pub describe: Option<Describe>,
    /// `crate = "my_idem"`: the path of the facade when the user's Cargo.toml renames it.
    pub krate: Option<syn::Path>,
    /// Whether every argument was read: a syntax error stops the parser, so arguments
    /// after it are unknown and must not be reported missing.
    pub complete: bool,
}

/// Parses the attribute's arguments, collecting every mistake into `errors`.
pub(crate) fn parse(tokens: TokenStream, errors: &mut Errors) -> Attr {
    let mut attr = Attr { complete: true, ..Attr::default() };
    let mut seen = Seen::default();
    let parser = syn::meta::parser(|meta| {
        // A spelling that changed is refused and parsing goes on, so that every one is shown.
        let name = meta.path.get_ident().map(Ident::to_string).unwrap_or_default();
        match old::changed(&name, &meta)? {
            Some(error) => errors.push(error),
            None => argument(&mut attr, &mut seen, &meta)?,
        }
        Ok(())
    });
    if let Err(error) = syn::parse::Parser::parse2(parser, tokens) {
        errors.push(error);
        attr.complete = false;
    }
    attr
}

/// The arguments of an attribute that takes only `crate = "..."` (`#[idem::tasks]`, named
/// `what`), read as `#[idempotent]` reads it.
pub(crate) fn parse_crate_only(tokens: TokenStream, what: &str) -> syn::Result<Option<syn::Path>> {
    let mut krate = None;
    let parser = syn::meta::parser(|meta| {
        if !meta.path.is_ident("crate") {
            return Err(meta.error(format!("{what} takes no arguments but `crate = \"path::to::idem\"`")));
        }
        set_once(&meta, &mut krate, "crate", || value::krate(&meta))
    });
    syn::parse::Parser::parse2(parser, tokens)?;
    Ok(krate)
}

/// The list arguments and `on_error` (whose `release` sets nothing), given once.
#[derive(Default)]
struct Seen {
    on_error: bool,
    compare: bool,
    json_names: bool,
}

fn argument(attr: &mut Attr, seen: &mut Seen, meta: &ParseNestedMeta) -> syn::Result<()> {
    let Some(name) = meta.path.get_ident().map(Ident::to_string) else {
        return Err(meta.error(format!("unknown argument; {EXPECTED}")));
    };
    match name.as_str() {
        "key" => set_once(meta, &mut attr.key, "key", || {
            value::string(meta, "`key` takes a string literal template, e.g. key = \"invoice:<customer>:<period>\"")
        }),
        "namespace" => set_once(meta, &mut attr.namespace, "namespace", || {
            value::string(meta, "`namespace` takes a string literal, e.g. namespace = \"billing::send_invoice\"")
        }),
        "store" => set_once(meta, &mut attr.store, "store", || meta.value()?.parse()),
        "scope" => set_once(meta, &mut attr.scope, "scope", || meta.value()?.parse()),
        "unscoped" => {
            let flag = flag(meta, "`unscoped` takes no value: write `unscoped` alone")?;
            set_once(meta, &mut attr.unscoped, "unscoped", || Ok(flag))
        }
        "lease" => set_once(meta, &mut attr.lease, "lease", || value::duration(meta, "lease")),
        "max_hold" => set_once(meta, &mut attr.max_hold, "max_hold", || value::duration(meta, "max_hold")),
        "retain" => set_once(meta, &mut attr.retain, "retain", || value::duration(meta, "retain")),
        "timeout" => set_once(meta, &mut attr.timeout, "timeout", || value::duration(meta, "timeout")),
        "reconcile" => set_once(meta, &mut attr.reconcile, "reconcile", || meta.value()?.parse()),
        "approval" => set_once(meta, &mut attr.approval, "approval", || approval::parse(meta)),
        "budget" => set_once(meta, &mut attr.budget, "budget", || {
            if meta.input.peek(syn::token::Paren) {
                return Err(meta.error(BUDGET_GROUP));
            }
            meta.value()?.parse::<syn::Path>().map_err(|error| syn::Error::new(error.span(), BUDGET_HELP))
        }),
        "describe" => set_once(meta, &mut attr.describe, "describe", || describe(meta)),
        "crate" => set_once(meta, &mut attr.krate, "crate", || value::krate(meta)),
        "on_error" => {
            if std::mem::replace(&mut seen.on_error, true) {
                return Err(meta.error("duplicate argument `on_error`; give it once"));
            }
            let policy: Ident = meta.value()?.parse().map_err(|e| syn::Error::new(e.span(), ON_ERROR_HELP))?;
            match policy.to_string().as_str() {
                "keep" => attr.keep_errors = Some(policy),
                "release" => {}
                _ => return Err(syn::Error::new(policy.span(), ON_ERROR_HELP)),
            }
            Ok(())
        }
        "compare" => {
            if std::mem::replace(&mut seen.compare, true) {
                return Err(
                    meta.error("duplicate argument `compare`; list every compared field in one `compare = [...]`")
                );
            }
            attr.compare = value::list(meta, COMPARE_HELP)?;
            Ok(())
        }
        "json_names" => {
            if std::mem::replace(&mut seen.json_names, true) {
                return Err(meta.error("duplicate argument `json_names`; list every field in one `json_names = [...]`"));
            }
            let entries: Vec<value::JsonName> = value::list(meta, JSON_NAMES_HELP)?;
            attr.json_names = entries.into_iter().map(|entry| (entry.field, entry.name)).collect();
            Ok(())
        }
        other => Err(meta.error(format!("unknown argument `{other}`; {EXPECTED}"))),
    }
}

/// What `describe = ...` says about the paragraph idem adds to the tool's description.
pub(crate) enum Describe {
    /// `describe = "..."`: this text instead, its `<param>` placeholders naming fields.
    Text(LitStr),
    /// `describe = off`: no paragraph.
    Off,
}

fn describe(meta: &ParseNestedMeta) -> syn::Result<Describe> {
    let value = meta.value()?;
    if value.peek(LitStr) {
        return Ok(Describe::Text(value.parse()?));
    }
    match value.parse::<Ident>() {
        Ok(off) if off == "off" => Ok(Describe::Off),
        Ok(other) => Err(syn::Error::new(other.span(), DESCRIBE_HELP)),
        Err(error) => Err(syn::Error::new(error.span(), DESCRIBE_HELP)),
    }
}

/// A bare word: its name, or `message` when a value follows.
fn flag(meta: &ParseNestedMeta, message: &str) -> syn::Result<Ident> {
    if !meta.input.is_empty() && !meta.input.peek(Token![,]) {
        return Err(meta.error(message));
    }
    Ok(meta.path.get_ident().cloned().expect("an identifier"))
}

fn set_once<T>(
    meta: &ParseNestedMeta,
    slot: &mut Option<T>,
    name: &str,
    parse: impl FnOnce() -> syn::Result<T>,
) -> syn::Result<()> {
    if slot.is_some() {
        let hint = match name {
            "key" => {
                "a tool has one key template: put every field that identifies the action in it, e.g. key = \"invoice:<customer>:<period>\""
            }
            _ => "give it once",
        };
        return Err(meta.error(format!("duplicate argument `{name}`; {hint}")));
    }
    *slot = Some(parse()?);
    Ok(())
}

const BUDGET_HELP: &str = "`budget` takes the path of a `static` budget, e.g. budget = REFUNDS for `static REFUNDS: idem::budget::Budget = idem::budget::Budget::count(\"refunds\", 20).per_day();`";

const BUDGET_GROUP: &str = "`budget` takes one value, the path of a `static` budget: budget = REFUNDS; a call it has no room for asks a person with `approval(over_budget)`";

const DESCRIBE_HELP: &str = "`describe` takes a string literal template that replaces the paragraph idem adds to the tool's description, e.g. describe = \"Safe to retry for the same <customer> and <period>.\", or `off` to add none";

const ON_ERROR_HELP: &str = "`on_error` takes `release` (the default: an error means the action did not happen, so a retry may run it) or `keep` (the error is the final answer, replayed to every retry)";
