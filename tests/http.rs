//! The HTTP layer (`idem::http`), through a real HTTP client against an axum server on
//! 127.0.0.1: every rule of the Idempotency-Key draft the `idem::http` docs' table lists, with the
//! service's effects counted, on the memory, SQLite, PostgreSQL and Redis stores; an operator's
//! settling of a key; the layer's spans and counters.

#[path = "support/broken_store.rs"]
mod broken_store;
#[path = "support/postgres.rs"]
mod postgres;
#[cfg(feature = "redis")]
#[path = "support/redis.rs"]
mod redis;
#[path = "http/support.rs"]
mod support;
// The telemetry tests' capturing layer, for the layer's spans.
#[allow(dead_code)]
#[path = "telemetry/capture.rs"]
mod capture;

#[path = "http/keys.rs"]
mod keys;
#[path = "http/operator.rs"]
mod operator;
#[path = "http/race.rs"]
mod race;
#[path = "http/replay.rs"]
mod replay;
#[path = "http/stores.rs"]
mod stores;
#[path = "http/telemetry.rs"]
mod telemetry;
