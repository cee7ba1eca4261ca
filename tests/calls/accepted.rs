//! The accepted forms of `#[idempotent]`: each file in `tests/calls/accepted/` is a small
//! program (a tool and a `main` that calls it and its status function), compiled here as a
//! module and run as a test. The compile errors are in `tests/ui` (trybuild).

// Some forms exist to be type-checked only (the default store is never called, an error
// variant is never read).
#![allow(dead_code)]

#[path = "accepted/approval-forms.rs"]
mod approval_forms;

#[path = "accepted/async-fn.rs"]
mod async_fn;

#[path = "accepted/default-store.rs"]
mod default_store;

#[path = "accepted/event-id-key-field.rs"]
mod event_id_key_field;

#[path = "accepted/field-path.rs"]
mod field_path;

#[path = "accepted/hash-and-exact-modifiers.rs"]
mod hash_and_exact_modifiers;

#[path = "accepted/keypart-newtype.rs"]
mod keypart_newtype;

#[path = "accepted/pattern-bindings.rs"]
mod pattern_bindings;

#[cfg(feature = "rmcp")]
#[path = "accepted/rmcp-scope-root-shares-a-field-name.rs"]
mod rmcp_scope_root_shares_a_field_name;

#[cfg(feature = "rmcp")]
#[path = "accepted/rmcp-tasks-on-a-hand-written-call-tool.rs"]
mod rmcp_tasks_on_a_hand_written_call_tool;

#[cfg(feature = "rmcp")]
#[path = "accepted/rmcp-tasks-in-a-macro-rules-impl.rs"]
mod rmcp_tasks_in_a_macro_rules_impl;

#[path = "accepted/self-method.rs"]
mod self_method;

#[path = "accepted/sync-free-fn.rs"]
mod sync_free_fn;

#[test]
fn approval_forms() {
    approval_forms::main();
}

#[test]
fn async_fn() {
    async_fn::main();
}

#[test]
fn default_store() {
    default_store::main();
}

#[test]
fn event_id_key_field() {
    event_id_key_field::main();
}

#[test]
fn field_path() {
    field_path::main();
}

#[test]
fn hash_and_exact_modifiers() {
    hash_and_exact_modifiers::main();
}

#[test]
fn keypart_newtype() {
    keypart_newtype::main();
}

#[test]
fn pattern_bindings() {
    pattern_bindings::main();
}

#[cfg(feature = "rmcp")]
#[test]
fn rmcp_scope_root_shares_a_field_name() {
    rmcp_scope_root_shares_a_field_name::main();
}

#[test]
fn self_method() {
    self_method::main();
}

#[test]
fn sync_free_fn() {
    sync_free_fn::main();
}

#[cfg(feature = "rmcp")]
#[test]
fn rmcp_tasks_on_a_hand_written_call_tool() {
    rmcp_tasks_on_a_hand_written_call_tool::main();
}

#[cfg(feature = "rmcp")]
#[test]
fn rmcp_tasks_in_a_macro_rules_impl() {
    rmcp_tasks_in_a_macro_rules_impl::main();
}
