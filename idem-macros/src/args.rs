//! Parsing the attribute's arguments: `key = "..."`, `compare = [a, b.c]`, `store = expr`, `scope = expr`,
//! `namespace = "..."`, `lease = "30s"`, `max_hold = "1h"`, `retain = "7d"`, `timeout = "2s"`,
//! `on_error = keep`, `reconcile = expr`, `approval = required | expr`, `approval_text = "..."`,
//! `approval_ttl = "1d"`, `on_approval_request = path`, `budget = PATH`, `over_budget = approval`,
//! `json_names = [args.customer_id = "custId"]`, `crate = "my_idem"`.

use proc_macro2::{Span, TokenStream};
use syn::meta::ParseNestedMeta;
use syn::punctuated::Punctuated;
use syn::{Expr, Ident, LitStr, Token};

use crate::errors::Errors;

const EXPECTED: &str = "expected one of: key, compare, store, scope, unscoped, namespace, lease, max_hold, retain, timeout, on_error, reconcile, approval, approval_text, approval_ttl, on_approval_request, budget, over_budget, json_names, crate";
const COMPARE_HELP: &str = "`compare` takes a list of parameters or field paths, e.g. compare = [amount, req.memo]";
const JSON_NAMES_HELP: &str = "`json_names` takes a list of fields of the arguments with the JSON name each has, for fields `#[serde(rename = \"...\")]` renames, e.g. json_names = [args.customer_id = \"custId\"]";

/// The parsed attribute, before validation.
pub(crate) struct Args {
    pub key: Option<LitStr>,
    pub compare: Vec<FieldPath>,
    pub store: Option<Expr>,
    /// `scope = expr`: whose records these are (a tenant, a user), evaluated per call.
    pub scope: Option<Expr>,
    /// `unscoped`: records shared by every caller on purpose, even though the tool takes an
    /// identity extractor (no warning then).
    pub unscoped: Option<Ident>,
    pub namespace: Option<LitStr>,
    pub lease: Option<(u64, Span)>,
    pub max_hold: Option<(u64, Span)>,
    pub retain: Option<(u64, Span)>,
    pub timeout: Option<(u64, Span)>,
    /// `on_error = keep`: the body's errors are the final answer.
    pub keep_errors: Option<Ident>,
    pub reconcile: Option<Expr>,
    /// `approval = required` or `approval = <bool expression over the parameters>`.
    pub approval: Option<ApprovalArg>,
    /// `approval_text = "Pay <supplier> <amount> EUR"`: the request's text.
    pub approval_text: Option<LitStr>,
    /// `approval_ttl = "1d"`: how long a request waits for a decision.
    pub approval_ttl: Option<(u64, Span)>,
    /// `on_approval_request = path::to::fn`: called once per request made.
    pub on_approval_request: Option<Expr>,
    /// `budget = PATH`: the `static` budget fresh runs are charged to.
    pub budget: Option<syn::Path>,
    /// `over_budget = approval`: a call the budget has no room for asks a person (the
    /// token, where a misplaced one is reported).
    pub over_budget: Option<Ident>,
    /// `json_names = [args.customer_id = "custId"]`: the JSON names of fields that serde's
    /// `rename` renames, which the macro cannot see.
    pub json_names: Vec<(FieldPath, LitStr)>,
    /// `crate = "my_idem"`: the path of the facade when the user's Cargo.toml renames it.
    pub krate: Option<syn::Path>,
    /// Whether every argument was read: a syntax error stops the parser, so arguments
    /// after it are unknown and must not be reported missing.
    pub complete: bool,
}

/// `approval = ...`.
pub(crate) enum ApprovalArg {
    /// `approval = required`: every first call of an action asks.
    Required,
    /// `approval = <bool expression>`: a call asks when it holds.
    When(Expr),
}

/// A compared field as written: `amount` or `req.amount`.
#[derive(Clone)]
pub(crate) struct FieldPath {
    pub segments: Vec<Ident>,
}

impl FieldPath {
    pub(crate) fn text(&self) -> String {
        self.segments.iter().map(Ident::to_string).collect::<Vec<_>>().join(".")
    }

    pub(crate) fn root(&self) -> &Ident {
        &self.segments[0]
    }
}

impl syn::parse::Parse for FieldPath {
    fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
        let mut segments = vec![input.parse::<Ident>()?];
        while input.peek(Token![.]) {
            input.parse::<Token![.]>()?;
            segments.push(input.parse::<Ident>()?);
        }
        Ok(FieldPath { segments })
    }
}

/// One entry of `json_names = [...]`: `args.customer_id = "custId"`.
struct JsonName {
    field: FieldPath,
    name: LitStr,
}

impl syn::parse::Parse for JsonName {
    fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
        let field = input.parse()?;
        input.parse::<Token![=]>()?;
        Ok(JsonName { field, name: input.parse()? })
    }
}

/// Parses the attribute's arguments, collecting every mistake into `errors`.
pub(crate) fn parse(tokens: TokenStream, errors: &mut Errors) -> Args {
    let mut args = Args {
        key: None,
        compare: Vec::new(),
        store: None,
        scope: None,
        unscoped: None,
        namespace: None,
        lease: None,
        max_hold: None,
        retain: None,
        timeout: None,
        keep_errors: None,
        reconcile: None,
        approval: None,
        budget: None,
        over_budget: None,
        approval_text: None,
        approval_ttl: None,
        on_approval_request: None,
        json_names: Vec::new(),
        krate: None,
        complete: true,
    };
    let mut on_error_seen = false;
    let mut compare_seen = false;
    let mut json_names_seen = false;
    let parser = syn::meta::parser(|meta| {
        let Some(name) = meta.path.get_ident().map(Ident::to_string) else {
            return Err(meta.error(format!("unknown argument; {EXPECTED}")));
        };
        match name.as_str() {
            "key" => set_once(&meta, &mut args.key, "key", || {
                string(&meta, "`key` takes a string literal template, e.g. key = \"invoice:<customer>:<period>\"")
            }),
            "namespace" => set_once(&meta, &mut args.namespace, "namespace", || {
                string(&meta, "`namespace` takes a string literal, e.g. namespace = \"billing::send_invoice\"")
            }),
            "store" => set_once(&meta, &mut args.store, "store", || meta.value()?.parse()),
            "scope" => set_once(&meta, &mut args.scope, "scope", || meta.value()?.parse()),
            "unscoped" => {
                if !meta.input.is_empty() && !meta.input.peek(Token![,]) {
                    return Err(meta.error("`unscoped` takes no value: write `unscoped` alone"));
                }
                let flag = meta.path.get_ident().cloned();
                set_once(&meta, &mut args.unscoped, "unscoped", || Ok(flag.expect("an identifier")))
            }
            "lease" => set_once(&meta, &mut args.lease, "lease", || duration(&meta, "lease")),
            "max_hold" => set_once(&meta, &mut args.max_hold, "max_hold", || duration(&meta, "max_hold")),
            "retain" => set_once(&meta, &mut args.retain, "retain", || duration(&meta, "retain")),
            "timeout" => set_once(&meta, &mut args.timeout, "timeout", || duration(&meta, "timeout")),
            "reconcile" => set_once(&meta, &mut args.reconcile, "reconcile", || meta.value()?.parse()),
            "approval" => set_once(&meta, &mut args.approval, "approval", || {
                let value: Expr = meta.value()?.parse()?;
                Ok(match value {
                    Expr::Path(path) if path.path.is_ident("required") => ApprovalArg::Required,
                    other => ApprovalArg::When(other),
                })
            }),
            "approval_text" => set_once(&meta, &mut args.approval_text, "approval_text", || {
                string(
                    &meta,
                    "`approval_text` takes a string literal template, e.g. approval_text = \"Pay <supplier> <amount> EUR\"",
                )
            }),
            "approval_ttl" => {
                set_once(&meta, &mut args.approval_ttl, "approval_ttl", || duration(&meta, "approval_ttl"))
            }
            "on_approval_request" => {
                set_once(&meta, &mut args.on_approval_request, "on_approval_request", || meta.value()?.parse())
            }
            "budget" => set_once(&meta, &mut args.budget, "budget", || {
                meta.value()?.parse::<syn::Path>().map_err(|error| syn::Error::new(error.span(), BUDGET_HELP))
            }),
            "over_budget" => set_once(&meta, &mut args.over_budget, "over_budget", || {
                let value: Ident = meta.value()?.parse().map_err(|e| syn::Error::new(e.span(), OVER_BUDGET_HELP))?;
                match value.to_string().as_str() {
                    "approval" => Ok(value),
                    _ => Err(syn::Error::new(value.span(), OVER_BUDGET_HELP)),
                }
            }),
            "crate" => set_once(&meta, &mut args.krate, "crate", || {
                let text = string(&meta, CRATE_HELP)?;
                text.parse_with(syn::Path::parse_mod_style).map_err(|_| syn::Error::new(text.span(), CRATE_HELP))
            }),
            "on_error" => {
                if on_error_seen {
                    return Err(meta.error("duplicate argument `on_error`; give it once"));
                }
                on_error_seen = true;
                let policy: Ident = meta.value()?.parse().map_err(|e| syn::Error::new(e.span(), ON_ERROR_HELP))?;
                match policy.to_string().as_str() {
                    "keep" => args.keep_errors = Some(policy),
                    "release" => {}
                    _ => return Err(syn::Error::new(policy.span(), ON_ERROR_HELP)),
                }
                Ok(())
            }
            "compare" => {
                if compare_seen {
                    return Err(
                        meta.error("duplicate argument `compare`; list every compared field in one `compare = [...]`")
                    );
                }
                compare_seen = true;
                let value = meta.value()?;
                if !value.peek(syn::token::Bracket) {
                    return Err(value.error(COMPARE_HELP));
                }
                let content;
                syn::bracketed!(content in value);
                let fields = Punctuated::<FieldPath, Token![,]>::parse_terminated(&content)
                    .map_err(|error| syn::Error::new(error.span(), COMPARE_HELP))?;
                args.compare = fields.into_iter().collect();
                Ok(())
            }
            "json_names" => {
                if json_names_seen {
                    return Err(
                        meta.error("duplicate argument `json_names`; list every field in one `json_names = [...]`")
                    );
                }
                json_names_seen = true;
                let value = meta.value()?;
                if !value.peek(syn::token::Bracket) {
                    return Err(value.error(JSON_NAMES_HELP));
                }
                let content;
                syn::bracketed!(content in value);
                let entries = Punctuated::<JsonName, Token![,]>::parse_terminated(&content)
                    .map_err(|error| syn::Error::new(error.span(), JSON_NAMES_HELP))?;
                args.json_names = entries.into_iter().map(|entry| (entry.field, entry.name)).collect();
                Ok(())
            }
            other => Err(meta.error(format!("unknown argument `{other}`; {EXPECTED}"))),
        }
    });
    if let Err(error) = syn::parse::Parser::parse2(parser, tokens) {
        errors.push(error);
        args.complete = false;
    }
    args
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

const BUDGET_HELP: &str = "`budget` takes the path of a `static` budget, e.g. budget = REFUNDS for `static REFUNDS: idem::Budget = idem::Budget::count(\"refunds\", 20).per_day();`";

const OVER_BUDGET_HELP: &str = "`over_budget` takes `approval`: a call the budget has no room for asks a person instead of answering BUDGET_EXCEEDED (without `over_budget`, it answers BUDGET_EXCEEDED)";

const CRATE_HELP: &str = "`crate` takes the name your Cargo.toml gives idem as a string literal, e.g. crate = \"my_idem\" for `my_idem = { package = \"idem-tools\", ... }`";

const ON_ERROR_HELP: &str = "`on_error` takes `release` (the default: an error means the action did not happen, so a retry may run it) or `keep` (the error is the final answer, replayed to every retry)";

/// A duration argument, in milliseconds, with the literal's span.
fn duration(meta: &ParseNestedMeta, name: &str) -> syn::Result<(u64, Span)> {
    let text = string(meta, &format!("`{name}` takes a string literal: {DURATION_HELP}"))?;
    parse_duration(&text.value())
        .map(|ms| (ms, text.span()))
        .ok_or_else(|| syn::Error::new(text.span(), format!("invalid `{name} = {:?}`: {DURATION_HELP}", text.value())))
}

/// A string literal argument, with `message` instead of syn's bare "expected string literal".
fn string(meta: &ParseNestedMeta, message: &str) -> syn::Result<LitStr> {
    let value = meta.value()?;
    value.parse::<LitStr>().map_err(|error| syn::Error::new(error.span(), message))
}

const DURATION_HELP: &str =
    "expected a duration such as \"500ms\", \"30s\", \"5m\", \"2h\" or \"1d\": a whole number and a unit";

/// Parses `"500ms"`, `"30s"`, `"5m"`, `"2h"`, `"1d"` into milliseconds.
fn parse_duration(text: &str) -> Option<u64> {
    let text = text.trim();
    let digits = text.find(|c: char| !c.is_ascii_digit())?;
    let number: u64 = text[..digits].parse().ok()?;
    let unit_ms = match text[digits..].trim() {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return None,
    };
    number.checked_mul(unit_ms).filter(|&ms| ms > 0)
}

#[cfg(test)]
mod tests {
    use super::parse_duration;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Some(500));
        assert_eq!(parse_duration("30s"), Some(30_000));
        assert_eq!(parse_duration("5m"), Some(300_000));
        assert_eq!(parse_duration("2h"), Some(7_200_000));
        assert_eq!(parse_duration("1d"), Some(86_400_000));
        for bad in ["", "5", "m", "1.5s", "-1s", "0s", "5 minutes", "99999999999999999999d"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }
}
