//! What one request came to, as idem's driver sees it (a [`ToolOutput`]), and as the
//! client gets it.

use bytes::Bytes;
use http::{Response, StatusCode};

use super::problem::Problem;
use super::stored::StoredResponse;
use crate::call::ErrorPolicy;
use crate::error::{Error, ErrorCode};
use crate::output::ToolOutput;

/// A request's answer. `E` is the inner service's error.
pub(crate) enum Handled<B, E> {
    /// The service answered with a final response, stored for repeats; the first caller
    /// gets it whole, every header included.
    Fresh { response: Response<B>, stored: StoredResponse },
    /// A repeat of a request that was answered: the stored response.
    Replayed(StoredResponse),
    /// A response that is not final: the key is released.
    Released(Response<B>),
    /// The service may have acted and its answer cannot be stored (its body is too large,
    /// failed midway, or the service failed): the key is kept, marked abandoned.
    Unknown(Result<Response<B>, E>),
    /// idem's own answer (IN_PROGRESS, CONFLICT, ...).
    Idem(Error),
}

impl<B, E> From<Error> for Handled<B, E> {
    fn from(error: Error) -> Self {
        Handled::Idem(error)
    }
}

impl<B, E> ToolOutput for Handled<B, E> {
    type Value = StoredResponse;

    fn success(&self) -> Option<&StoredResponse> {
        match self {
            Handled::Fresh { stored, .. } => Some(stored),
            _ => None,
        }
    }

    fn from_value(stored: StoredResponse) -> Self {
        Handled::Replayed(stored)
    }

    fn from_error(error: Error) -> Self {
        Handled::Idem(error)
    }
}

/// A response that is not final is released; one whose outcome is unknown is kept.
pub(crate) struct HttpPolicy;

impl<B, E> ErrorPolicy<Handled<B, E>> for HttpPolicy {
    fn kept_error(&self, _: &Handled<B, E>) -> Option<Result<String, serde_json::Error>> {
        None
    }

    fn replay_error(&self, _: &str) -> Option<Result<Handled<B, E>, serde_json::Error>> {
        None
    }

    fn outcome_unknown(&self, output: &Handled<B, E>) -> bool {
        matches!(output, Handled::Unknown(_))
    }
}

impl<B: From<Bytes>, E> Handled<B, E> {
    /// The client's answer.
    pub(crate) fn into_response(self, key: &str) -> Result<Response<B>, E> {
        match self {
            Handled::Fresh { response, .. } | Handled::Released(response) => Ok(response),
            Handled::Replayed(stored) => Ok(stored.replay()),
            Handled::Unknown(response) => response,
            Handled::Idem(error) => Ok(idem_problem(&error, key).into_response()),
        }
    }
}

/// idem's answer as a problem.
fn idem_problem(error: &Error, key: &str) -> Problem {
    let seconds = |error: &Error| error.running().map_or(1, |running| running.retry_after.as_secs_f64().ceil() as u64);
    match error.code() {
        ErrorCode::InProgress => Problem::new(
            StatusCode::CONFLICT,
            "request-in-progress",
            "A request with this Idempotency-Key is being processed",
            format!(
                "The first request with Idempotency-Key {key:?} is still being processed. Retry after the \
                 time Retry-After gives, with the same key, to get its response."
            ),
        )
        .retry_after(seconds(error).max(1)),
        ErrorCode::Conflict => {
            let differs: Vec<&str> = error.differences().iter().map(|difference| difference.field.as_str()).collect();
            let what = match differs.as_slice() {
                [] => "another request".to_owned(),
                fields => format!("a request with another {}", fields.join(" and ")),
            };
            Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "key-reused",
                "Idempotency-Key is already used",
                format!(
                    "Idempotency-Key {key:?} was first used for {what}. A key stands for one operation: send \
                     this request with a key of its own, or repeat the first request unchanged."
                ),
            )
        }
        ErrorCode::OutcomeUnknown => Problem::new(
            StatusCode::CONFLICT,
            "outcome-unknown",
            "The outcome of the request with this Idempotency-Key is unknown",
            format!(
                "The first request with Idempotency-Key {key:?} started and did not finish in a way that \
                 could be recorded (its process stopped, or its response could not be stored). It may have \
                 taken effect, so it is not run again; an operator settles it (idem resolve)."
            ),
        ),
        ErrorCode::StoreUnavailable => Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "store-unavailable",
            "The idempotency store is unavailable",
            "The request was not processed: its Idempotency-Key could not be checked. Retry it with the same key.",
        )
        .retry_after(1),
        ErrorCode::RecordUnreadable => Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "record-unreadable",
            "The stored response for this Idempotency-Key cannot be read",
            format!(
                "The request with Idempotency-Key {key:?} was processed, and its stored response does not \
                 read back; it is not run again. An operator can read the record (idem show)."
            ),
        ),
        ErrorCode::InvalidKey => Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "scope-missing",
            "The request has no caller scope",
            "This service keys requests per caller, and found no caller for this one; it was not processed.",
        ),
        _ => Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "idempotency-failed",
            "The request's Idempotency-Key could not be honoured",
            format!("The request was not processed: {}", error.code()),
        ),
    }
}
