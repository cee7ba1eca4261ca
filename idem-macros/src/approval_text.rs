//! The grammar of an approval request's text template (`"Pay <supplier> <amount> EUR"`):
//! literal text and `<param>` or `<param.field>` placeholders, each written with `Display`.
//! A pure function; which names a placeholder may use is `valid.rs`'s rule.

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
