//! How idem's answers reach a model: through the tool's own return type, and through the
//! agent frameworks rmcp, rig and ADK-Rust.
//!
//! An `#[idempotent]` tool returns a [`ToolOutput`]: a `Result<T, E>` where `T` is stored
//! and replayed as JSON and `E: From<idem::Error>` carries idem's answers (IN_PROGRESS,
//! CONFLICT, ...). Implement [`ToolOutput`] for a return type of your own. A replay is
//! the stored JSON read back by [`replay_value`], which sets [`REPLAYED_FIELD`]
//! (`"replayed": true`) where the type can show it.
//!
//! - [`rmcp`](rmcp/index.html) (feature `rmcp`): a tool returning
//!   `Result<CallToolResult, ErrorData>` gets idem's answers as `Ok(CallToolResult::structured_error(..))`, a tool result the
//!   model sees with `isError: true`, never as `Err(ErrorData)`, a protocol error the
//!   model never sees. Replays are marked `"replayed": true`. `idem::Error` also converts
//!   into rmcp content, so `Result<String, idem::Error>` tools work as they are.
//! - [`rig`](rig/index.html) (feature `rig`): `idem::Error` converts into rig's
//!   `ToolExecutionError` with the code, the retryable flag and the structured error as the model-visible output.
//! - [`adk`](adk/index.html) (feature `adk`): `idem::Error` converts into ADK-Rust's
//!   `AdkError` with the code, a category, the retry hint and the structured error as its
//!   message, which ADK's agent hands the model; an ADK `#[tool]` gets a read-only status
//!   tool, `<Tool>Status`, another ADK `Tool`.
//!
//! The `#[idempotent]` attribute recognizes `#[tool]` and `#[rig_tool]` by name (rmcp's
//! `#[tool]` and ADK-Rust's by their path or the function's signature: see
//! [`adk`](adk/index.html#which-tool)); it adds
//! `idempotent_hint = true` to an rmcp tool's annotations and makes the status function a
//! rig tool. `#[idem::status_tools]` above `#[tool_router]` registers the status functions
//! of an rmcp server as read-only tools.

pub use crate::output::{REPLAYED_FIELD, ToolOutput, replay_value};

#[cfg(feature = "adk")]
#[cfg_attr(docsrs, doc(cfg(feature = "adk")))]
pub mod adk;
#[cfg(feature = "rig")]
#[cfg_attr(docsrs, doc(cfg(feature = "rig")))]
pub mod rig;
#[cfg(feature = "rmcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "rmcp")))]
pub mod rmcp;
#[cfg(any(feature = "rmcp", feature = "adk"))]
pub(crate) mod status_args;
pub(crate) mod status_tool;
