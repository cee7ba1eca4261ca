//! The shapes an argument's value takes: a string, a duration, a list of field paths, a list
//! of JSON names, the facade's path. Each reports its own mistakes with what to write.

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::punctuated::Punctuated;
use syn::{Ident, LitStr, Token};

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

    /// The segments as strings, as a key placeholder's path is.
    pub(crate) fn path(&self) -> Vec<String> {
        self.segments.iter().map(Ident::to_string).collect()
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
pub(crate) struct JsonName {
    pub field: FieldPath,
    pub name: LitStr,
}

impl syn::parse::Parse for JsonName {
    fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
        let field = input.parse()?;
        input.parse::<Token![=]>()?;
        Ok(JsonName { field, name: input.parse()? })
    }
}

/// A duration, in milliseconds, with its literal's span (where a rule about it points).
#[derive(Clone, Copy)]
pub(crate) struct Duration {
    pub ms: u64,
    pub span: Span,
}

/// `[entry, ...]` after `name = `, each entry parsed as `T`; `help` replaces syn's bare
/// "expected ..." messages.
pub(crate) fn list<T: syn::parse::Parse>(meta: &ParseNestedMeta, help: &str) -> syn::Result<Vec<T>> {
    let value = meta.value()?;
    if !value.peek(syn::token::Bracket) {
        return Err(value.error(help));
    }
    let content;
    syn::bracketed!(content in value);
    let entries =
        Punctuated::<T, Token![,]>::parse_terminated(&content).map_err(|error| syn::Error::new(error.span(), help))?;
    Ok(entries.into_iter().collect())
}

/// A duration argument `name = "30s"`.
pub(crate) fn duration(meta: &ParseNestedMeta, name: &str) -> syn::Result<Duration> {
    let text = string(meta, &format!("`{name}` takes a string literal: {DURATION_HELP}"))?;
    parse_duration(&text.value())
        .map(|ms| Duration { ms, span: text.span() })
        .ok_or_else(|| syn::Error::new(text.span(), format!("invalid `{name} = {:?}`: {DURATION_HELP}", text.value())))
}

/// A string literal argument, with `message` instead of syn's bare "expected string literal".
pub(crate) fn string(meta: &ParseNestedMeta, message: &str) -> syn::Result<LitStr> {
    let value = meta.value()?;
    value.parse::<LitStr>().map_err(|error| syn::Error::new(error.span(), message))
}

/// `crate = "my_idem"`: the facade's path, as a string literal (the path's tokens carry the
/// literal's span). Shared by `#[idempotent]` and `#[idem::tasks]`.
pub(crate) fn krate(meta: &ParseNestedMeta) -> syn::Result<syn::Path> {
    let text = string(meta, CRATE_HELP)?;
    text.parse_with(syn::Path::parse_mod_style).map_err(|_| syn::Error::new(text.span(), CRATE_HELP))
}

const CRATE_HELP: &str = "`crate` takes the name your Cargo.toml gives idem as a string literal, e.g. crate = \"my_idem\" for `my_idem = { package = \"idem-tools\", ... }`";

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
