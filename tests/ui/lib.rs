//! Nothing to see: the cases are in `fail/`, `rmcp/` and `adk/`, run by `ui.rs`.
