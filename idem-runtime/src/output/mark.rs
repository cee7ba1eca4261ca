//! A deserializer that reads a JSON object with its top-level `replayed` entry set to
//! `true`, and passes everything else through unchanged.

use std::fmt;

use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::REPLAYED_FIELD;

/// Marks the first object its visitor is given (through `Option` and newtype
/// wrappers too, as deserializing from a marked `Value` would), when the type asks for
/// it: a self-describing type (`deserialize_any`: `serde_json::Value`, untagged and
/// internally tagged enums), or a struct that declares a `replayed` field. A map
/// (`deserialize_map`: `HashMap`, `BTreeMap`, `serde_json::Map`, structs with
/// `#[serde(flatten)]`) and everything else reads the stored value exactly.
pub(super) struct Marked<D>(pub(super) D);

macro_rules! forward_deserialize {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
            self.0.$method($($arg,)* MarkVisitor { inner: visitor, mark: false })
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Marked<D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_any(MarkVisitor { inner: visitor, mark: true })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        let mark = fields.contains(&REPLAYED_FIELD);
        self.0.deserialize_struct(name, fields, MarkVisitor { inner: visitor, mark })
    }

    forward_deserialize! {
        deserialize_bool(); deserialize_i8(); deserialize_i16(); deserialize_i32();
        deserialize_i64(); deserialize_i128(); deserialize_u8(); deserialize_u16(); deserialize_u32();
        deserialize_u64(); deserialize_u128(); deserialize_f32(); deserialize_f64(); deserialize_char();
        deserialize_str(); deserialize_string(); deserialize_bytes(); deserialize_byte_buf();
        deserialize_option(); deserialize_unit(); deserialize_unit_struct(name: &'static str);
        deserialize_newtype_struct(name: &'static str); deserialize_seq(); deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize); deserialize_map();
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
        deserialize_identifier(); deserialize_ignored_any();
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

/// A visitor that marks the object it is given when `mark` is set.
struct MarkVisitor<V> {
    inner: V,
    mark: bool,
}

macro_rules! forward_visit {
    ($($method:ident($ty:ty);)*) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<V::Value, E> {
            self.inner.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for MarkVisitor<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    forward_visit! {
        visit_bool(bool); visit_i8(i8); visit_i16(i16); visit_i32(i32); visit_i64(i64); visit_i128(i128);
        visit_u8(u8); visit_u16(u16); visit_u32(u32); visit_u64(u64); visit_u128(u128); visit_f32(f32);
        visit_f64(f64); visit_char(char); visit_str(&str); visit_borrowed_str(&'de str); visit_string(String);
        visit_bytes(&[u8]); visit_borrowed_bytes(&'de [u8]); visit_byte_buf(Vec<u8>);
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        self.inner.visit_some(Marked(deserializer))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        self.inner.visit_newtype_struct(Marked(deserializer))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.inner.visit_seq(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        if !self.mark {
            return self.inner.visit_map(map);
        }
        self.inner.visit_map(MarkedMap { inner: map, next: Next::Inner, seen: false, done: false })
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.inner.visit_enum(data)
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
