//! Finding a record whose key the operator typed as the tool's fields read, where idem
//! stores them percent-encoded: `inv:1` for an HTTP layer's `inv%3A1`.
//!
//! A key field's value keeps letters, digits, `-._~` and every non-ASCII character, and
//! writes each other ASCII character as `%` and two upper-case hex digits (the runtime's
//! `key::escape_into`); a template's own text (`invoice:`, the `/` after a scope's hash) is
//! kept as written. So which `:` of a typed key is a separator and which a value's cannot be
//! told: every choice is tried.

use idem_runtime::store::{Admin, Record, RecordId, Store, block_on};

/// Beyond this many characters to encode, only the form with all of them encoded is tried
/// (2^10 reads at most).
const MAX_CHOICES: usize = 10;

/// Whether a key field's value keeps `byte` as it is.
fn kept(byte: u8) -> bool {
    !byte.is_ascii() || byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~')
}

/// `key` with the reserved characters at the byte positions `encode` selects
/// percent-encoded.
fn encoded(key: &str, encode: impl Fn(usize) -> bool) -> String {
    let mut out = String::with_capacity(key.len() + 8);
    for (at, c) in key.char_indices() {
        match u8::try_from(c) {
            Ok(byte) if !kept(byte) && encode(at) => out.push_str(&format!("%{byte:02X}")),
            _ => out.push(c),
        }
    }
    out
}

/// The keys a record typed as `key` may be stored under: `key` with some or all of its
/// reserved characters percent-encoded.
pub(crate) fn encoded_forms(key: &str) -> Vec<String> {
    let reserved: Vec<usize> = key.bytes().enumerate().filter(|(_, byte)| !kept(*byte)).map(|(at, _)| at).collect();
    if reserved.is_empty() {
        return Vec::new();
    }
    if reserved.len() > MAX_CHOICES {
        return vec![encoded(key, |_| true)];
    }
    (1..1u32 << reserved.len())
        .map(|choice| encoded(key, |at| reserved.iter().position(|r| *r == at).is_some_and(|i| choice & (1 << i) != 0)))
        .collect()
}

/// What `read` finds under `key` as typed, or else under exactly one of its encoded forms
/// (said on stderr): the key it was found under, and what was found. `Ok(None)` when
/// nothing is under any of them; two or more finds are named, and none is chosen. `what`
/// names the thing looked for in those messages ("record", "approval request").
pub(crate) fn search<T>(
    namespace: &str,
    key: &str,
    what: &str,
    read: impl Fn(&str) -> Result<Option<T>, String>,
) -> Result<Option<(String, T)>, String> {
    if let Some(found) = read(key)? {
        return Ok(Some((key.to_owned(), found)));
    }
    let mut found = Vec::new();
    for form in encoded_forms(key) {
        if let Some(thing) = read(&form)? {
            found.push((form, thing));
        }
    }
    match found.len() {
        0 => Ok(None),
        1 => {
            let (stored, thing) = found.remove(0);
            eprintln!(
                "idem: no {what} under {key} as typed; using {stored}, the same key as idem stores it (reserved \
                 characters percent-encoded)"
            );
            Ok(Some((stored, thing)))
        }
        n => {
            let keys: Vec<&str> = found.iter().map(|(stored, _)| stored.as_str()).collect();
            Err(format!(
                "no {what} for {namespace} {key} as typed, and {n} {what}s under its percent-encoded forms: {}; give \
                 the key as `idem list` shows it",
                keys.join(", ")
            ))
        }
    }
}

/// The record of `namespace` under `key`, or else under exactly one of its encoded forms
/// (see [`search`]): its key as stored, and the record.
pub(crate) fn find(store: &dyn Admin, namespace: &str, key: &str) -> Result<(String, Record), String> {
    search(namespace, key, "record", |key| {
        block_on(store.as_dyn_store().read(RecordId { namespace, key })).map_err(|e| e.to_string())
    })?
    .ok_or_else(|| format!("no record for {namespace} {key} ({})", looked_for(key)))
}

/// Where [`search`] looked for `key`, for a message that says nothing was there.
pub(crate) fn looked_for(key: &str) -> String {
    const SHOWN: usize = 3;
    let forms = encoded_forms(key);
    let listed: Vec<&str> = forms.iter().take(SHOWN).map(String::as_str).collect();
    match forms.len() {
        0 => "looked under the key as typed, which has no character idem percent-encodes".to_owned(),
        n if n <= SHOWN => format!("looked under the key as typed and as {}", listed.join(", ")),
        n => format!(
            "looked under the key as typed and under its {n} percent-encoded forms ({}, ...)",
            listed.join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::encoded_forms;

    #[test]
    fn reserved_characters_are_encoded_as_the_runtime_encodes_key_fields() {
        assert_eq!(encoded_forms("inv:1"), ["inv%3A1"]);
        assert_eq!(encoded_forms("a b/ü~x"), ["a%20b/ü~x", "a b%2Fü~x", "a%20b%2Fü~x"]);
        assert_eq!(encoded_forms("plain-key_1.2~"), Vec::<String>::new());
        assert_eq!(encoded_forms("100%"), ["100%25"]);
        let many = ":".repeat(11);
        assert_eq!(encoded_forms(&many), ["%3A".repeat(11)], "past 10 choices, every one encoded");
        assert_eq!(encoded_forms(&":".repeat(10)).len(), 1023);
    }
}
