//! Servers of the test's own, started with Debian's binaries, to kill, restart, freeze and
//! replicate: Redis (`redis`, feature `redis`), and Redis Clusters to kill a primary of and
//! fail over (`redis_cluster`, feature `redis`). PostgreSQL's are in `edges` (`pg_faults`).

#[path = "../support/mod.rs"]
mod support;

#[cfg(feature = "redis")]
mod redis;
#[cfg(feature = "redis")]
mod redis_cluster;
