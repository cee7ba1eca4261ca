//! The `Idempotency-Key` request header as the IETF HTTPAPI draft defines it
//! (draft-ietf-httpapi-idempotency-key-header-07): one field, whose value is a Structured
//! Field string (RFC 8941) of at most 255 characters.

use http::HeaderMap;
use http::header::HeaderName;

/// The request header that carries the key.
pub const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");

/// The response header a replay carries: `Idempotent-Replayed: true`.
pub const IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// The longest key the layer takes, in characters, as the draft recommends.
pub const MAX_KEY_CHARS: usize = 255;

/// A rule of the draft that a request's `Idempotency-Key` broke: the layer answers `400`
/// with a problem whose `type` ends in [`as_str`](KeyRule::as_str).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum KeyRule {
    /// No key on a request the layer requires one for.
    Missing,
    /// More than one `Idempotency-Key` field.
    Repeated,
    /// A key with no characters (`""`, or an empty field).
    Empty,
    /// A comma in the key: it would read as a list of keys.
    Comma,
    /// More than [`MAX_KEY_CHARS`] characters.
    TooLong,
    /// Not a string: an unterminated or misquoted string, a character outside printable
    /// ASCII, or something after the closing quote.
    NotAString,
}

impl KeyRule {
    /// The rule's name, the end of its problem `type`: `key-missing`, `key-repeated`,
    /// `key-empty`, `key-comma`, `key-too-long`, `key-not-a-string`.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyRule::Missing => "key-missing",
            KeyRule::Repeated => "key-repeated",
            KeyRule::Empty => "key-empty",
            KeyRule::Comma => "key-comma",
            KeyRule::TooLong => "key-too-long",
            KeyRule::NotAString => "key-not-a-string",
        }
    }
}

/// The request's key: `Ok(None)` when it has none, the rule it broke otherwise.
///
/// The draft's form is a quoted string (`"8e03978e-40d5"`, with `\"` and `\\` escaped).
/// A bare key (`8e03978e-40d5`), as Stripe's clients send, reads as if it were quoted; it
/// may hold any printable ASCII but spaces, quotes, backslashes and commas.
pub(crate) fn read_key(headers: &HeaderMap) -> Result<Option<String>, KeyRule> {
    let mut fields = headers.get_all(IDEMPOTENCY_KEY).iter();
    let Some(field) = fields.next() else { return Ok(None) };
    if fields.next().is_some() {
        return Err(KeyRule::Repeated);
    }
    parse(field.as_bytes()).map(Some)
}

/// One field's value as a key.
fn parse(value: &[u8]) -> Result<String, KeyRule> {
    let value = value.trim_ascii();
    let key = match value.split_first() {
        None => return Err(KeyRule::Empty),
        Some((b'"', quoted)) => unquote(quoted)?,
        Some(_) => bare(value)?,
    };
    if key.is_empty() {
        return Err(KeyRule::Empty);
    }
    // Printable ASCII only, so bytes are characters.
    if key.len() > MAX_KEY_CHARS {
        return Err(KeyRule::TooLong);
    }
    Ok(key)
}

/// The text of an sf-string after its opening quote, which must end at its closing one.
fn unquote(quoted: &[u8]) -> Result<String, KeyRule> {
    let mut key = String::with_capacity(quoted.len());
    let mut bytes = quoted.iter();
    while let Some(&byte) = bytes.next() {
        match byte {
            b'"' => {
                return if bytes.as_slice().is_empty() {
                    Ok(key)
                } else if bytes.as_slice().contains(&b',') {
                    Err(KeyRule::Comma)
                } else {
                    Err(KeyRule::NotAString)
                };
            }
            b'\\' => match bytes.next() {
                Some(&escaped @ (b'"' | b'\\')) => key.push(char::from(escaped)),
                _ => return Err(KeyRule::NotAString),
            },
            b',' => return Err(KeyRule::Comma),
            0x20..=0x7e => key.push(char::from(byte)),
            _ => return Err(KeyRule::NotAString),
        }
    }
    Err(KeyRule::NotAString)
}

/// A key sent without quotes.
fn bare(value: &[u8]) -> Result<String, KeyRule> {
    if value.contains(&b',') {
        return Err(KeyRule::Comma);
    }
    if value.iter().any(|&byte| !(0x21..=0x7e).contains(&byte) || byte == b'"' || byte == b'\\') {
        return Err(KeyRule::NotAString);
    }
    Ok(String::from_utf8(value.to_vec()).expect("printable ASCII"))
}

#[cfg(test)]
mod tests {
    use super::{KeyRule, MAX_KEY_CHARS, parse};

    #[test]
    fn quoted_and_bare_keys_read_the_same() {
        assert_eq!(parse(br#""8e03978e-40d5-43e8""#), Ok("8e03978e-40d5-43e8".to_owned()));
        assert_eq!(parse(b"8e03978e-40d5-43e8"), Ok("8e03978e-40d5-43e8".to_owned()));
        assert_eq!(parse(br#"  "a b"  "#), Ok("a b".to_owned()));
        assert_eq!(parse(br#""say \"hi\" \\ bye""#), Ok(r#"say "hi" \ bye"#.to_owned()));
        assert_eq!(parse(b"invoice:acme:2026-10"), Ok("invoice:acme:2026-10".to_owned()));
    }

    #[test]
    fn each_broken_rule_is_named() {
        for (value, rule) in [
            (&b""[..], KeyRule::Empty),
            (b"   ", KeyRule::Empty),
            (br#""""#, KeyRule::Empty),
            (b"a,b", KeyRule::Comma),
            (br#""a,b""#, KeyRule::Comma),
            (br#""a", "b""#, KeyRule::Comma),
            (br#""abc"#, KeyRule::NotAString),
            (br#""a\nb""#, KeyRule::NotAString),
            (br#""a";p=1"#, KeyRule::NotAString),
            (b"a b", KeyRule::NotAString),
            (b"a\"b", KeyRule::NotAString),
            (b"caf\xc3\xa9", KeyRule::NotAString),
            (b"\"a\tb\"", KeyRule::NotAString),
        ] {
            assert_eq!(parse(value), Err(rule), "{:?}", String::from_utf8_lossy(value));
        }
    }

    #[test]
    fn a_key_may_have_255_characters_and_no_more() {
        let longest = "k".repeat(MAX_KEY_CHARS);
        assert_eq!(parse(longest.as_bytes()), Ok(longest.clone()));
        assert_eq!(parse(format!("\"{longest}\"").as_bytes()), Ok(longest.clone()));
        assert_eq!(parse(format!("{longest}k").as_bytes()), Err(KeyRule::TooLong));
        // Escapes count as the character they stand for.
        let escaped = format!("\"{}\\\\\"", "k".repeat(MAX_KEY_CHARS - 1));
        assert_eq!(parse(escaped.as_bytes()).map(|key| key.len()), Ok(MAX_KEY_CHARS));
    }
}
