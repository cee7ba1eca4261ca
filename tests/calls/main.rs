//! Calls of idempotent tools in one process, on every store: every outcome of the contract
//! (`outcomes`, `scenarios`), approvals and budgets, duplicate calls racing on threads,
//! transactions with the store's own database, failing stores, panics and cancellation
//! (`faults`), a model-based test of random call sequences (`model`), and the accepted forms
//! of the attribute, each compiled and run (`accepted`).

#[path = "../support/mod.rs"]
mod support;

mod accepted;
mod approvals;
mod budgets;
mod concurrency;
mod faults;
mod model;
mod outcomes;
mod scenarios;
mod transactions;
