//! A [`ToolContext`] for calling an ADK-Rust tool in a test as ADK's agent calls it (features
//! `testing` and `adk`).
//!
//! ADK's `LlmAgent` makes one `ToolContext` per function call of the model: the user and
//! session its runner authenticated, and the call's id. A tool with `#[idempotent]` reads
//! its scope from that context (`scope = ctx.user_id()`), and a retry the model plans
//! after a timeout comes with a new function call id. ADK's own `SimpleToolContext`
//! answers `"anonymous"` for every user, so it cannot show that two users' records are
//! apart; [`ToolCall`] takes the user and the call id you give it.
//!
//! ```
//! use adk_core::{ReadonlyContext, ToolContext};
//! use idem_runtime::testing::adk::ToolCall;
//!
//! // The model's first call, and its retry after a timeout: a new function call id.
//! let first = ToolCall::new("alice", "call-1").into_context();
//! let retry = ToolCall::new("alice", "call-2").session("session-7").into_context();
//! assert_eq!((first.user_id(), first.function_call_id()), ("alice", "call-1"));
//! assert_eq!((retry.user_id(), retry.session_id()), ("alice", "session-7"));
//! // Pass each to your tool's `execute`: `SendInvoice.execute(first, args).await`.
//! ```

use std::sync::{Arc, Mutex};

use adk_core::{
    Artifacts, CallbackContext, Content, EventActions, MemoryEntry, ReadonlyContext, ToolContext, async_trait,
};

/// One function call of the model, as ADK's agent hands it to a tool: a user, an app, a
/// session, an invocation and the call's id. Every other part answers as a fresh agent
/// turn would (no artifacts, no memory, empty actions that the tool may set).
#[derive(Debug)]
pub struct ToolCall {
    user: String,
    app: String,
    session: String,
    invocation: String,
    function_call_id: String,
    user_content: Content,
    actions: Mutex<EventActions>,
}

impl ToolCall {
    /// The call `function_call_id` made for `user`, in the app `"app"`, the session
    /// `"session-1"` and the invocation `"invocation-1"`.
    pub fn new(user: impl Into<String>, function_call_id: impl Into<String>) -> Self {
        ToolCall {
            user: user.into(),
            app: "app".to_owned(),
            session: "session-1".to_owned(),
            invocation: "invocation-1".to_owned(),
            function_call_id: function_call_id.into(),
            user_content: Content::new("user"),
            actions: Mutex::default(),
        }
    }

    /// The same call in the app `name` (`ctx.app_name()`).
    pub fn app(mut self, name: impl Into<String>) -> Self {
        self.app = name.into();
        self
    }

    /// The same call in the session `id` (`ctx.session_id()`).
    pub fn session(mut self, id: impl Into<String>) -> Self {
        self.session = id.into();
        self
    }

    /// The same call in the invocation `id` (`ctx.invocation_id()`).
    pub fn invocation(mut self, id: impl Into<String>) -> Self {
        self.invocation = id.into();
        self
    }

    /// The context a tool's `execute` takes.
    pub fn into_context(self) -> Arc<dyn ToolContext> {
        Arc::new(self)
    }
}

#[async_trait]
impl ReadonlyContext for ToolCall {
    fn invocation_id(&self) -> &str {
        &self.invocation
    }
    fn agent_name(&self) -> &str {
        "agent"
    }
    fn user_id(&self) -> &str {
        &self.user
    }
    fn app_name(&self) -> &str {
        &self.app
    }
    fn session_id(&self) -> &str {
        &self.session
    }
    fn branch(&self) -> &str {
        ""
    }
    fn user_content(&self) -> &Content {
        &self.user_content
    }
}

#[async_trait]
impl CallbackContext for ToolCall {
    fn artifacts(&self) -> Option<Arc<dyn Artifacts>> {
        None
    }
}

#[async_trait]
impl ToolContext for ToolCall {
    fn function_call_id(&self) -> &str {
        &self.function_call_id
    }
    fn actions(&self) -> EventActions {
        self.actions.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }
    fn set_actions(&self, actions: EventActions) {
        *self.actions.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = actions;
    }
    async fn search_memory(&self, _query: &str) -> adk_core::Result<Vec<MemoryEntry>> {
        Ok(Vec::new())
    }
}
