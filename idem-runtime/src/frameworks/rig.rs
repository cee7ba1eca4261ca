//! rig: idem's answers as rig `ToolExecutionError`s the model can act on.
//!
//! rig shows the model a tool error's model output. Its default `map_error` replaces any
//! error that is not a `ToolExecutionError` with a generic "the tool failed", so idem's
//! answers convert into `ToolExecutionError` directly: a tool returning
//! `Result<T, ToolExecutionError>` gets them with the stable code, the retryable flag and
//! the structured error `{"error": {"code", "message", "retryable", "suggestion"}}` as the
//! model-visible output. The `idem::Error` stays attached as the source, for code that
//! downcasts.

use rig_core::tool::{ToolErrorKind, ToolExecutionError, ToolOutput as RigToolOutput};

use crate::error::{Error, ErrorCode};

/// An idem answer as a rig tool error; see [`tool_error`].
impl From<Error> for ToolExecutionError {
    fn from(error: Error) -> Self {
        tool_error(error)
    }
}

/// An idem answer as a rig tool error: kind `invalid_args` for INVALID_KEY, `timeout` for
/// TIMEOUT, `other` for the rest; the code (`"CONFLICT"`) and the retryable flag set; the
/// structured error as the model-visible JSON output; the `idem::Error` as the source.
pub fn tool_error(error: Error) -> ToolExecutionError {
    let kind = match error.code() {
        ErrorCode::InvalidKey => ToolErrorKind::InvalidArgs,
        ErrorCode::Timeout => ToolErrorKind::Timeout,
        _ => ToolErrorKind::Other,
    };
    ToolExecutionError::new(kind, error.to_string())
        .with_code(error.code().as_str())
        .with_retryable(error.retryable())
        .with_model_output(RigToolOutput::json(error.to_json()))
        .with_source(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflicts_reach_the_model_with_code_and_suggestion() {
        let error = Error::new(ErrorCode::Conflict, "amount differs").with_suggestion("ask the user");
        let tool_error = ToolExecutionError::from(error.clone());
        assert_eq!(tool_error.code(), Some("CONFLICT"));
        assert_eq!(tool_error.retryable(), Some(false));
        assert_eq!(tool_error.kind(), ToolErrorKind::Other);
        assert_eq!(tool_error.model_output().as_json(), Some(&error.to_json()));
        assert_eq!(tool_error.downcast_ref::<Error>(), Some(&error));
    }

    #[test]
    fn timeouts_are_not_retryable() {
        let tool_error = ToolExecutionError::from(Error::new(ErrorCode::Timeout, "slow"));
        assert_eq!(tool_error.kind(), ToolErrorKind::Timeout);
        assert_eq!(tool_error.retryable(), Some(false));
        let outage = ToolExecutionError::from(Error::new(ErrorCode::StoreUnavailable, "down"));
        assert_eq!(outage.retryable(), Some(true));
    }
}
