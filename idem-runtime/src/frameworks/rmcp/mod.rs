//! rmcp, the official MCP SDK: idem's answers as tool results the model sees.
//!
//! An MCP client passes a tool result (`CallToolResult`) to the model, with `isError: true`
//! for a failure; an `Err(ErrorData)` is a JSON-RPC protocol error that the client handles
//! and the model never sees. So every idem answer that is not a result (IN_PROGRESS,
//! CONFLICT, ...) becomes `Ok(CallToolResult::structured_error({"error": {...}}))`.

mod authenticated;
pub(crate) mod tasks;

pub use authenticated::Authenticated;
pub use tasks::{APPROVAL_INPUT, DECIDED_IN_THE_CLIENT};

use std::any::Any;

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock, IntoContents};
use serde::Serialize;
use serde_json::Value;

use super::status_tool::{Rmcp, StatusTool};
use crate::error::{Error, ErrorCode};
use crate::output::{REPLAYED_FIELD, ToolOutput};
use crate::status::Status;

pub(crate) mod status_input;

/// The text added to a replayed result whose content does not show the structured
/// result's `"replayed": true`, so a model that reads only the text sees the replay too.
pub const REPLAY_NOTE: &str =
    "replayed: an earlier call with the same key already did this; this is its recorded result, nothing was done again";

/// rmcp's usual tool return type. A result with `is_error: true` and an `Err(ErrorData)`
/// are the body's failures: the key is released (unless `on_error = keep`, which keeps
/// `Err(ErrorData)` only). Every idem answer is `Ok(CallToolResult::structured_error(..))`.
// Not listed in "the trait is implemented for" hints: they would differ with the feature.
#[diagnostic::do_not_recommend]
impl ToolOutput for Result<CallToolResult, ErrorData> {
    type Value = CallToolResult;

    fn success(&self) -> Option<&CallToolResult> {
        self.as_ref().ok().filter(|result| result.is_error != Some(true))
    }

    fn from_value(mut value: CallToolResult) -> Self {
        mark_replayed(&mut value);
        Ok(value)
    }

    fn from_error(error: Error) -> Self {
        Ok(error_result(&error))
    }
}

/// Status tools answer with a tool result, whatever their tool returns.
impl StatusTool for Rmcp {
    type Answer = Result<CallToolResult, ErrorData>;

    fn answer<T: Serialize + 'static>(status: Result<Status<T>, Error>) -> Self::Answer {
        Ok(status_result(status))
    }
}

/// An idem error as the tool result a model sees: `isError: true`, the structured error
/// `{"error": {"code", "message", "retryable", "suggestion"}}` as structured content and,
/// for clients that read only text, as a text block.
pub fn error_result(error: &Error) -> CallToolResult {
    CallToolResult::structured_error(error.to_json())
}

/// A status read as the tool result a model sees: the status as structured content
/// (`{"status": "completed", "result": ...}`, `{"status": "in_progress", ...}`, ...), or
/// the error that prevented the read as [`error_result`]. A completed `CallToolResult` is
/// shown by its structured content, else by its text.
pub fn status_result<T: Serialize + 'static>(status: Result<Status<T>, Error>) -> CallToolResult {
    let status = match status {
        Ok(status) => status,
        Err(error) => return error_result(&error),
    };
    let json = match &status {
        Status::Completed(value) => match (value as &dyn Any).downcast_ref::<CallToolResult>() {
            Some(result) => Ok(serde_json::json!({"status": "completed", "result": result_json(result)})),
            None => serde_json::to_value(&status),
        },
        _ => serde_json::to_value(&status),
    };
    match json {
        Ok(json) => CallToolResult::structured(json),
        Err(error) => error_result(&Error::new(
            ErrorCode::RecordUnreadable,
            format!("the recorded result cannot be shown as JSON ({error})"),
        )),
    }
}

/// What a model reads of a tool result: its structured content, else its text.
fn result_json(result: &CallToolResult) -> Value {
    if let Some(structured) = &result.structured_content {
        return structured.clone();
    }
    let texts: Vec<&str> = result.content.iter().filter_map(|block| block.as_text()).map(|t| t.text.as_str()).collect();
    Value::String(texts.join("\n"))
}

/// Marks a replayed result: `"replayed": true` in its structured content when that is a
/// JSON object (and in the text block that mirrors it), else a [`REPLAY_NOTE`] text block.
fn mark_replayed(result: &mut CallToolResult) {
    let mut shown = false;
    if let Some(Value::Object(map)) = &mut result.structured_content {
        let before = Value::Object(map.clone()).to_string();
        map.insert(REPLAYED_FIELD.to_owned(), Value::Bool(true));
        let after = Value::Object(map.clone()).to_string();
        for block in &mut result.content {
            if let ContentBlock::Text(text) = block
                && text.text == before
            {
                text.text.clone_from(&after);
                shown = true;
            }
        }
    }
    if !shown {
        result.content.push(ContentBlock::text(REPLAY_NOTE));
    }
}

/// An `idem::Error` as rmcp content: the structured error as JSON text. With it,
/// `Result<String, idem::Error>` is an rmcp tool return type, and rmcp marks the error
/// result `isError: true`.
impl IntoContents for Error {
    fn into_contents(self) -> Vec<ContentBlock> {
        vec![ContentBlock::text(self.to_json().to_string())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn idem_errors_are_tool_results_the_model_sees() {
        let error = Error::new(ErrorCode::Conflict, "amount differs").with_suggestion("ask the user");
        let Ok(result) = <Result<CallToolResult, ErrorData>>::from_error(error) else { panic!("a protocol error") };
        assert_eq!(result.is_error, Some(true));
        let structured = result.structured_content.unwrap();
        assert_eq!(structured["error"]["code"], "CONFLICT");
        assert_eq!(structured["error"]["retryable"], false);
        assert_eq!(structured["error"]["suggestion"], "ask the user");
        assert_eq!(result.content[0].as_text().unwrap().text, structured.to_string());
    }

    #[test]
    fn failed_results_are_not_stored() {
        let failed: Result<CallToolResult, ErrorData> = Ok(CallToolResult::error(vec![ContentBlock::text("no")]));
        assert!(failed.success().is_none());
        let fine: Result<CallToolResult, ErrorData> = Ok(CallToolResult::success(vec![ContentBlock::text("ok")]));
        assert!(fine.success().is_some());
    }

    #[test]
    fn replays_are_marked_in_structured_content_and_its_text() {
        let Ok(replayed) =
            <Result<CallToolResult, ErrorData>>::from_value(CallToolResult::structured(json!({"id": 1})))
        else {
            panic!()
        };
        assert_eq!(replayed.structured_content, Some(json!({"id": 1, "replayed": true})));
        assert_eq!(replayed.content.len(), 1);
        assert_eq!(replayed.content[0].as_text().unwrap().text, r#"{"id":1,"replayed":true}"#);
    }

    #[test]
    fn text_replays_get_a_note() {
        let Ok(replayed) =
            <Result<CallToolResult, ErrorData>>::from_value(CallToolResult::success(vec![ContentBlock::text("sent")]))
        else {
            panic!()
        };
        assert_eq!(replayed.content[1].as_text().unwrap().text, REPLAY_NOTE);
    }

    #[test]
    fn status_reads_show_the_result_the_model_saw() {
        let completed = status_result(Ok(Status::Completed(CallToolResult::structured(json!({"id": 1})))));
        assert_eq!(completed.is_error, Some(false));
        assert_eq!(completed.structured_content, Some(json!({"status": "completed", "result": {"id": 1}})));
        let missing = status_result::<CallToolResult>(Ok(Status::NotFound));
        assert_eq!(missing.structured_content, Some(json!({"status": "not_found"})));
        let failed = status_result::<u8>(Err(Error::new(ErrorCode::StoreUnavailable, "down")));
        assert_eq!(failed.is_error, Some(true));
    }
}
