//! Rust tokens as a person writes them, for messages and descriptions that quote the
//! user's code.

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

/// An expression as a person writes it: `req.amount > 500.0`, where the tokens print as
/// `req . amount > 500.0`. A space between tokens, except after `.`, `:`, `!` and the first
/// half of a joint operator (`::`, `>=`, `&&`), before `.`, `,` and `:`, before a macro's
/// `!`, and before the parentheses or brackets of a call or an index.
pub(crate) fn written(tokens: TokenStream) -> String {
    let mut out = String::new();
    let (mut glued, mut operand) = (true, false);
    for token in tokens {
        let (text, tight) = match &token {
            TokenTree::Group(group) => {
                let (open, close) = match group.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::Brace => ("{ ", " }"),
                    Delimiter::None => ("", ""),
                };
                (format!("{open}{}{close}", written(group.stream())), operand && open != "{ ")
            }
            TokenTree::Punct(punct) => {
                (punct.to_string(), matches!(punct.as_char(), '.' | ',' | ':') || punct.as_char() == '!' && operand)
            }
            other => (other.to_string(), false),
        };
        if !(glued || tight) {
            out.push(' ');
        }
        out.push_str(&text);
        glued = matches!(&token, TokenTree::Punct(p) if matches!(p.as_char(), '.' | ':' | '!') || p.spacing() == Spacing::Joint);
        operand = matches!(token, TokenTree::Ident(_) | TokenTree::Group(_));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::written;

    #[test]
    fn expressions_read_as_written() {
        for text in [
            "required",
            "amount > 1000.0",
            "req.amount > 500.0",
            "\"Pay <supplier> EUR\"",
            "notify::approvers",
            "args.amount >= limit(1, 2) && !req.flag",
            "is_large!(amount)",
        ] {
            assert_eq!(written(text.parse().unwrap()), text);
        }
    }
}
