//! Processes: this binary run again as child processes that are killed with SIGKILL in the
//! middle of a call (`crash`, `kill_concurrent`), frozen past their lease (`crash`), or race
//! each other on one SQLite file (`multiprocess`), one PostgreSQL database
//! (`postgres_workers`) and one budget (`budget_races`, on SQLite, PostgreSQL and Redis),
//! their effects counted: exactly one per key.

#[path = "../support/mod.rs"]
mod support;

mod budget_races;
mod crash;
mod kill_concurrent;
mod multiprocess;
mod postgres_workers;
