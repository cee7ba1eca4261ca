//! Nothing to see: the cases are in `fail/` and `rmcp/`, run by `ui.rs`.
