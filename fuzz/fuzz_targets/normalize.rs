//! Fuzzes key normalization and key building: no input panics; normalizing is idempotent
//! and trims; a key is refused exactly when a field is empty after normalization; and two
//! tuples of field values give the same key exactly when they name the same action (the
//! same values after normalization, or exactly the same for `:exact` fields).

#![no_main]

use idem_runtime::__private::{FieldMode, KeyPart, Segment, build_key, normalize};
use libfuzzer_sys::fuzz_target;

const NORMAL: FieldMode = FieldMode { normalize: true, hash: false };
const EXACT: FieldMode = FieldMode { normalize: false, hash: false };
const HASH: FieldMode = FieldMode { normalize: true, hash: true };

/// Templates as the macro emits them: literals that separate their fields.
const TEMPLATES: &[&[Segment]] = &[
    &[Segment::Literal("invoice:"), Segment::Field("a", NORMAL), Segment::Literal(":"), Segment::Field("b", NORMAL)],
    &[Segment::Field("a", EXACT), Segment::Literal("/"), Segment::Field("b", NORMAL)],
    &[Segment::Literal("x"), Segment::Field("a", HASH), Segment::Literal(" "), Segment::Field("b", EXACT)],
    &[
        Segment::Field("a", NORMAL),
        Segment::Literal("-:"),
        Segment::Field("b", NORMAL),
        Segment::Literal("|"),
        Segment::Field("c", EXACT),
    ],
    &[Segment::Literal("one:"), Segment::Field("a", NORMAL)],
];

fn modes(template: &[Segment]) -> Vec<FieldMode> {
    template
        .iter()
        .filter_map(|segment| match segment {
            Segment::Field(_, mode) => Some(*mode),
            Segment::Literal(_) => None,
        })
        .collect()
}

fn identity(mode: FieldMode, value: &str) -> String {
    if mode.normalize { normalize(value).into_owned() } else { value.to_owned() }
}

/// `b` as the fuzzer gave it, or `a` with a boundary moved: characters shifted from the
/// end of one field to the start of the next, the classic way joined fields collide.
fn second_tuple(a: &[String], b: Vec<String>, shift: u8) -> Vec<String> {
    if shift & 1 == 0 || a.len() < 2 {
        return b;
    }
    let i = usize::from(shift >> 1) % (a.len() - 1);
    let n = usize::from(shift >> 4);
    let (left, right): (Vec<char>, Vec<char>) = (a[i].chars().collect(), a[i + 1].chars().collect());
    let n = n.min(left.len());
    let mut moved = a.to_vec();
    moved[i] = left[..left.len() - n].iter().collect();
    moved[i + 1] = left[left.len() - n..].iter().chain(&right).collect();
    moved
}

fuzz_target!(|input: (u8, u8, Vec<String>, Vec<String>)| {
    let (choice, shift, a, b) = input;
    for value in a.iter().chain(&b) {
        let once = normalize(value).into_owned();
        assert_eq!(once.trim(), once, "{value:?}");
        assert_eq!(normalize(&once), once, "{value:?} normalized is not stable");
    }
    let template = TEMPLATES[usize::from(choice) % TEMPLATES.len()];
    let modes = modes(template);
    let fields = |values: &[String]| -> Vec<String> {
        (0..modes.len()).map(|i| values.get(i).cloned().unwrap_or_default()).collect()
    };
    let a = fields(&a);
    let b = second_tuple(&a, fields(&b), shift);
    let key = |values: &[String]| {
        let parts: Vec<&dyn KeyPart> = values.iter().map(|v| v as &dyn KeyPart).collect();
        build_key("fuzz", template, &parts)
    };
    let (key_a, key_b) = (key(&a), key(&b));
    for (values, key) in [(&a, &key_a), (&b, &key_b)] {
        let empty = modes.iter().zip(values.iter()).any(|(mode, value)| identity(*mode, value).is_empty());
        assert_eq!(key.is_err(), empty, "{values:?}: {key:?}");
        if let Ok(key) = key {
            for step in values {
                let _ = key.step(step);
            }
        }
    }
    if let (Ok(key_a), Ok(key_b)) = (key_a, key_b) {
        let same = modes.iter().zip(a.iter().zip(&b)).all(|(mode, (x, y))| identity(*mode, x) == identity(*mode, y));
        assert_eq!(same, key_a == key_b, "{a:?} -> {key_a}, {b:?} -> {key_b}");
    }
});
