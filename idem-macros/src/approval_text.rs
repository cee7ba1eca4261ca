//! The grammar of an approval request's text template (`"Pay <supplier> <amount> EUR"`):
//! literal text and `<param>` or `<param.field>` placeholders, each written with `Display`.
//! The same grammar serves `describe = "..."`. [`Checked::check`] holds the rule on names:
//! each placeholder names a parameter, or a field path of one.

use syn::{Ident, LitStr};

use crate::errors::Errors;
use crate::params::{self, Binding};

/// One piece of the text, in order.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Piece {
    Literal(String),
    /// `<...>`: what is inside, trimmed, and its path when it is one (`["req", "amount"]`).
    Placeholder {
        inside: String,
        path: Option<Vec<String>>,
    },
    /// A `<` with no `>` after it: the text from it on. Always the last piece.
    Unclosed(String),
}

/// Where a template is written, for its messages.
pub(crate) struct Checked {
    /// The setting, as the messages name it: "`approval(text = ...)`".
    pub setting: &'static str,
    /// Two placeholders to show: "<amount> or <req.amount>".
    pub example: &'static str,
}

impl Checked {
    /// Reports, at the literal, each placeholder that does not name a parameter or a field
    /// path of one, and a `<` that is not closed; `hint` ends the unknown-name message.
    pub(crate) fn check(&self, text: &LitStr, fn_name: &Ident, bindings: &[Binding], hint: &str, errors: &mut Errors) {
        let Checked { setting, example } = self;
        for piece in parse(&text.value()) {
            let message = match piece {
                Piece::Literal(_) => continue,
                Piece::Unclosed(rest) => format!("unclosed placeholder in {setting}: `{rest}` has no `>`"),
                Piece::Placeholder { inside, path: None } => {
                    format!("placeholder <{inside}> in {setting} must name a parameter or a field path, e.g. {example}")
                }
                Piece::Placeholder { inside, path: Some(path) } => {
                    if bindings.iter().any(|binding| binding.ident == path[0]) {
                        continue;
                    }
                    format!(
                        "unknown placeholder <{inside}> in {setting}; {fn_name} has no parameter {} (available: {}){hint}",
                        path[0],
                        params::names(bindings)
                    )
                }
            };
            errors.at(text.span(), message);
        }
    }
}

pub(crate) fn parse(text: &str) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('<') {
        if open > 0 {
            pieces.push(Piece::Literal(rest[..open].to_owned()));
        }
        let Some(close) = rest[open..].find('>') else {
            pieces.push(Piece::Unclosed(rest[open..].to_owned()));
            return pieces;
        };
        let inside = rest[open + 1..open + close].trim();
        let segments: Vec<&str> = inside.split('.').collect();
        let valid = !inside.is_empty() && segments.iter().all(|segment| syn::parse_str::<syn::Ident>(segment).is_ok());
        let path = valid.then(|| segments.iter().map(|segment| (*segment).to_owned()).collect());
        pieces.push(Piece::Placeholder { inside: inside.to_owned(), path });
        rest = &rest[open + close + 1..];
    }
    if !rest.is_empty() {
        pieces.push(Piece::Literal(rest.to_owned()));
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placeholder(inside: &str, path: Option<&[&str]>) -> Piece {
        Piece::Placeholder {
            inside: inside.to_owned(),
            path: path.map(|path| path.iter().map(|segment| (*segment).to_owned()).collect()),
        }
    }

    #[test]
    fn literals_and_placeholders() {
        assert_eq!(
            parse("Pay <supplier> < req.amount > EUR"),
            [
                Piece::Literal("Pay ".into()),
                placeholder("supplier", Some(&["supplier"])),
                Piece::Literal(" ".into()),
                placeholder("req.amount", Some(&["req", "amount"])),
                Piece::Literal(" EUR".into()),
            ]
        );
        assert_eq!(parse("plain"), [Piece::Literal("plain".into())]);
    }

    #[test]
    fn bad_placeholders_are_kept_for_their_message() {
        assert_eq!(parse("<>"), [placeholder("", None)]);
        assert_eq!(parse("<a b>"), [placeholder("a b", None)]);
        assert_eq!(parse("<a.>"), [placeholder("a.", None)]);
        assert_eq!(
            parse("x <a> <b"),
            [
                Piece::Literal("x ".into()),
                placeholder("a", Some(&["a"])),
                Piece::Literal(" ".into()),
                Piece::Unclosed("<b".into())
            ]
        );
    }
}
