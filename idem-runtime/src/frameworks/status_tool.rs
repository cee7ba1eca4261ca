//! How `#[idem::status_tools]` serves a status read as a framework's tool: named only by
//! the expansion, through `__private`.

use serde::Serialize;

use crate::error::Error;
use crate::status::Status;

/// The framework a status tool is served through; see [`StatusTool`].
#[derive(Clone, Copy, Debug)]
pub struct Rmcp;

/// How a status read is served as a tool of a framework: what `#[idem::status_tools]`
/// generates calls this, through the marker [`Rmcp`], implemented with the `rmcp` feature.
#[diagnostic::on_unimplemented(
    message = "#[idem::status_tools] serves status functions as rmcp tools: enable idem's `rmcp` feature",
    label = "needs idem's `rmcp` feature",
    note = "in Cargo.toml: idem-tools = {{ version = \"0.1\", features = [\"rmcp\"] }}"
)]
pub trait StatusTool {
    /// The status tool's return type.
    type Answer;
    /// A status read, or the error that prevented it, as the tool's answer.
    fn answer<T: Serialize + 'static>(status: Result<Status<T>, Error>) -> Self::Answer;
}
