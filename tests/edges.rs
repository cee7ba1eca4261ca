//! The edges real deployments reach, one module each, in one test binary (one link
//! instead of eight in a cold `cargo test`):
//!
//! - `namespaces`: tools of one name never share records by accident; `<tool>_record_id`.
//! - `unreadable`: a record in a state the store does not know is RECORD_UNREADABLE.
//! - `sqlite_open`: processes opening one new SQLite file together all get the store.
//! - `sqlite_file_replaced`: a store whose file is deleted or replaced answers from none.
//! - `round_trip`: a result that does not read back from its JSON never poisons its key.
//! - `replay_marker`: `"replayed": true` only where a model reads JSON or a type asks.
//! - `custom_store`: a `Store` implemented once serves async and sync tools.
//! - `store_methods`: store operations through `Store` or `Store`, both in scope.
//! - `error_serde`: `idem::Error` round-trips through serde.
//! - `default_store`: the default store does not move with the working directory, its
//!   path is fixed when first asked for, and it is private to its user.
//! - `slow_calls`: leases renewed while a body runs; killed processes and `max_hold`.
//! - `stable_identifiers`: key field types that make a reworded retry one key and refuse an
//!   unknown identifier before anything is reserved.
//! - `tenants`: `scope = expr` keeps each caller's records apart.
//! - `pg_faults`: a PostgreSQL server or network that stops answering never hangs a call.
//! - `completion_attempts`: a completion that fails is written again, unless the store
//!   waited its whole deadline.

#[path = "edges/completion_attempts.rs"]
mod completion_attempts;
#[path = "edges/custom_store.rs"]
mod custom_store;
#[path = "edges/default_store.rs"]
mod default_store;
#[path = "edges/error_serde.rs"]
mod error_serde;
#[path = "support/stable_identifiers.rs"]
mod identifiers;
#[path = "edges/namespaces.rs"]
mod namespaces;
#[path = "edges/pg.rs"]
mod pg;
#[path = "edges/pg_faults.rs"]
mod pg_faults;
#[path = "support/postgres.rs"]
mod postgres;
#[path = "edges/replay_marker.rs"]
mod replay_marker;
#[path = "edges/round_trip.rs"]
mod round_trip;
#[path = "edges/slow_calls.rs"]
mod slow_calls;
#[path = "edges/sqlite_file_replaced.rs"]
mod sqlite_file_replaced;
#[path = "edges/sqlite_open.rs"]
mod sqlite_open;
#[path = "edges/stable_identifiers.rs"]
mod stable_identifiers;
#[path = "edges/store_methods.rs"]
mod store_methods;
#[path = "edges/tenants.rs"]
mod tenants;
#[path = "edges/unreadable.rs"]
mod unreadable;
