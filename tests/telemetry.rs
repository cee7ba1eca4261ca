//! Telemetry, seen as a user's exporter sees it:
//!
//! - `spans`: the `execute_tool <tool>` span of each call (OpenTelemetry's GenAI
//!   conventions), through a capturing `tracing` layer.
//! - `facade`: the call counter and duration histogram through the `metrics` facade.
//! - `observer`: lifecycle events for code.
//! - `rmcp`: the spans of an rmcp server's tool, called by rmcp's client.
//! - `approvals`: requests, decisions and expiries in all three.

#[path = "telemetry/approvals.rs"]
mod approvals;
#[path = "telemetry/budgets.rs"]
mod budgets;
#[path = "telemetry/capture.rs"]
mod capture;
#[cfg(feature = "metrics")]
#[path = "telemetry/facade.rs"]
mod facade;
#[cfg(feature = "rmcp")]
#[path = "support/mcp.rs"]
mod mcp;
#[path = "telemetry/observer.rs"]
mod observer;
#[cfg(feature = "rmcp")]
#[path = "telemetry/rmcp.rs"]
mod rmcp;
#[path = "telemetry/spans.rs"]
mod spans;
