//! How idem's answers reach a tool's caller: through the tool's own return type.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::Error;

/// A return type that can carry idem's answers: the stored result of a first call, or a
/// structured [`Error`] (IN_PROGRESS, CONFLICT, ...).
///
/// Implemented for `Result<T, E>` where `T` serializes and deserializes (it is stored and
/// replayed) and `E: From<idem::Error>`. An `Err` from the body releases the reservation:
/// the action did not happen and a retry may run it.
///
/// # What is stored must read back
///
/// The value is stored as JSON, and a replay is that JSON deserialized: what JSON kept of
/// the value. So when the body has run, idem deserializes the JSON it is about to store
/// back into [`Value`](Self::Value), once (replays never pay for this check). A value
/// that does not read back is not stored: an `f64::NAN` or infinity, which serde_json
/// writes as `null`, in a field typed `f64`, say. Then the caller still gets the body's
/// result, an error `tracing` event names the tool and the key, and the key is kept
/// (the effect happened, so it is never released) and marked abandoned at once: every
/// retry answers OUTCOME_UNKNOWN, or runs the tool's `reconcile` hook, and the status
/// function reports `Unknown`, never a RECORD_UNREADABLE that no retry can get past. An
/// error kept by `on_error = keep` is checked the same way.
///
/// What JSON cannot tell apart reads back without an error, as something else, and is
/// replayed as it reads: `Some(None)` (of an `Option<Option<T>>`) and `None` are both
/// `null`, so `Some(None)` replays as `None`; `Some(f64::NAN)` (of an `Option<f64>`)
/// replays as `None`; a field skipped when serializing replays as its default. Give such
/// values a shape JSON holds: an enum instead of nested `Option`s, a string or `Option`
/// for a float that may not be finite.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot carry idem's answers (a replay, IN_PROGRESS, CONFLICT, ...)",
    label = "the return type of an #[idempotent] tool must implement `idem::ToolOutput`",
    note = "return `Result<T, E>` where `T: serde::Serialize + serde::de::DeserializeOwned` (it is stored and replayed) and `E: From<idem::Error>`, or implement `idem::ToolOutput` for this type"
)]
pub trait ToolOutput: Sized {
    /// What is stored when the body succeeds, and replayed to later calls.
    type Value: Serialize + DeserializeOwned;

    /// The value to store, or `None` when the body failed and the reservation is released.
    fn success(&self) -> Option<&Self::Value>;

    /// The answer for a replay of a stored value.
    fn from_value(value: Self::Value) -> Self;

    /// The answer for an idem error (IN_PROGRESS, CONFLICT, ...).
    fn from_error(error: Error) -> Self;
}

impl<T, E> ToolOutput for Result<T, E>
where
    T: Serialize + DeserializeOwned,
    E: From<Error>,
{
    type Value = T;

    fn success(&self) -> Option<&T> {
        self.as_ref().ok()
    }

    fn from_value(value: T) -> Self {
        Ok(value)
    }

    fn from_error(error: Error) -> Self {
        Err(E::from(error))
    }
}

/// The field set to `true` in a replayed result that is a JSON object, so the model sees
/// that nothing new happened. Types without the field ignore it.
pub const REPLAYED_FIELD: &str = "replayed";

/// Deserializes a stored result for a replay. When it is a JSON object, it is read with
/// `"replayed": true` set first, so that output types with a `replayed` field show it;
/// a type that rejects the extra field gets the stored object exactly as it was.
///
/// The stored text is deserialized directly, not through a `serde_json::Value`: the top-level
/// object's `replayed` entry is replaced (or, when absent, appended) while it is read.
pub fn replay_value<T: DeserializeOwned>(stored: &str) -> Result<T, serde_json::Error> {
    if stored.trim_start().starts_with('{') {
        let mut de = serde_json::Deserializer::from_str(stored);
        if let Ok(replayed) = T::deserialize(mark::Marked(&mut de))
            && de.end().is_ok()
        {
            return Ok(replayed);
        }
    }
    serde_json::from_str(stored)
}

/// A deserializer that reads a JSON object with its top-level `replayed` entry set to
/// `true`, and passes everything else through unchanged.
mod mark {
    use std::fmt;

    use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
    use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, IgnoredAny, MapAccess, SeqAccess, Visitor};
    use serde_json::Value;

    use super::REPLAYED_FIELD;

    /// Marks the first object its visitor is given (through `Option` and newtype
    /// wrappers too, as deserializing from a marked `Value` would).
    pub(super) struct Marked<D>(pub(super) D);

    macro_rules! forward_deserialize {
        ($($method:ident($($arg:ident: $ty:ty),*);)*) => {$(
            fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
                self.0.$method($($arg,)* MarkVisitor(visitor))
            }
        )*};
    }

    impl<'de, D: Deserializer<'de>> Deserializer<'de> for Marked<D> {
        type Error = D::Error;

        forward_deserialize! {
            deserialize_any(); deserialize_bool(); deserialize_i8(); deserialize_i16(); deserialize_i32();
            deserialize_i64(); deserialize_i128(); deserialize_u8(); deserialize_u16(); deserialize_u32();
            deserialize_u64(); deserialize_u128(); deserialize_f32(); deserialize_f64(); deserialize_char();
            deserialize_str(); deserialize_string(); deserialize_bytes(); deserialize_byte_buf();
            deserialize_option(); deserialize_unit(); deserialize_unit_struct(name: &'static str);
            deserialize_newtype_struct(name: &'static str); deserialize_seq(); deserialize_tuple(len: usize);
            deserialize_tuple_struct(name: &'static str, len: usize); deserialize_map();
            deserialize_struct(name: &'static str, fields: &'static [&'static str]);
            deserialize_enum(name: &'static str, variants: &'static [&'static str]);
            deserialize_identifier(); deserialize_ignored_any();
        }

        fn is_human_readable(&self) -> bool {
            self.0.is_human_readable()
        }
    }

    struct MarkVisitor<V>(V);

    macro_rules! forward_visit {
        ($($method:ident($ty:ty);)*) => {$(
            fn $method<E: de::Error>(self, v: $ty) -> Result<V::Value, E> {
                self.0.$method(v)
            }
        )*};
    }

    impl<'de, V: Visitor<'de>> Visitor<'de> for MarkVisitor<V> {
        type Value = V::Value;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            self.0.expecting(f)
        }

        forward_visit! {
            visit_bool(bool); visit_i8(i8); visit_i16(i16); visit_i32(i32); visit_i64(i64); visit_i128(i128);
            visit_u8(u8); visit_u16(u16); visit_u32(u32); visit_u64(u64); visit_u128(u128); visit_f32(f32);
            visit_f64(f64); visit_char(char); visit_str(&str); visit_borrowed_str(&'de str); visit_string(String);
            visit_bytes(&[u8]); visit_borrowed_bytes(&'de [u8]); visit_byte_buf(Vec<u8>);
        }

        fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
            self.0.visit_none()
        }

        fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
            self.0.visit_unit()
        }

        fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
            self.0.visit_some(Marked(deserializer))
        }

        fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
            self.0.visit_newtype_struct(Marked(deserializer))
        }

        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
            self.0.visit_seq(seq)
        }

        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
            self.0.visit_map(MarkedMap { inner: map, next: Next::Inner, seen: false, done: false })
        }

        fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
            self.0.visit_enum(data)
        }
    }

    /// What the next value of a [`MarkedMap`] is.
    enum Next {
        /// The inner map's value.
        Inner,
        /// `true`, in place of the inner map's value for its `replayed` key.
        Replace,
        /// `true`, for the `replayed` key appended after the inner map's last entry.
        Append,
    }

    struct MarkedMap<A> {
        inner: A,
        next: Next,
        /// Whether the `replayed` key was given.
        seen: bool,
        /// Whether the map has ended.
        done: bool,
    }

    impl<'de, A: MapAccess<'de>> MapAccess<'de> for MarkedMap<A> {
        type Error = A::Error;

        fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
            if self.done {
                return Ok(None);
            }
            match self.inner.next_key::<KeyText<'de>>()? {
                Some(key) => {
                    let replayed = key.as_str() == REPLAYED_FIELD;
                    self.seen |= replayed;
                    self.next = if replayed { Next::Replace } else { Next::Inner };
                    match key {
                        KeyText::Borrowed(key) => seed.deserialize(BorrowedStrDeserializer::new(key)).map(Some),
                        KeyText::Owned(key) => seed.deserialize(StringDeserializer::new(key)).map(Some),
                    }
                }
                None if self.seen => {
                    self.done = true;
                    Ok(None)
                }
                None => {
                    (self.seen, self.done, self.next) = (true, true, Next::Append);
                    seed.deserialize(BorrowedStrDeserializer::new(REPLAYED_FIELD)).map(Some)
                }
            }
        }

        fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
            match std::mem::replace(&mut self.next, Next::Inner) {
                Next::Inner => self.inner.next_value_seed(seed),
                Next::Replace => {
                    self.inner.next_value::<IgnoredAny>()?;
                    seed.deserialize(Value::Bool(true)).map_err(de::Error::custom)
                }
                Next::Append => seed.deserialize(Value::Bool(true)).map_err(de::Error::custom),
            }
        }
    }

    /// A map key as text, borrowed from the input when it has no escapes.
    enum KeyText<'de> {
        Borrowed(&'de str),
        Owned(String),
    }

    impl KeyText<'_> {
        fn as_str(&self) -> &str {
            match self {
                KeyText::Borrowed(key) => key,
                KeyText::Owned(key) => key,
            }
        }
    }

    impl<'de> de::Deserialize<'de> for KeyText<'de> {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            struct KeyVisitor;
            impl<'de> Visitor<'de> for KeyVisitor {
                type Value = KeyText<'de>;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a map key")
                }
                fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<KeyText<'de>, E> {
                    Ok(KeyText::Borrowed(key))
                }
                fn visit_str<E: de::Error>(self, key: &str) -> Result<KeyText<'de>, E> {
                    Ok(KeyText::Owned(key.to_owned()))
                }
                fn visit_string<E: de::Error>(self, key: String) -> Result<KeyText<'de>, E> {
                    Ok(KeyText::Owned(key))
                }
            }
            deserializer.deserialize_str(KeyVisitor)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::Value;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Invoice {
        id: String,
        #[serde(default)]
        replayed: bool,
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Strict {
        id: String,
    }

    #[test]
    fn a_type_with_a_replayed_field_shows_the_replay() {
        let stored = serde_json::to_string(&Invoice { id: "inv_1".into(), replayed: false }).unwrap();
        let replayed: Invoice = replay_value(&stored).unwrap();
        assert_eq!(replayed, Invoice { id: "inv_1".into(), replayed: true });
    }

    #[test]
    fn json_objects_show_the_replay() {
        let replayed: Value = replay_value(r#"{"id":"inv_1"}"#).unwrap();
        assert_eq!(replayed, serde_json::json!({"id": "inv_1", "replayed": true}));
    }

    #[test]
    fn strict_types_get_the_stored_object_unchanged() {
        let replayed: Strict = replay_value(r#"{"id":"inv_1"}"#).unwrap();
        assert_eq!(replayed, Strict { id: "inv_1".into() });
    }

    #[test]
    fn falsy_results_replay_as_themselves() {
        assert_eq!(replay_value::<u32>("0").unwrap(), 0);
        assert!(!replay_value::<bool>("false").unwrap());
        assert_eq!(replay_value::<String>("\"\"").unwrap(), "");
        assert_eq!(replay_value::<Vec<u8>>("[]").unwrap(), Vec::<u8>::new());
        replay_value::<()>("null").unwrap();
        assert_eq!(replay_value::<Option<u8>>("null").unwrap(), None);
        assert_eq!(replay_value::<Value>("{}").unwrap(), serde_json::json!({"replayed": true}));
    }

    /// The way replays were read before they were deserialized directly: through a
    /// `Value`, marked, then unmarked if the type rejects the mark. Every type must read the
    /// same both ways.
    fn through_value<T: DeserializeOwned>(stored: &str) -> Result<T, serde_json::Error> {
        let value: Value = serde_json::from_str(stored)?;
        if let Value::Object(map) = &value {
            let mut marked = map.clone();
            marked.insert(REPLAYED_FIELD.to_owned(), Value::Bool(true));
            if let Ok(replayed) = T::deserialize(Value::Object(marked)) {
                return Ok(replayed);
            }
        }
        T::deserialize(value)
    }

    fn same_both_ways<T: DeserializeOwned + PartialEq + std::fmt::Debug>(stored: &str) {
        let direct = replay_value::<T>(stored);
        let old = through_value::<T>(stored);
        match (&direct, &old) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{stored}"),
            (Err(_), Err(_)) => {}
            _ => panic!("{stored}: direct {direct:?}, through a value {old:?}"),
        }
    }

    #[test]
    fn direct_replays_read_as_replays_through_a_value_did() {
        #[derive(Deserialize, Debug, PartialEq)]
        struct Wrapper(Invoice);
        #[derive(Deserialize, Debug, PartialEq)]
        #[serde(transparent)]
        struct Transparent {
            invoice: Invoice,
        }
        #[derive(Deserialize, Debug, PartialEq)]
        #[serde(untagged)]
        enum Untagged {
            Invoice(Invoice),
            Other(Value),
        }
        #[derive(Deserialize, Debug, PartialEq)]
        #[serde(tag = "kind")]
        enum Tagged {
            Invoice {
                id: String,
                #[serde(default)]
                replayed: bool,
            },
        }
        #[derive(Deserialize, Debug, PartialEq)]
        enum External {
            Invoice { id: String },
        }
        #[derive(Deserialize, Debug, PartialEq)]
        struct Flattened {
            #[serde(flatten)]
            rest: std::collections::BTreeMap<String, Value>,
        }
        #[derive(Deserialize, Debug, PartialEq)]
        struct Nested {
            inner: Invoice,
            #[serde(default)]
            replayed: Option<bool>,
        }
        #[derive(Deserialize, Debug, PartialEq)]
        struct NotABool {
            replayed: String,
        }
        let objects = [
            r#"{"id":"inv_1","replayed":false}"#,
            r#"{"id":"inv_1"}"#,
            r#" { "replayed" : false , "id" : "inv_\u0031" } "#,
            r#"{"\u0069d":"inv_1"}"#,
            r#"{"kind":"Invoice","id":"inv_1"}"#,
            r#"{"Invoice":{"id":"inv_1"}}"#,
            r#"{"inner":{"id":"inv_1","replayed":false}}"#,
            r#"{"replayed":"text"}"#,
            r#"{}"#,
            r#"{"id":"inv_1"} trailing"#,
            r#"{"id":"inv_1""#,
        ];
        for stored in objects {
            same_both_ways::<Invoice>(stored);
            same_both_ways::<Strict>(stored);
            same_both_ways::<Value>(stored);
            same_both_ways::<Option<Invoice>>(stored);
            same_both_ways::<Wrapper>(stored);
            same_both_ways::<Transparent>(stored);
            same_both_ways::<Untagged>(stored);
            same_both_ways::<Tagged>(stored);
            same_both_ways::<External>(stored);
            same_both_ways::<Flattened>(stored);
            same_both_ways::<Nested>(stored);
            same_both_ways::<NotABool>(stored);
            same_both_ways::<std::collections::HashMap<String, Value>>(stored);
            same_both_ways::<std::collections::HashMap<u32, Value>>(stored);
        }
        assert_eq!(replay_value::<Nested>(objects[6]).unwrap().replayed, Some(true));
        assert!(!replay_value::<Nested>(objects[6]).unwrap().inner.replayed, "only the top level is marked");
        assert!(replay_value::<Option<Invoice>>(objects[0]).unwrap().unwrap().replayed);
    }

    #[test]
    fn a_result_that_no_longer_fits_the_type_is_an_error() {
        assert!(replay_value::<Invoice>(r#"{"number":7}"#).is_err());
        assert!(replay_value::<u32>("not json").is_err());
    }
}
