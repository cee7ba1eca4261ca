//! The key template grammar: literal text and `<placeholder>`s.
//!
//! ```text
//! template    = { literal | placeholder }
//! placeholder = "<" path { ":" modifier } ">"
//! path        = ident { "." ident }        e.g. customer, req.customer
//! modifier    = "exact" | "hash"
//! ```
//!
//! Two placeholders must be separated by literal text holding a character that field
//! values never contain unescaped (any ASCII character other than letters, digits and
//! `- . _ ~ %`), so that distinct field values can never give the same key.

use std::fmt;

/// One piece of a template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Piece {
    Literal(String),
    Placeholder(Placeholder),
}

/// A placeholder: which value, and how to render it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Placeholder {
    /// The parameter (or pattern binding) and the field path below it.
    pub path: Vec<String>,
    /// `:exact`: no normalization.
    pub exact: bool,
    /// `:hash`: the value is replaced by its hash.
    pub hash: bool,
}

impl Placeholder {
    /// The path as written, e.g. `req.customer`.
    pub(crate) fn path_text(&self) -> String {
        self.path.join(".")
    }
}

impl fmt::Display for Placeholder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{}", self.path_text())?;
        if self.exact {
            f.write_str(":exact")?;
        }
        if self.hash {
            f.write_str(":hash")?;
        }
        f.write_str(">")
    }
}

/// What is wrong with a template. Each names the offending text exactly, because a
/// diagnostic can only point at the whole string literal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TemplateError {
    Empty,
    Unclosed { from: String },
    StrayClose { at: String },
    EmptyPlaceholder,
    BadPath { placeholder: String },
    UnknownModifier { placeholder: String, modifier: String },
    RepeatedModifier { placeholder: String, modifier: String },
    NoPlaceholder { template: String },
    NotSeparated { left: String, right: String, between: String },
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TemplateError::Empty => f.write_str(
                "the key template is empty; name the business action with its fields, e.g. key = \"invoice:<customer>:<period>\"",
            ),
            TemplateError::Unclosed { from } => {
                let name: String = from[1..].chars().take_while(|&c| c == '_' || c.is_ascii_alphanumeric()).collect();
                let name = if name.is_empty() { "customer" } else { &name };
                write!(f, "unclosed placeholder `{from}` in key template; close it with `>`, e.g. <{name}>")
            }
            TemplateError::StrayClose { at } => write!(
                f,
                "`>` without a matching `<` in key template at `{at}`; placeholders are written <name>"
            ),
            TemplateError::EmptyPlaceholder => {
                f.write_str("empty placeholder `<>` in key template; name a parameter inside it, e.g. <customer>")
            }
            TemplateError::BadPath { placeholder } => write!(
                f,
                "placeholder `{placeholder}` in key template is not a parameter name or field path; write <param> or <param.field>"
            ),
            TemplateError::UnknownModifier { placeholder, modifier } => write!(
                f,
                "unknown modifier `{modifier}` in placeholder `{placeholder}`; expected `exact` (no normalization) or `hash` (keep personal data out of keys)"
            ),
            TemplateError::RepeatedModifier { placeholder, modifier } => {
                write!(f, "modifier `{modifier}` is repeated in placeholder `{placeholder}`")
            }
            TemplateError::NoPlaceholder { template } => {
                let separator = if template.ends_with(|c: char| separates(&c.to_string())) { "" } else { ":" };
                write!(
                    f,
                    "key template \"{template}\" has no placeholder, so every call would share one key; name the fields that identify the action, e.g. \"{template}{separator}<customer>\""
                )
            }
            TemplateError::NotSeparated { left, right, between } => {
                let between = if between.is_empty() { "nothing".to_owned() } else { format!("`{between}`") };
                write!(
                    f,
                    "placeholders {left} and {right} are separated by {between}; put a separator such as `:` or `/` between them, so that different values can never give the same key"
                )
            }
        }
    }
}

/// Parses a key template.
pub(crate) fn parse(template: &str) -> Result<Vec<Piece>, TemplateError> {
    if template.is_empty() {
        return Err(TemplateError::Empty);
    }
    let mut pieces = Vec::new();
    let mut rest = template;
    while !rest.is_empty() {
        let open = rest.find('<');
        let close = rest.find('>');
        match (open, close) {
            (_, Some(c)) if open.is_none_or(|o| c < o) => {
                return Err(TemplateError::StrayClose { at: rest[..=c].to_owned() });
            }
            (None, _) => {
                pieces.push(Piece::Literal(rest.to_owned()));
                rest = "";
            }
            (Some(o), _) => {
                if o > 0 {
                    pieces.push(Piece::Literal(rest[..o].to_owned()));
                }
                let after = &rest[o + 1..];
                let end = match (after.find('>'), after.find('<')) {
                    (Some(end), next_open) if next_open.is_none_or(|n| end < n) => end,
                    _ => {
                        let from = after.find('<').map_or(&rest[o..], |n| &rest[o..o + 1 + n]);
                        return Err(TemplateError::Unclosed { from: from.to_owned() });
                    }
                };
                pieces.push(Piece::Placeholder(placeholder(&after[..end])?));
                rest = &after[end + 1..];
            }
        }
    }
    check_structure(template, &pieces)?;
    Ok(pieces)
}

fn placeholder(inner: &str) -> Result<Placeholder, TemplateError> {
    if inner.trim().is_empty() {
        return Err(TemplateError::EmptyPlaceholder);
    }
    let written = format!("<{inner}>");
    let mut parts = inner.split(':');
    let path_text = parts.next().unwrap_or_default().trim();
    let path: Vec<String> = path_text.split('.').map(str::to_owned).collect();
    if !path.iter().all(|segment| is_ident(segment)) {
        return Err(TemplateError::BadPath { placeholder: written });
    }
    let mut found = Placeholder { path, exact: false, hash: false };
    for modifier in parts {
        let flag = match modifier.trim() {
            "exact" => &mut found.exact,
            "hash" => &mut found.hash,
            other => {
                return Err(TemplateError::UnknownModifier { placeholder: written, modifier: other.to_owned() });
            }
        };
        if *flag {
            return Err(TemplateError::RepeatedModifier { placeholder: written, modifier: modifier.trim().to_owned() });
        }
        *flag = true;
    }
    Ok(found)
}

fn is_ident(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        && text != "_"
}

/// Whether literal text between two placeholders separates them: it must hold a character
/// that the runtime always escapes in values (see `idem::KeyPart` docs).
fn separates(literal: &str) -> bool {
    literal.chars().any(|c| c.is_ascii() && !c.is_ascii_alphanumeric() && !matches!(c, '-' | '.' | '_' | '~' | '%'))
}

fn check_structure(template: &str, pieces: &[Piece]) -> Result<(), TemplateError> {
    let mut previous: Option<&Placeholder> = None;
    let mut between = String::new();
    for piece in pieces {
        match piece {
            Piece::Literal(text) => between.push_str(text),
            Piece::Placeholder(current) => {
                if let Some(left) = previous
                    && !separates(&between)
                {
                    return Err(TemplateError::NotSeparated {
                        left: left.to_string(),
                        right: current.to_string(),
                        between,
                    });
                }
                previous = Some(current);
                between.clear();
            }
        }
    }
    if previous.is_none() {
        return Err(TemplateError::NoPlaceholder { template: template.to_owned() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(path: &[&str]) -> Piece {
        Piece::Placeholder(Placeholder {
            path: path.iter().map(|s| s.to_string()).collect(),
            exact: false,
            hash: false,
        })
    }

    fn lit(text: &str) -> Piece {
        Piece::Literal(text.to_owned())
    }

    #[test]
    fn parses_the_article_template() {
        assert_eq!(
            parse("invoice:<customer>:<period>").unwrap(),
            vec![lit("invoice:"), field(&["customer"]), lit(":"), field(&["period"])]
        );
    }

    #[test]
    fn parses_field_paths_and_modifiers() {
        let pieces = parse("<req.customer>/<email:hash>/<sku:exact:hash>").unwrap();
        assert_eq!(pieces[0], field(&["req", "customer"]));
        assert_eq!(pieces[2], Piece::Placeholder(Placeholder { path: vec!["email".into()], exact: false, hash: true }));
        assert_eq!(pieces[4], Piece::Placeholder(Placeholder { path: vec!["sku".into()], exact: true, hash: true }));
    }

    #[test]
    fn rejects_malformed_templates() {
        assert_eq!(parse(""), Err(TemplateError::Empty));
        assert_eq!(parse("invoice:<customer"), Err(TemplateError::Unclosed { from: "<customer".into() }));
        assert_eq!(parse("a:<b:<c>"), Err(TemplateError::Unclosed { from: "<b:".into() }));
        assert_eq!(parse("invoice:customer>"), Err(TemplateError::StrayClose { at: "invoice:customer>".into() }));
        assert_eq!(parse("invoice:<>"), Err(TemplateError::EmptyPlaceholder));
        assert_eq!(parse("x:<1st>"), Err(TemplateError::BadPath { placeholder: "<1st>".into() }));
        assert_eq!(parse("x:<a..b>"), Err(TemplateError::BadPath { placeholder: "<a..b>".into() }));
        assert_eq!(
            parse("x:<sku:upper>"),
            Err(TemplateError::UnknownModifier { placeholder: "<sku:upper>".into(), modifier: "upper".into() })
        );
        assert_eq!(
            parse("x:<sku:hash:hash>"),
            Err(TemplateError::RepeatedModifier { placeholder: "<sku:hash:hash>".into(), modifier: "hash".into() })
        );
        assert_eq!(parse("invoice"), Err(TemplateError::NoPlaceholder { template: "invoice".into() }));
    }

    #[test]
    fn placeholders_need_a_separator() {
        assert!(matches!(parse("<a><b>"), Err(TemplateError::NotSeparated { .. })));
        assert!(matches!(parse("<a>-<b>"), Err(TemplateError::NotSeparated { .. })));
        assert!(matches!(parse("<a>%<b>"), Err(TemplateError::NotSeparated { .. })));
        assert!(parse("<a>:<b>").is_ok());
        assert!(parse("<a>-x/<b>").is_ok());
        assert!(parse("<a> <b>").is_ok());
    }

    #[test]
    fn never_panics_on_odd_text() {
        for text in ["<", ">", "<<>>", "<:>", "<a:>", "é<ü>", "<a.>", "<.a>", "::", "<a>:<b", "\u{0}<a>"] {
            let _ = parse(text);
        }
    }
}
