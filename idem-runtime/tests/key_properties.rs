//! Properties of key building: distinct field tuples never give the same key, the same
//! action spelled differently always does, and nothing panics.

use idem_runtime::__private::{FieldMode, KeyPart, Segment, build_key, normalize};
use proptest::prelude::*;

/// Field values drawn from the characters that make escaping hard: separators, the escape
/// character itself, spaces, case, and non-ASCII text that NFKC changes.
fn value() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just(':'),
            Just('/'),
            Just('%'),
            Just(' '),
            Just('-'),
            Just('.'),
            Just('a'),
            Just('B'),
            Just('é'),
            Just('ﬁ'),
            Just('Ａ'),
            Just('ß'),
            Just('\u{3000}'),
            Just('2'),
            any::<char>(),
        ],
        0..8,
    )
    .prop_map(|chars| chars.into_iter().collect())
}

/// Templates of one to four fields, separated by literal text that holds a separator.
fn template() -> impl Strategy<Value = Vec<Segment>> {
    let separator = prop_oneof![Just(":"), Just("/"), Just("|"), Just("a:b"), Just("-:"), Just(" "), Just("#x")];
    let mode = prop_oneof![
        Just(FieldMode { normalize: true, hash: false }),
        Just(FieldMode { normalize: false, hash: false }),
        Just(FieldMode { normalize: true, hash: true }),
    ];
    (prop_oneof![Just(""), Just("invoice:"), Just("x")], proptest::collection::vec((separator, mode), 1..5)).prop_map(
        |(prefix, fields)| {
            let mut segments = Vec::new();
            if !prefix.is_empty() {
                segments.push(Segment::Literal(prefix));
            }
            for (i, (separator, mode)) in fields.into_iter().enumerate() {
                if i > 0 {
                    segments.push(Segment::Literal(separator));
                }
                segments.push(Segment::Field("f", mode));
            }
            segments
        },
    )
}

fn modes(template: &[Segment]) -> Vec<FieldMode> {
    template
        .iter()
        .filter_map(|s| match s {
            Segment::Field(_, mode) => Some(*mode),
            Segment::Literal(_) => None,
        })
        .collect()
}

/// What identifies a field's value: the text after normalization (or as is, for exact).
fn identity(mode: FieldMode, value: &str) -> String {
    if mode.normalize { normalize(value).into_owned() } else { value.to_owned() }
}

fn key(template: &[Segment], values: &[String]) -> Option<String> {
    let parts: Vec<&dyn KeyPart> = values.iter().map(|v| v as &dyn KeyPart).collect();
    build_key("t", template, &parts).ok().map(|k| k.as_str().to_owned())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn distinct_fields_never_share_a_key(
        template in template(),
        a in proptest::collection::vec(value(), 4),
        b in proptest::collection::vec(value(), 4),
    ) {
        let modes = modes(&template);
        let (a, b) = (&a[..modes.len()], &b[..modes.len()]);
        if let (Some(key_a), Some(key_b)) = (key(&template, a), key(&template, b)) {
            let same_action = modes.iter().zip(a.iter().zip(b)).all(|(m, (x, y))| identity(*m, x) == identity(*m, y));
            prop_assert_eq!(same_action, key_a == key_b, "{:?} {:?} -> {} {}", a, b, key_a, key_b);
        }
    }

    #[test]
    fn normalization_is_idempotent(text in value()) {
        let once = normalize(&text).into_owned();
        prop_assert_eq!(normalize(&once).into_owned(), once);
    }

    #[test]
    fn a_field_is_rejected_exactly_when_it_is_empty_after_normalization(
        template in template(),
        values in proptest::collection::vec(value(), 4),
    ) {
        let modes = modes(&template);
        let values = &values[..modes.len()];
        let any_empty = modes.iter().zip(values).any(|(m, v)| identity(*m, v).is_empty());
        prop_assert_eq!(key(&template, values).is_none(), any_empty);
    }
}

/// Text from the corners of Unicode that normalization and case folding treat specially:
/// combining marks, Hangul jamo (NFKC composes them), compatibility forms (fullwidth,
/// ligatures, math letters), letters whose case mappings change length or composition
/// (`İ`, `ß`, `ẞ`, final sigma, `ǅ`), and the many kinds of whitespace that trimming meets.
fn tricky_text() -> impl Strategy<Value = String> {
    let c = prop_oneof![
        proptest::char::range('\u{300}', '\u{36F}'),     // combining diacritics
        proptest::char::range('\u{1100}', '\u{11FF}'),   // Hangul jamo
        proptest::char::range('\u{3130}', '\u{318F}'),   // Hangul compatibility jamo
        proptest::char::range('\u{AC00}', '\u{AC40}'),   // Hangul syllables
        proptest::char::range('\u{FF00}', '\u{FFEF}'),   // halfwidth and fullwidth forms
        proptest::char::range('\u{FB00}', '\u{FB4F}'),   // ligatures
        proptest::char::range('\u{1D400}', '\u{1D4FF}'), // mathematical letters
        proptest::char::range('\u{2000}', '\u{206F}'),   // general punctuation, spaces
        proptest::char::range('\u{0370}', '\u{03FF}'),   // Greek
        proptest::char::range('\u{1E00}', '\u{1EFF}'),   // Latin extended additional
        prop_oneof![
            Just('İ'),
            Just('ı'),
            Just('ß'),
            Just('ẞ'),
            Just('ς'),
            Just('Σ'),
            Just('ǅ'),
            Just('Ω'),
            Just('K'),
            Just('\u{3000}'),
            Just('\u{A0}'),
            Just('\u{FEFF}'),
            Just('\u{85}'),
            Just('\u{180E}'),
            Just(' '),
            Just('\t'),
            Just('a'),
            Just('A'),
            Just(':'),
            Just('%'),
        ],
    ];
    proptest::collection::vec(c, 0..10).prop_map(|chars| chars.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Any string at all: normalizing never panics, trims, and is stable; a key from it is
    /// refused exactly when the value is empty after normalization; a step key never panics.
    #[test]
    fn any_string_normalizes_stably_and_builds_a_key_or_is_refused(
        text in prop_oneof![any::<String>(), tricky_text()],
        exact in any::<bool>(),
        step in any::<String>(),
    ) {
        let once = normalize(&text).into_owned();
        prop_assert_eq!(once.trim(), once.as_str(), "{:?} normalizes to untrimmed {:?}", text, once);
        prop_assert_eq!(normalize(&once).into_owned(), once.clone(), "{:?}: normalizing again changes it", text);
        let mode = FieldMode { normalize: !exact, hash: false };
        let template = [Segment::Literal("t:"), Segment::Field("f", mode)];
        let built = build_key("t", &template, &[&text as &dyn KeyPart]);
        let empty = if exact { text.is_empty() } else { once.is_empty() };
        prop_assert_eq!(built.is_err(), empty, "{:?}: {:?}", text, built);
        if let Ok(key) = built {
            prop_assert!(key.step(&step).len() > key.as_str().len(), "a step key is longer");
        }
    }

    /// Two spellings whose normalized forms agree give one key, whatever the characters.
    #[test]
    fn tricky_text_keys_follow_normalization(a in tricky_text(), b in tricky_text()) {
        let template = [Segment::Literal("t:"), Segment::Field("a", FieldMode { normalize: true, hash: false })];
        let key = |v: &String| build_key("t", &template, &[v as &dyn KeyPart]).ok().map(|k| k.as_str().to_owned());
        if let (Some(key_a), Some(key_b)) = (key(&a), key(&b)) {
            prop_assert_eq!(normalize(&a) == normalize(&b), key_a == key_b, "{:?} {:?}", a, b);
        }
    }
}
