//! Properties of the key template parser, the bounded CI run of what `fuzz/` fuzzes: no
//! text makes it panic, every error renders a message, every template that parses keeps
//! the grammar's promises and round-trips, and the separator rule it enforces is enough
//! for the runtime's escaping: distinct field values never give the same key.

use proptest::prelude::*;

use idem_runtime::__private::normalize;
use idem_runtime::__private::{FieldMode, KeyPart, Segment, build_key};

use crate::template::{Piece, TemplateError, parse};

/// The text of a template, from its pieces.
fn render(pieces: &[Piece]) -> String {
    pieces
        .iter()
        .map(|piece| match piece {
            Piece::Literal(text) => text.clone(),
            Piece::Placeholder(placeholder) => placeholder.to_string(),
        })
        .collect()
}

/// Template-ish text: the grammar's own characters and words, separators and
/// non-separators, whitespace, unicode (including characters NFKC turns into `<`, `>`,
/// `:` or `.`), and now and then any character at all.
fn template_text() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        4 => prop_oneof![
            Just("<"), Just(">"), Just(":"), Just("."), Just("/"), Just("-"), Just("%"), Just("_"), Just("~"),
            Just(" "), Just("a"), Just("b"), Just("req"), Just("1"), Just("exact"), Just("hash"), Just("é"),
            Just("\u{FF1C}"), Just("\u{FF1E}"), Just("\u{FF1A}"), Just("\u{3000}"), Just("\u{0}"), Just("\n"),
        ]
        .prop_map(str::to_owned),
        3 => prop_oneof![
            Just("<a>"), Just("<b.c>"), Just("<req.customer>"), Just("<x:exact>"), Just("<y:hash>"),
            Just("<z:exact:hash>"), Just("< w >"), Just("<_v1 : hash>"), Just("invoice:"), Just(":"), Just("/"),
        ]
        .prop_map(str::to_owned),
        1 => any::<char>().prop_map(String::from),
    ];
    prop_oneof![
        4 => proptest::collection::vec(token, 0..12).prop_map(|tokens| tokens.concat()),
        1 => any::<String>(),
    ]
}

/// Whether literal text between two placeholders holds a character that the runtime
/// always escapes in field values (`idem_runtime`'s `is_unreserved` says which stand for
/// themselves).
fn separates(literal: &str) -> bool {
    literal.chars().any(|c| c.is_ascii() && !c.is_ascii_alphanumeric() && !matches!(c, '-' | '.' | '_' | '~' | '%'))
}

fn is_ident(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        && text != "_"
}

/// The runtime form of parsed pieces, as the expansion emits it.
fn segments(pieces: &[Piece]) -> Vec<Segment> {
    let leak = |text: String| -> &'static str { Box::leak(text.into_boxed_str()) };
    pieces
        .iter()
        .map(|piece| match piece {
            Piece::Literal(text) => Segment::Literal(leak(text.clone())),
            Piece::Placeholder(p) => {
                Segment::Field(leak(p.path_text()), FieldMode { normalize: !p.exact, hash: p.hash })
            }
        })
        .collect()
}

/// Field values that make escaping hard: separators, the escape character, escape-like
/// text, whitespace, case, text that NFKC changes.
fn value() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just(":"),
            Just("/"),
            Just("%"),
            Just("%3A"),
            Just(" "),
            Just("-"),
            Just("."),
            Just("a"),
            Just("B"),
            Just("é"),
            Just("\u{FF1A}"),
            Just("<"),
            Just(">"),
            Just("\u{0}"),
            Just("ß"),
            Just("2"),
            any::<char>().prop_map(|c| Box::leak(c.to_string().into_boxed_str()) as &str),
        ],
        0..6,
    )
    .prop_map(|parts| parts.concat())
}

fn identity(mode: FieldMode, value: &str) -> String {
    if mode.normalize { normalize(value).into_owned() } else { value.to_owned() }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn parsing_never_panics_and_valid_templates_round_trip(text in template_text()) {
        let pieces = match parse(&text) {
            Ok(pieces) => pieces,
            Err(error) => {
                prop_assert!(!error.to_string().is_empty());
                if let TemplateError::Unclosed { from } = &error {
                    prop_assert!(text.contains(from.as_str()), "{:?} names {:?}", text, from);
                }
                return Ok(());
            }
        };
        let mut placeholders = 0;
        let mut between: Option<String> = None;
        for (i, piece) in pieces.iter().enumerate() {
            match piece {
                Piece::Literal(literal) => {
                    prop_assert!(!literal.is_empty() && !literal.contains(['<', '>']), "{:?}: {:?}", text, literal);
                    prop_assert!(text.contains(literal.as_str()), "{:?}: literal {:?} not in the text", text, literal);
                    prop_assert!(!matches!(pieces.get(i + 1), Some(Piece::Literal(_))), "{:?}", text);
                    if let Some(between) = &mut between {
                        between.push_str(literal);
                    }
                }
                Piece::Placeholder(placeholder) => {
                    prop_assert!(placeholder.path.iter().all(|s| is_ident(s)), "{:?}: {:?}", text, placeholder);
                    if let Some(between) = &between {
                        prop_assert!(separates(between), "{:?}: placeholders separated by {:?}", text, between);
                    }
                    between = Some(String::new());
                    placeholders += 1;
                }
            }
        }
        prop_assert!(placeholders > 0);
        let rendered = render(&pieces);
        prop_assert_eq!(parse(&rendered), Ok(pieces), "{:?} rendered as {:?}", text, rendered);
    }
}

proptest! {
    // Fewer cases: each builds and normalizes a dozen keys, which is slow in debug builds.
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    /// Whatever template the parser accepts, the runtime gives two tuples of field values
    /// the same key exactly when they name the same action.
    #[test]
    fn accepted_templates_never_give_two_actions_one_key(
        (text, pieces) in template_text().prop_filter_map("a template that parses", |text| {
            parse(&text).ok().map(|pieces| (text, pieces))
        }),
        a in proptest::collection::vec(value(), 6),
        b in proptest::collection::vec(value(), 6),
        how in (any::<u8>(), any::<u8>(), any::<u8>()),
    ) {
        let template = segments(&pieces);
        let modes: Vec<FieldMode> = template
            .iter()
            .filter_map(|s| match s {
                Segment::Field(_, mode) => Some(*mode),
                Segment::Literal(_) => None,
            })
            .collect();
        prop_assume!(modes.len() <= 6);
        // The second tuple: unrelated, or the first with one field changed, or the first
        // with a boundary moved (characters shifted from the end of one field to the start
        // of the next, or back), the classic way two tuples collide when fields are joined.
        let (i, n) = (usize::from(how.1) % modes.len(), usize::from(how.2) % 4);
        let b: Vec<String> = match how.0 % 4 {
            0 => b,
            1 => {
                let mut near = a.clone();
                near[i] = b[0].clone();
                near
            }
            shift if modes.len() > 1 => {
                let (i, mut near) = (i % (modes.len() - 1), a.clone());
                let (left, right) = (near[i].chars().collect::<Vec<_>>(), near[i + 1].chars().collect::<Vec<_>>());
                if shift == 2 {
                    let n = n.min(left.len());
                    near[i] = left[..left.len() - n].iter().collect();
                    near[i + 1] = left[left.len() - n..].iter().chain(&right).collect();
                } else {
                    let n = n.min(right.len());
                    near[i] = left.iter().chain(&right[..n]).collect();
                    near[i + 1] = right[n..].iter().collect();
                }
                near
            }
            _ => b,
        };
        let key = |values: &[String]| {
            let parts: Vec<&dyn KeyPart> = values[..modes.len()].iter().map(|v| v as &dyn KeyPart).collect();
            build_key("t", &template, &parts).map(|key| key.as_str().to_owned())
        };
        if let (Ok(key_a), Ok(key_b)) = (key(&a), key(&b)) {
            let same = modes.iter().zip(a.iter().zip(&b)).all(|(m, (x, y))| identity(*m, x) == identity(*m, y));
            prop_assert_eq!(same, key_a == key_b, "{:?}: {:?} -> {} and {:?} -> {}", text, a, key_a, b, key_b);
        }
    }
}
