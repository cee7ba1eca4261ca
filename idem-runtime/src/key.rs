//! Keys: from a tool's template and its key fields to one normalized, escaped string.
//!
//! A key names the business action (`invoice:acme:2026-10`), never the attempt. Field
//! values are normalized so that the same action spelled differently on a retry
//! (`" ACME "`, `"acme"`) gives the same key, and escaped so that different field tuples
//! never do (`("a:b", "c")` and `("a", "b:c")`).

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt::{self, Write as _};
use std::sync::Arc;

use sha2::{Digest, Sha256};
use unicode_normalization::UnicodeNormalization;

use crate::error::{Error, ErrorCode};
use crate::json_names::JsonNames;

/// A value that can be a key field: it spells a business identity the same way on every
/// attempt.
///
/// Implemented for strings, integers, `bool` and `char`, and through references and
/// smart pointers. Implement it for your own identifier types (a `CustomerId` newtype)
/// by writing their stable text form. Do not implement it for clock readings, floats or
/// per-call random values: a retry would get a different key and run the action again.
///
/// Such a type can also make the model's wording stable: its `FromStr` and `Deserialize`
/// parse what a model may write ("October 2026", "oct 2026", "2026-10") into one value
/// and refuse what names nothing ("Octember 2026", a customer your data does not have)
/// where the arguments are parsed, before anything is reserved, and `write_key_text`
/// writes the one canonical form (`2026-10`). The crate docs' [Stable
/// identifiers](https://docs.rs/idem-tools/latest/idem/index.html#stable-identifiers) show
/// a `Period` that does, for plain functions and rmcp's `Parameters`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an idempotency key field",
    label = "this key field has type `{Self}`, which is not a stable business identifier",
    note = "a key must name the action the same way on every retry: use strings, integers, `bool`, `char`, or implement `idem::KeyPart` for an identifier type",
    note = "floats (0.1 + 0.2 != 0.3), timestamps (`SystemTime`, `Instant`, date-times) and per-call random values give a different key on a retry; put a float in `compare = [...]` instead"
)]
pub trait KeyPart {
    /// Appends this value's text, before normalization, to `out`.
    fn write_key_text(&self, out: &mut String);
}

impl KeyPart for str {
    fn write_key_text(&self, out: &mut String) {
        out.push_str(self);
    }
}

impl KeyPart for String {
    fn write_key_text(&self, out: &mut String) {
        out.push_str(self);
    }
}

impl KeyPart for Cow<'_, str> {
    fn write_key_text(&self, out: &mut String) {
        out.push_str(self);
    }
}

impl KeyPart for bool {
    fn write_key_text(&self, out: &mut String) {
        out.push_str(if *self { "true" } else { "false" });
    }
}

impl KeyPart for char {
    fn write_key_text(&self, out: &mut String) {
        out.push(*self);
    }
}

macro_rules! integer_key_parts {
    ($($int:ty)*) => {$(
        impl KeyPart for $int {
            fn write_key_text(&self, out: &mut String) {
                let _ = write!(out, "{self}");
            }
        }
    )*};
}

integer_key_parts!(u8 u16 u32 u64 u128 usize i8 i16 i32 i64 i128 isize);
integer_key_parts!(
    std::num::NonZeroU8 std::num::NonZeroU16 std::num::NonZeroU32 std::num::NonZeroU64
    std::num::NonZeroU128 std::num::NonZeroUsize std::num::NonZeroI8 std::num::NonZeroI16
    std::num::NonZeroI32 std::num::NonZeroI64 std::num::NonZeroI128 std::num::NonZeroIsize
);

impl<T: KeyPart + ?Sized> KeyPart for &T {
    fn write_key_text(&self, out: &mut String) {
        (**self).write_key_text(out);
    }
}

impl<T: KeyPart + ?Sized> KeyPart for &mut T {
    fn write_key_text(&self, out: &mut String) {
        (**self).write_key_text(out);
    }
}

impl<T: KeyPart + ?Sized> KeyPart for Box<T> {
    fn write_key_text(&self, out: &mut String) {
        (**self).write_key_text(out);
    }
}

impl<T: KeyPart + ?Sized> KeyPart for Arc<T> {
    fn write_key_text(&self, out: &mut String) {
        (**self).write_key_text(out);
    }
}

impl<T: KeyPart + ?Sized> KeyPart for std::rc::Rc<T> {
    fn write_key_text(&self, out: &mut String) {
        (**self).write_key_text(out);
    }
}

/// How one placeholder's value becomes key text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldMode {
    /// Trim, NFKC and case fold (`<customer>`); off for `<sku:exact>`.
    pub normalize: bool,
    /// Replace the value by a hash of it (`<email:hash>`), to keep personal data out of
    /// keys, stores and logs.
    pub hash: bool,
}

/// One piece of a parsed key template.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Segment {
    /// Literal text, copied as is.
    Literal(&'static str),
    /// A placeholder: the field as written in the template, and how to render it.
    Field(&'static str, FieldMode),
}

/// A derived key: the text stored and sent to providers, e.g. `invoice:acme:2026-10`.
///
/// Cheap to clone. Read it in a tool's body with [`current_key`](crate::current_key) to
/// send it to a provider that accepts idempotency keys, and derive per-step keys for
/// multi-step tools with [`step`](Key::step).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Key {
    text: Arc<str>,
    /// Length of the template's leading literal (`invoice:`), for [`Key::step`].
    lead: usize,
    /// Length of the scope's prefix (its hash and `/`, see [`scope_prefix`](crate::store::scope_prefix)): 0 for an
    /// unscoped tool's key.
    scope: usize,
}

impl Key {
    /// A key read back from where it was stored (a task id), to name in messages: scoped
    /// when it starts as a scope's prefix does.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn stored(text: &str) -> Key {
        let scoped = text.as_bytes().get(..SCOPE_LEN).is_some_and(|prefix| {
            prefix[SCOPE_LEN - 1] == b'/'
                && prefix[..SCOPE_LEN - 1].iter().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
        });
        Key { text: Arc::from(text), lead: 0, scope: if scoped { SCOPE_LEN } else { 0 } }
    }

    /// The scope's prefix this key starts with (32 hex digits and `/`, see
    /// [`scope_prefix`](crate::store::scope_prefix)), if its tool is scoped.
    pub(crate) fn scope_prefix(&self) -> Option<&str> {
        (self.scope > 0).then(|| &self.text[..self.scope])
    }

    /// The key as a person or a model reads it: without a scope's hash, each field's value
    /// with its percent-escapes undone (`invoice:acme corp:2026/10` for the stored
    /// `invoice:acme%20corp:2026%2F10`). Answers and approval texts name the action with
    /// it; records, telemetry and the operator command keep the key as stored. A field kept
    /// as a hash (`<email:hash>`) stays a hash.
    pub(crate) fn readable(&self) -> Cow<'_, str> {
        let text = &self.text[self.scope..];
        if !text.contains('%') {
            return Cow::Borrowed(text);
        }
        let mut bytes = Vec::with_capacity(text.len());
        let mut rest = text.as_bytes();
        while let Some((&byte, after)) = rest.split_first() {
            let escaped = (byte == b'%')
                .then(|| after.get(..2))
                .flatten()
                .and_then(|hex| std::str::from_utf8(hex).ok().and_then(|hex| u8::from_str_radix(hex, 16).ok()));
            match escaped {
                Some(decoded) => {
                    bytes.push(decoded);
                    rest = &after[2..];
                }
                None => {
                    bytes.push(byte);
                    rest = after;
                }
            }
        }
        // Escapes encode ASCII only, so the text stays UTF-8; lossy in case a stored key was not.
        Cow::Owned(String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
    }

    /// The key text.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// A key for one step of a multi-step tool: the step name joins the template's
    /// leading word, so `invoice:acme:2026-10` gives `invoice-email:acme:2026-10` for
    /// `step("email")`. A template that starts with a placeholder gets `email:` in front.
    /// The step name is escaped like a key field, so distinct steps give distinct keys.
    pub fn step(&self, name: &str) -> String {
        let (lead, rest) = self.text.split_at(self.lead);
        let word_end = lead.trim_end_matches(|c: char| !is_unreserved(c)).len();
        let mut out = String::with_capacity(self.text.len() + name.len() + 2);
        if word_end == 0 {
            escape_into(name, &mut out);
            out.push(':');
            out.push_str(&self.text);
        } else {
            out.push_str(&lead[..word_end]);
            out.push('-');
            escape_into(name, &mut out);
            out.push_str(&lead[word_end..]);
            out.push_str(rest);
        }
        out
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.text, f)
    }
}

impl std::ops::Deref for Key {
    type Target = str;
    fn deref(&self) -> &str {
        &self.text
    }
}

impl AsRef<str> for Key {
    fn as_ref(&self) -> &str {
        &self.text
    }
}

/// Builds the key of `tool` from its key fields, in template order.
///
/// A field whose value is empty after normalization is an [`InvalidKey`](ErrorCode::InvalidKey)
/// error naming it: an empty customer would make every customer's action one action.
pub fn build_key(tool_name: &str, template: &[Segment], parts: &[&dyn KeyPart]) -> Result<Key, Error> {
    build_key_named(tool_name, template, parts, None)
}

/// [`build_key`], with the field an INVALID_KEY error names by the name the model knows it
/// by (its JSON name, from `names`).
pub(crate) fn build_key_named(
    tool_name: &str,
    template: &[Segment],
    parts: &[&dyn KeyPart],
    names: Option<&JsonNames>,
) -> Result<Key, Error> {
    // This thread's buffers from its last key, so that a key costs one allocation: its
    // own. A key part that builds a key itself finds them taken and starts empty ones.
    let (mut out, mut raw) = SCRATCH.take();
    out.clear();
    let built = write_key(template, parts, &mut out, &mut raw).map_err(|(name, raw)| {
        empty_field(tool_name, &names.map_or(Cow::Borrowed(name), |names| names.model_name(name)), &raw)
    });
    if out.capacity() <= MAX_SCRATCH && raw.capacity() <= MAX_SCRATCH {
        SCRATCH.with(|slot| slot.set((out, raw)));
    }
    built
}

thread_local!(static SCRATCH: Cell<(String, String)> = const { Cell::new((String::new(), String::new())) });

/// Larger buffers are dropped rather than kept for the thread's lifetime.
const MAX_SCRATCH: usize = 1024;

/// [`build_key`] with the key text written to `out` and `raw` as room for each field's
/// text before normalization; `Err` is a field empty after normalization, with its text.
fn write_key(
    template: &[Segment],
    parts: &[&dyn KeyPart],
    out: &mut String,
    raw: &mut String,
) -> Result<Key, (&'static str, String)> {
    let mut lead = None;
    let mut parts = parts.iter();
    for segment in template {
        match *segment {
            Segment::Literal(text) => out.push_str(text),
            Segment::Field(name, mode) => {
                lead.get_or_insert(out.len());
                let part = parts.next().expect("the macro passes one key part per placeholder");
                raw.clear();
                part.write_key_text(raw);
                let value = if !mode.normalize {
                    Cow::Borrowed(raw.as_str())
                } else if raw.is_ascii() {
                    // `normalize`'s ASCII case, in place: no copy of the value.
                    raw.make_ascii_lowercase();
                    Cow::Borrowed(trim_ascii(raw))
                } else {
                    normalize(raw)
                };
                if value.is_empty() {
                    return Err((name, raw.clone()));
                }
                if mode.hash {
                    hash_into(value.as_bytes(), out);
                } else {
                    escape_into(&value, out);
                }
            }
        }
    }
    let lead = lead.unwrap_or(out.len());
    let scope = if starts_scoped(template) { SCOPE_LEN } else { 0 };
    Ok(Key { text: Arc::from(out.as_str()), lead, scope })
}

fn empty_field(tool_name: &str, field: &str, raw: &str) -> Error {
    let what = if raw.is_empty() { "empty".to_owned() } else { format!("{raw:?}, empty after normalization") };
    Error::new(ErrorCode::InvalidKey, format!("{tool_name}: key field {field} is {what}; the action was not run"))
        .with_suggestion(format!("call {tool_name} again with a non-empty {field}"))
}

/// Normalizes one key field value: Unicode NFKC, case folding, trimmed.
///
/// Case folding is lowercasing plus the two foldings that lowercasing misses in practice
/// (`ß`/`ẞ` to `ss`, final `ς` to `σ`). ASCII input takes a fast path with the same result.
pub fn normalize(text: &str) -> Cow<'_, str> {
    let trimmed = text.trim();
    if trimmed.is_ascii() {
        if trimmed.bytes().any(|b| b.is_ascii_uppercase()) {
            return Cow::Owned(trimmed.to_ascii_lowercase());
        }
        return Cow::Borrowed(trimmed);
    }
    let mut folded = String::with_capacity(trimmed.len());
    for c in trimmed.nfkc() {
        match c {
            'ß' | 'ẞ' => folded.push_str("ss"),
            'ς' => folded.push('σ'),
            _ => folded.extend(c.to_lowercase()),
        }
    }
    let renormalized: String = folded.nfkc().collect();
    Cow::Owned(renormalized.trim().to_owned())
}

/// Whether `c` stands for itself in key field values (letters, digits and `- . _ ~`,
/// plus all non-ASCII characters). Every other ASCII character is percent-encoded, so
/// any of them in the template's literal text separates fields unambiguously.
pub(crate) fn is_unreserved(c: char) -> bool {
    !c.is_ascii() || c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~')
}

/// `str::trim` for ASCII text, without decoding characters. Unlike `str::trim_ascii`, it
/// also trims vertical tabs, as `str::trim` does.
fn trim_ascii(text: &str) -> &str {
    let space = |b: &u8| matches!(b, b'\t' | b'\n' | b'\x0B' | b'\x0C' | b'\r' | b' ');
    let bytes = text.as_bytes();
    let Some(start) = bytes.iter().position(|b| !space(b)) else { return "" };
    let end = bytes.iter().rposition(|b| !space(b)).map_or(start, |i| i + 1);
    &text[start..end]
}

fn escape_into(value: &str, out: &mut String) {
    // Every reserved character is ASCII, so the value is scanned byte by byte: bytes of
    // non-ASCII characters (>= 0x80) are never reserved, and runs of unreserved text are
    // copied whole.
    let mut copied = 0;
    for (i, byte) in value.bytes().enumerate() {
        if !UNRESERVED_BYTE[usize::from(byte)] {
            out.push_str(&value[copied..i]);
            out.push('%');
            out.push(char::from(HEX_UPPER[usize::from(byte >> 4)]));
            out.push(char::from(HEX_UPPER[usize::from(byte & 0xf)]));
            copied = i + 1;
        }
    }
    out.push_str(&value[copied..]);
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

/// [`is_unreserved`] for each byte of UTF-8 text: every byte of a non-ASCII character is,
/// so one lookup decides.
const UNRESERVED_BYTE: [bool; 256] = {
    let mut table = [true; 256];
    let mut byte = 0;
    while byte < 128 {
        table[byte] = (byte as u8).is_ascii_alphanumeric() || matches!(byte as u8, b'-' | b'.' | b'_' | b'~');
        byte += 1;
    }
    table
};

/// How long a scope's prefix is: 32 hex digits and `/`.
const SCOPE_LEN: usize = 33;

/// Whether `template` is a scoped tool's: the macro puts the scope first, as a hashed field
/// named `scope` and a `/`.
fn starts_scoped(template: &[Segment]) -> bool {
    matches!(template, [Segment::Field("scope", FieldMode { normalize: false, hash: true }), Segment::Literal("/"), ..])
}

/// The text every key of a scoped tool (`scope = expr`) starts with for the scope `scope`:
/// 32 hex digits of the scope's SHA-256, then `/`. The scope is hashed exactly as given
/// (not case folded or trimmed), so `Acme` and `acme` are two scopes. For operators: `idem
/// list --scope acme` lists that scope's records.
pub fn scope_prefix(scope: &str) -> String {
    let mut prefix = String::with_capacity(33);
    hash_into(scope.as_bytes(), &mut prefix);
    prefix.push('/');
    prefix
}

/// `sha256:` and [`hash_into`]'s 32 hex digits: how a key appears in telemetry when it is
/// hashed, and how an HTTP request's body and query are kept in its record.
pub(crate) fn sha256_text(value: &[u8]) -> String {
    let mut text = String::with_capacity(7 + 32);
    text.push_str("sha256:");
    hash_into(value, &mut text);
    text
}

/// Hex of the first 16 bytes of SHA-256: 128 bits keep collisions out of reach while
/// keeping keys short.
pub(crate) fn hash_into(value: &[u8], out: &mut String) {
    const HEX_LOWER: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(value);
    for byte in &digest[..16] {
        out.push(char::from(HEX_LOWER[usize::from(byte >> 4)]));
        out.push(char::from(HEX_LOWER[usize::from(byte & 0xf)]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NORMAL: FieldMode = FieldMode { normalize: true, hash: false };
    const EXACT: FieldMode = FieldMode { normalize: false, hash: false };
    const HASH: FieldMode = FieldMode { normalize: true, hash: true };
    const INVOICE: &[Segment] = &[
        Segment::Literal("invoice:"),
        Segment::Field("customer", NORMAL),
        Segment::Literal(":"),
        Segment::Field("period", NORMAL),
    ];

    fn key(template: &[Segment], parts: &[&dyn KeyPart]) -> Result<String, Error> {
        build_key("send_invoice", template, parts).map(|k| k.as_str().to_owned())
    }

    #[test]
    fn builds_the_article_key() {
        assert_eq!(key(INVOICE, &[&"acme", &"2026-10"]).unwrap(), "invoice:acme:2026-10");
    }

    #[test]
    fn the_same_action_spelled_differently_gives_the_same_key() {
        let a = key(INVOICE, &[&" ACME ", &"2026-10"]).unwrap();
        let b = key(INVOICE, &[&"acme".to_string(), &"2026-10"]).unwrap();
        let c = key(INVOICE, &[&"Ａｃｍｅ", &"2026-10"]).unwrap(); // fullwidth letters
        assert_eq!(a, b);
        assert_eq!(a, c);
    }

    #[test]
    fn a_key_reads_without_its_scope_and_with_its_escapes_undone() {
        let scoped: &[Segment] = &[
            Segment::Field("scope", FieldMode { normalize: false, hash: true }),
            Segment::Literal("/"),
            Segment::Literal("invoice:"),
            Segment::Field("customer", NORMAL),
            Segment::Literal(":"),
            Segment::Field("period", NORMAL),
        ];
        let key = build_key("send_invoice", scoped, &[&"tenant-a", &"Acme Corp", &"2026/10"]).unwrap();
        assert_eq!(key.as_str(), format!("{}invoice:acme%20corp:2026%2F10", scope_prefix("tenant-a")));
        assert_eq!(key.scope_prefix(), Some(scope_prefix("tenant-a").as_str()));
        assert_eq!(key.readable(), "invoice:acme corp:2026/10");
        assert_eq!(Key::stored(key.as_str()).readable(), "invoice:acme corp:2026/10", "read back from a record");

        let plain = build_key("send_invoice", INVOICE, &[&"acme", &"2026-10"]).unwrap();
        assert_eq!(plain.scope_prefix(), None);
        assert!(matches!(plain.readable(), Cow::Borrowed("invoice:acme:2026-10")), "no copy when nothing is escaped");
        let accented = build_key("send_invoice", INVOICE, &[&"Zoë & Co", &"100%"]).unwrap();
        assert_eq!(accented.as_str(), "invoice:zoë%20%26%20co:100%25");
        assert_eq!(accented.readable(), "invoice:zoë & co:100%");
        assert_eq!(Key::stored("http-key%2").readable(), "http-key%2", "a stray % stays");
    }

    #[test]
    fn separators_inside_values_are_escaped() {
        let a = key(INVOICE, &[&"a:b", &"c"]).unwrap();
        let b = key(INVOICE, &[&"a", &"b:c"]).unwrap();
        assert_eq!(a, "invoice:a%3Ab:c");
        assert_eq!(b, "invoice:a:b%3Ac");
        assert_eq!(key(INVOICE, &[&"100%", &"x"]).unwrap(), "invoice:100%25:x");
    }

    #[test]
    fn every_reserved_character_is_percent_encoded_in_upper_case_hex() {
        for c in (0u8..=0x7f).map(char::from).chain(['é', 'ß', '😀']) {
            let mut out = String::new();
            escape_into(&format!("a{c}b"), &mut out);
            let expected = if is_unreserved(c) { format!("a{c}b") } else { format!("a%{:02X}b", c as u32) };
            assert_eq!(out, expected);
        }
    }

    #[test]
    fn ascii_trimming_matches_str_trim() {
        for c in (0u8..=0x7f).map(char::from) {
            for text in [format!("{c}"), format!("{c}a{c}"), format!("{c}{c}a b{c}"), format!("a{c}")] {
                assert_eq!(trim_ascii(&text), text.trim(), "{text:?}");
            }
        }
    }

    #[test]
    fn a_key_part_that_builds_a_key_gets_its_own_buffers() {
        struct Nested;
        impl KeyPart for Nested {
            fn write_key_text(&self, out: &mut String) {
                out.push_str(&key(INVOICE, &[&"Inner", &"x"]).unwrap());
            }
        }
        assert_eq!(key(INVOICE, &[&Nested, &"Y"]).unwrap(), "invoice:invoice%3Ainner%3Ax:y");
        assert_eq!(key(INVOICE, &[&"acme", &"2026-10"]).unwrap(), "invoice:acme:2026-10");
    }

    #[test]
    fn empty_fields_are_invalid_and_named() {
        for empty in ["", "   ", "\u{3000}"] {
            let error = key(INVOICE, &[&"acme", &empty]).unwrap_err();
            assert_eq!(error.code(), ErrorCode::InvalidKey);
            assert!(error.message().contains("period"), "{error}");
        }
    }

    #[test]
    fn exact_fields_keep_case_and_spaces() {
        let template = &[Segment::Literal("sku:"), Segment::Field("sku", EXACT)];
        assert_eq!(key(template, &[&"Ab c"]).unwrap(), "sku:Ab%20c");
        assert_ne!(key(template, &[&"AB"]).unwrap(), key(template, &[&"ab"]).unwrap());
    }

    #[test]
    fn hashed_fields_hide_the_value_but_not_its_identity() {
        let template = &[Segment::Literal("welcome:"), Segment::Field("email", HASH)];
        let a = key(template, &[&"Ann@Example.com"]).unwrap();
        let b = key(template, &[&" ann@example.com"]).unwrap();
        assert_eq!(a, b);
        assert!(!a.contains("ann"), "{a}");
        assert_eq!(a.len(), "welcome:".len() + 32);
    }

    #[test]
    fn integers_and_bools_render_canonically() {
        let template = &[
            Segment::Literal("order:"),
            Segment::Field("id", NORMAL),
            Segment::Literal("/"),
            Segment::Field("gift", NORMAL),
        ];
        assert_eq!(key(template, &[&42u64, &true]).unwrap(), "order:42/true");
        assert_eq!(key(template, &[&-7i32, &false]).unwrap(), "order:-7/false");
    }

    #[test]
    fn folding_goes_beyond_lowercase() {
        assert_eq!(normalize("STRASSE"), normalize("Straße"));
        assert_eq!(normalize("ΣΑΣ"), normalize("σας"));
        assert_eq!(normalize("ﬁle"), "file");
    }

    #[test]
    fn steps_join_the_leading_word() {
        let key = build_key("send_invoice", INVOICE, &[&"acme", &"2026-10"]).unwrap();
        assert_eq!(key.step("email"), "invoice-email:acme:2026-10");
        assert_eq!(key.step("a:b"), "invoice-a%3Ab:acme:2026-10");
        let bare = build_key("t", &[Segment::Field("id", NORMAL)], &[&"x1"]).unwrap();
        assert_eq!(bare.step("email"), "email:x1");
    }
}
