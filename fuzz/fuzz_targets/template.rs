//! Fuzzes the key template parser behind `#[idempotent(key = "...")]`: no input panics,
//! every error renders its message, and every template that parses round-trips (its
//! pieces, rendered back to text, parse to the same pieces) and keeps the grammar's
//! promises (placeholders are identifier paths, two placeholders are separated, there is
//! at least one).
//!
//! The parser lives in the proc-macro crate, which cannot be linked as a library, so its
//! source file is included here as a module.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../idem-macros/src/template.rs"]
mod template;

use template::{Piece, parse};

fn render(pieces: &[Piece]) -> String {
    pieces
        .iter()
        .map(|piece| match piece {
            Piece::Literal(text) => text.clone(),
            Piece::Placeholder(placeholder) => placeholder.to_string(),
        })
        .collect()
}

fn is_ident(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        && text != "_"
}

fn separates(literal: &str) -> bool {
    literal.chars().any(|c| c.is_ascii() && !c.is_ascii_alphanumeric() && !matches!(c, '-' | '.' | '_' | '~' | '%'))
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let pieces = match parse(&text) {
        Ok(pieces) => pieces,
        Err(error) => {
            assert!(!error.to_string().is_empty());
            return;
        }
    };
    let mut placeholders = 0;
    let mut between: Option<String> = None;
    for (i, piece) in pieces.iter().enumerate() {
        match piece {
            Piece::Literal(literal) => {
                assert!(!literal.is_empty() && !literal.contains(['<', '>']), "{text:?}: literal {literal:?}");
                assert!(!matches!(pieces.get(i + 1), Some(Piece::Literal(_))), "{text:?}: two literals in a row");
                if let Some(between) = &mut between {
                    between.push_str(literal);
                }
            }
            Piece::Placeholder(placeholder) => {
                assert!(placeholder.path.iter().all(|segment| is_ident(segment)), "{text:?}: {placeholder:?}");
                if let Some(between) = &between {
                    assert!(separates(between), "{text:?}: placeholders separated by {between:?}");
                }
                between = Some(String::new());
                placeholders += 1;
            }
        }
    }
    assert!(placeholders > 0, "{text:?}: no placeholder");
    let rendered = render(&pieces);
    assert_eq!(parse(&rendered).as_ref(), Ok(&pieces), "{text:?} rendered as {rendered:?}");
});
