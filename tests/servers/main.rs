//! Servers of the test's own, started with Debian's binaries, to kill, restart, freeze and
//! replicate: Redis (`redis`, feature `redis`). PostgreSQL's are in `edges` (`pg_faults`).

#[path = "../support/mod.rs"]
mod support;

#[cfg(feature = "redis")]
mod redis;
