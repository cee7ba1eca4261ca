//! The seam between the driver and a front end that serves calls over a protocol (rmcp's
//! MCP Tasks): what the driver tells it, at the two moments a served call may answer with
//! something other than the tool's own output. The driver knows no front end by name; a
//! tool that has one names it in [`Tool::serving`](super::Tool::serving).

use std::time::Instant;

use crate::error::Running;
use crate::key::Key;
use crate::store::{AsyncStore, BoxFuture, Token};

use super::Tool;

/// What a front end learns from the driver about a call of one of its tools. Async tools
/// only: `store` is the call's own store, so the front end can keep what it promises a
/// client (an MCP task) in the same store as the record it stands for.
#[doc(hidden)]
pub trait Serving: std::fmt::Debug + Send + Sync + 'static {
    /// The call found `tool`'s action under `key` running, and answers IN_PROGRESS with
    /// `running` unless the front end answers for it.
    fn found_running<'a>(
        &'a self,
        tool: &'static Tool,
        key: &'a Key,
        running: &'a Running,
        store: &'a dyn AsyncStore,
    ) -> BoxFuture<'a, ()>;

    /// The call holds `key` under `token` (the reservation is durable) and its body is
    /// about to run; it started at `started`.
    fn body_started<'a>(
        &'a self,
        tool: &'static Tool,
        key: &'a Key,
        token: Token,
        started: Instant,
        store: &'a dyn AsyncStore,
    ) -> BoxFuture<'a, ()>;

    /// The running call under `key`, held by `token`, renewed its lease (every third of
    /// it, and soon after its body reports progress): the front end may tell the body, by
    /// [`cancel::request`](super::cancel), of a request to stop that another worker received.
    fn renewed<'a>(
        &'a self,
        tool: &'static Tool,
        key: &'a Key,
        token: Token,
        store: &'a dyn AsyncStore,
    ) -> BoxFuture<'a, ()>;
}
