//! A final response as it is stored and replayed: its status, the allow-listed headers and
//! the body.
//!
//! The record's result is pinned JSON, which an operator may also write (`idem resolve`):
//! `{"status": 201, "headers": [["content-type", "application/json"]], "body": "..."}`,
//! with `"body_base64"` in place of `"body"` for a body that is not UTF-8. Header values
//! are written as text, each byte one character (bytes above 0x7f as U+0080 to U+00FF).

use std::borrow::Cow;

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::{HeaderMap, Response, StatusCode};
use serde::de::Error as _;

/// A response kept for replays.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StoredResponse {
    pub(crate) status: StatusCode,
    pub(crate) headers: Vec<(HeaderName, HeaderValue)>,
    pub(crate) body: Bytes,
}

impl StoredResponse {
    /// What of a response is stored: its status, the headers named in `keep`, its body.
    pub(crate) fn keep(status: StatusCode, headers: &HeaderMap, keep: &[HeaderName], body: Bytes) -> Self {
        let headers = keep
            .iter()
            .flat_map(|name| headers.get_all(name).iter().map(move |value| (name.clone(), value.clone())))
            .collect();
        StoredResponse { status, headers, body }
    }

    /// The replay: the stored response with `Idempotent-Replayed: true`.
    pub(crate) fn replay<B: From<Bytes>>(self) -> Response<B> {
        let mut response = Response::new(B::from(self.body));
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        for (name, value) in self.headers {
            headers.append(name, value);
        }
        headers.insert(super::IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
        response
    }
}

/// The record as written: borrowed from the response, so storing copies nothing twice.
#[derive(serde::Serialize)]
struct WireOut<'a> {
    status: u16,
    headers: Vec<(&'a str, Cow<'a, str>)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    body: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    body_base64: Option<String>,
}

/// The record as read: only `status` is required, so an operator may write the least.
/// Strings are borrowed from the record where JSON needs no unescaping.
#[derive(serde::Deserialize)]
struct WireIn<'a> {
    status: u16,
    #[serde(default, borrow)]
    headers: Vec<WireHeader<'a>>,
    #[serde(borrow)]
    body: Option<WireText<'a>>,
    #[serde(borrow)]
    body_base64: Option<WireText<'a>>,
}

// serde borrows a `Cow<str>` only where it is a field's whole type (its `borrow_cow_str`);
// inside a tuple or an `Option` it would allocate a `String` for every header name and value.

/// A stored header: `[name, value]`.
#[derive(serde::Deserialize)]
struct WireHeader<'a>(#[serde(borrow)] Cow<'a, str>, #[serde(borrow)] Cow<'a, str>);

/// A stored string, borrowed from the record unless it holds escapes.
#[derive(serde::Deserialize)]
struct WireText<'a>(#[serde(borrow)] Cow<'a, str>);

/// A header value as text: each byte one character, so any value HTTP allows reads back.
fn value_text(value: &HeaderValue) -> Cow<'_, str> {
    match value.to_str() {
        Ok(text) => text.into(),
        Err(_) => value.as_bytes().iter().map(|&byte| char::from(byte)).collect::<String>().into(),
    }
}

impl serde::Serialize for StoredResponse {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let text = std::str::from_utf8(&self.body).ok();
        WireOut {
            status: self.status.as_u16(),
            headers: self.headers.iter().map(|(name, value)| (name.as_str(), value_text(value))).collect(),
            body: text,
            body_base64: if text.is_none() { Some(base64::encode(&self.body)) } else { None },
        }
        .serialize(serializer)
    }
}

impl<'de> serde::Deserialize<'de> for StoredResponse {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = WireIn::deserialize(deserializer)?;
        let status = StatusCode::from_u16(wire.status)
            .map_err(|_| D::Error::custom(format!("stored status {} is not a status code", wire.status)))?;
        let mut headers = Vec::with_capacity(wire.headers.len());
        for WireHeader(name, value) in wire.headers {
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(D::Error::custom)?;
            let value = if value.is_ascii() {
                HeaderValue::from_str(&value).ok()
            } else {
                let bytes: Option<Vec<u8>> = value.chars().map(|c| u8::try_from(u32::from(c)).ok()).collect();
                bytes.and_then(|bytes| HeaderValue::from_bytes(&bytes).ok())
            };
            let value =
                value.ok_or_else(|| D::Error::custom(format!("stored header {name} has a value HTTP cannot send")))?;
            headers.push((name, value));
        }
        let body = match (wire.body, wire.body_base64) {
            (Some(WireText(text)), None) => Bytes::from(text.into_owned()),
            (None, Some(WireText(encoded))) => Bytes::from(base64::decode(&encoded).map_err(D::Error::custom)?),
            (None, None) => Bytes::new(),
            (Some(_), Some(_)) => {
                return Err(D::Error::custom("a stored response has \"body\" (text) or \"body_base64\", not both"));
            }
        };
        Ok(StoredResponse { status, headers, body })
    }
}

/// Standard base64 with padding, for bodies that are not UTF-8.
mod base64 {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

    pub(super) fn encode(bytes: &[u8]) -> String {
        let mut text = String::with_capacity(bytes.len().div_ceil(3) * 4);
        for chunk in bytes.chunks(3) {
            let word = chunk.iter().enumerate().fold(0u32, |word, (i, &b)| word | u32::from(b) << (16 - 8 * i));
            for i in 0..4 {
                if i <= chunk.len() {
                    text.push(char::from(ALPHABET[(word >> (18 - 6 * i)) as usize & 63]));
                } else {
                    text.push('=');
                }
            }
        }
        text
    }

    pub(super) fn decode(text: &str) -> Result<Vec<u8>, &'static str> {
        const INVALID: &str = "\"body_base64\" is not base64";
        let text = text.as_bytes();
        if !text.len().is_multiple_of(4) {
            return Err(INVALID);
        }
        let mut bytes = Vec::with_capacity(text.len() / 4 * 3);
        for (n, chunk) in text.chunks(4).enumerate() {
            let last = n + 1 == text.len() / 4;
            let padding = chunk.iter().rev().take_while(|&&c| c == b'=').count();
            if padding > 2 || (padding > 0 && !last) {
                return Err(INVALID);
            }
            let mut word = 0u32;
            for (i, &c) in chunk[..4 - padding].iter().enumerate() {
                let digit = ALPHABET.iter().position(|&a| a == c).ok_or(INVALID)?;
                word |= (digit as u32) << (18 - 6 * i);
            }
            bytes.extend_from_slice(&word.to_be_bytes()[1..4 - padding]);
        }
        Ok(bytes)
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn round_trips_every_length() {
            let bytes: Vec<u8> = (0..=255).collect();
            for len in 0..40 {
                let encoded = super::encode(&bytes[len * 5..len * 5 + len]);
                assert_eq!(super::decode(&encoded).unwrap(), &bytes[len * 5..len * 5 + len]);
            }
            assert_eq!(super::encode(b"hello"), "aGVsbG8=");
            assert!(super::decode("aGVsbG8").is_err() && super::decode("a=Vs").is_err());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::StoredResponse;
    use bytes::Bytes;
    use http::header::{HeaderName, HeaderValue};

    #[test]
    fn text_binary_and_header_bytes_read_back() {
        for body in [Bytes::from_static(b"{\"id\":1}"), Bytes::from_static(b"\xff\x00binary"), Bytes::new()] {
            let stored = StoredResponse {
                status: http::StatusCode::CREATED,
                headers: vec![
                    (HeaderName::from_static("etag"), HeaderValue::from_bytes(b"\"caf\xe9\"").unwrap()),
                    (HeaderName::from_static("link"), HeaderValue::from_static("</a>")),
                    (HeaderName::from_static("link"), HeaderValue::from_static("</b>")),
                ],
                body,
            };
            let json = serde_json::to_string(&stored).unwrap();
            assert_eq!(serde_json::from_str::<StoredResponse>(&json).unwrap(), stored, "{json}");
        }
    }

    #[test]
    fn an_operator_may_write_the_least_response() {
        let stored: StoredResponse = serde_json::from_str(r#"{"status":204}"#).unwrap();
        assert_eq!((stored.status.as_u16(), stored.headers.len(), stored.body.len()), (204, 0, 0));
        for bad in [
            r#"{"status":99}"#,
            r#"{"status":200,"headers":[["x"]]}"#,
            r#"{"status":200,"body":"a","body_base64":"YQ=="}"#,
        ] {
            assert!(serde_json::from_str::<StoredResponse>(bad).is_err(), "{bad}");
        }
    }
}
