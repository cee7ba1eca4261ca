//! The layer's own answers, as RFC 9457 problem details (`application/problem+json`).

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use http::{Response, StatusCode};

use super::key_header::{KeyRule, MAX_KEY_CHARS};

/// Where each problem `type` is described: the module docs' "Problem types" section, one
/// heading per type.
pub const PROBLEM_TYPE_BASE: &str = "https://docs.rs/idem-tools/latest/idem/http/index.html#";

/// One answer the layer gives itself, instead of the service's.
#[derive(Debug)]
pub(crate) struct Problem {
    pub(crate) status: StatusCode,
    /// The end of the `type` URI, and the heading that describes it.
    pub(crate) kind: &'static str,
    pub(crate) title: &'static str,
    pub(crate) detail: String,
    /// `Retry-After`, in whole seconds.
    pub(crate) retry_after: Option<u64>,
}

impl Problem {
    pub(crate) fn new(status: StatusCode, kind: &'static str, title: &'static str, detail: impl Into<String>) -> Self {
        Problem { status, kind, title, detail: detail.into(), retry_after: None }
    }

    pub(crate) fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// A `400` for a key that breaks one of the draft's rules.
    pub(crate) fn bad_key(rule: KeyRule) -> Self {
        let (title, detail) = match rule {
            KeyRule::Missing => (
                "Idempotency-Key is missing",
                "This operation is idempotent and requires an Idempotency-Key header: a string unique to \
                 the operation (a UUID, say). Send the same key again to retry the operation."
                    .to_owned(),
            ),
            KeyRule::Repeated => (
                "Idempotency-Key is repeated",
                "The request has more than one Idempotency-Key header field; send exactly one.".to_owned(),
            ),
            KeyRule::Empty => ("Idempotency-Key is empty", "The Idempotency-Key header holds no key.".to_owned()),
            KeyRule::Comma => (
                "Idempotency-Key contains a comma",
                "An Idempotency-Key is one string; with a comma it reads as a list. Send a key without commas."
                    .to_owned(),
            ),
            KeyRule::TooLong => {
                ("Idempotency-Key is too long", format!("An Idempotency-Key has at most {MAX_KEY_CHARS} characters."))
            }
            KeyRule::NotAString => (
                "Idempotency-Key is not a string",
                "An Idempotency-Key is a Structured Field string: printable ASCII in double quotes, with \\\" \
                 and \\\\ escaped, and nothing after the closing quote (a bare key of printable ASCII without \
                 spaces, quotes or backslashes is read as if quoted)."
                    .to_owned(),
            ),
        };
        Problem::new(StatusCode::BAD_REQUEST, rule.as_str(), title, detail)
    }

    /// The problem as a response.
    pub(crate) fn into_response<B: From<Bytes>>(self) -> Response<B> {
        let body = serde_json::json!({
            "type": format!("{PROBLEM_TYPE_BASE}{}", self.kind),
            "title": self.title,
            "status": self.status.as_u16(),
            "detail": self.detail,
        });
        let mut response = Response::new(B::from(Bytes::from(body.to_string())));
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/problem+json"));
        if let Some(seconds) = self.retry_after {
            headers.insert(RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}
