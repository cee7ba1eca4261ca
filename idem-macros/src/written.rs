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

    #[test]
    fn every_changed_spelling_is_shown_in_one_run_and_the_rest_is_read() {
        let mut errors = crate::errors::Errors::default();
        let attr = crate::attr::parse(
            quote::quote!(
                key = "pay:<supplier>",
                approval = req.amount > 1000.0,
                approval_text = "pay <supplier>",
                on_approval_request = notify,
                over_budget = approval,
                store = self.store
            ),
            &mut errors,
        );
        let messages: Vec<String> = errors.into_error().expect("refused").into_iter().map(|e| e.to_string()).collect();
        assert_eq!(messages.len(), 4, "{messages:?}");
        assert!(messages[0].contains("write `approval(when = req.amount > 1000.0)`"), "{}", messages[0]);
        assert!(messages[1].contains("write `approval(text = \"pay <supplier>\", ...)`"), "{}", messages[1]);
        assert!(messages[2].contains("write `approval(notify = notify, ...)`"), "{}", messages[2]);
        assert!(messages[3].contains("write `approval(over_budget, ...)`"), "{}", messages[3]);
        assert!(attr.store.is_some() && attr.complete, "the arguments after them are read");
        assert!(attr.approval.is_none());
    }
}
