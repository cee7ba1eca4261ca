//! The agent frameworks, through what their users run: rmcp's own client over stdio and
//! streamable HTTP (`rmcp`, feature `rmcp`), rig's tool trait (`rig`, feature `rig`), and
//! ADK-Rust's `Tool` and `ToolContext` (`adk`, feature `adk`).

#[path = "../support/mod.rs"]
mod support;

#[cfg(feature = "adk")]
mod adk;
#[cfg(feature = "rig")]
mod rig;
#[cfg(feature = "rmcp")]
mod rmcp;
