//! What tasks keep in the store, beside the records they stand for: records of their own
//! namespace, [`NAMESPACE`], written and read through the store protocol, so that every
//! store (the bundled ones, a custom one) serves tasks with nothing added to it.
//!
//! - `secret`: the store's secret for task ids (see `ids`), written once and kept.
//! - `<id>`: the run a task id stands for ([`Run`]).
//! - `<id>/cancel`: a `tasks/cancel` for the task arrived, on whichever worker.
//! - `<id>/end`: the task's terminal state as first reported, so that it never changes.
//!
//! Each is written once: the first writer's value stands, as the store's unique
//! constraint decides (see [`put`]).

use std::time::Duration;

use serde_json::{Value, json};

use crate::store::once::{self, Put};
use crate::store::{RecordId, Store, StoreError, Token};

/// The namespace of the records tasks keep. Tool namespaces are Rust paths or names the
/// attribute gives; `idem.` is idem's own.
pub(crate) const NAMESPACE: &str = "idem.tasks";

/// The secret outlives every task: a century, which every store's clock arithmetic holds.
const FOREVER: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// The run of an action a task stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Run {
    pub(super) namespace: String,
    pub(super) key: String,
    /// The token the run held when the task was made.
    pub(super) token: Token,
    /// When the run's reservation was made, by the store's clock: a take-over keeps it, a
    /// new run after a release does not, so it tells the run's records from a later run's.
    /// For a call that waits for approval, when approval was asked for.
    pub(super) created_at_ms: i64,
    /// The task is a call waiting for a person's approval (no reservation yet, `token` 0):
    /// the action's record made after `created_at_ms` is its run.
    pub(super) awaits_approval: bool,
}

impl Run {
    fn to_json(&self) -> String {
        json!({
            "namespace": self.namespace,
            "key": self.key,
            "token": self.token.0,
            "created_at_ms": self.created_at_ms,
            "awaits_approval": self.awaits_approval,
        })
        .to_string()
    }

    fn from_json(text: &str) -> Option<Run> {
        let value: Value = serde_json::from_str(text).ok()?;
        Some(Run {
            namespace: value.get("namespace")?.as_str()?.to_owned(),
            key: value.get("key")?.as_str()?.to_owned(),
            token: Token(value.get("token")?.as_u64()?),
            created_at_ms: value.get("created_at_ms")?.as_i64()?,
            awaits_approval: value.get("awaits_approval").and_then(Value::as_bool).unwrap_or(false),
        })
    }
}

/// Records the run task `id` stands for, kept for `retain`, unless it is recorded already
/// (ids are derived from runs, so what stands is the same).
pub(super) async fn put_run<S: Store + ?Sized>(
    store: &S,
    id: &str,
    run: &Run,
    retain: Duration,
) -> Result<(), StoreError> {
    put(store, id, &run.to_json(), retain).await.map(drop)
}

/// The run task `id` stands for, if this store made it.
pub(super) async fn run<S: Store + ?Sized>(store: &S, id: &str) -> Result<Option<Run>, StoreError> {
    match get(store, id).await? {
        Some(text) => Run::from_json(&text)
            .map(Some)
            .ok_or_else(|| StoreError::Corrupt(format!("task record {id} is not a task's run: {text}"))),
        None => Ok(None),
    }
}

/// The store's secret for task ids, made by whichever caller asks first.
pub(super) async fn secret<S: Store + ?Sized>(store: &S) -> Result<Vec<u8>, StoreError> {
    if let Some(secret) = known_secret(store).await? {
        return Ok(secret);
    }
    let secret = super::ids::new_secret()
        .map_err(|e| StoreError::Backend(format!("no random bytes for the task-id secret: {e}").into()))?;
    let stored = put(store, "secret", &Value::String(super::ids::hex(&secret)).to_string(), FOREVER).await?;
    read_secret(&stored)
}

/// The store's secret for task ids, if a task was ever made in it.
pub(super) async fn known_secret<S: Store + ?Sized>(store: &S) -> Result<Option<Vec<u8>>, StoreError> {
    get(store, "secret").await?.map(|stored| read_secret(&stored)).transpose()
}

fn read_secret(stored: &str) -> Result<Vec<u8>, StoreError> {
    serde_json::from_str::<String>(stored)
        .ok()
        .and_then(|hex| super::ids::unhex(&hex))
        .filter(|secret| secret.len() == 32)
        .ok_or_else(|| StoreError::Corrupt(format!("the task-id secret is not 32 bytes of hex: {stored}")))
}

/// Writes `value` under `key` unless a value is there already, and returns the value that
/// stands: the first writer's (see [`once::put`]).
pub(super) async fn put<S: Store + ?Sized>(
    store: &S,
    key: &str,
    value: &str,
    retain: Duration,
) -> Result<String, StoreError> {
    Ok(match once::put(store, RecordId { namespace: NAMESPACE, key }, value, retain).await? {
        Put::Written => value.to_owned(),
        Put::Found(stands) => stands,
    })
}

/// The value written under `key`, if any.
pub(super) async fn get<S: Store + ?Sized>(store: &S, key: &str) -> Result<Option<String>, StoreError> {
    Ok(once::get(store, RecordId { namespace: NAMESPACE, key }).await?.map(|(value, _)| value))
}

/// The key of the record that says task `id` was asked to stop.
pub(super) fn cancel_key(id: &str) -> String {
    format!("{id}/cancel")
}

/// The key of the record that holds task `id`'s terminal state.
pub(super) fn end_key(id: &str) -> String {
    format!("{id}/end")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{MemoryStore, Reserve};

    #[tokio::test]
    async fn the_first_value_stands() {
        let store = MemoryStore::new();
        assert_eq!(get(&store, "k").await.unwrap(), None);
        assert_eq!(put(&store, "k", "1", FOREVER).await.unwrap(), "1");
        assert_eq!(put(&store, "k", "2", FOREVER).await.unwrap(), "1");
        assert_eq!(get(&store, "k").await.unwrap().as_deref(), Some("1"));
    }

    #[tokio::test]
    async fn a_writer_that_stopped_halfway_has_written() {
        let store = MemoryStore::new();
        let id = RecordId { namespace: NAMESPACE, key: "k" };
        store.reserve(Reserve { id, request: "1", lease: Duration::ZERO }).await.unwrap();
        assert_eq!(get(&store, "k").await.unwrap().as_deref(), Some("1"), "the value stands from its reservation");
        assert_eq!(put(&store, "k", "2", FOREVER).await.unwrap(), "1");
    }

    #[tokio::test]
    async fn one_secret_per_store_whoever_asks() {
        let store = MemoryStore::new();
        assert_eq!(known_secret(&store).await.unwrap(), None, "asking whether there is one makes none");
        let made = secret(&store).await.unwrap();
        assert_eq!(made.len(), 32);
        assert_eq!(known_secret(&store).await.unwrap(), Some(made.clone()));
        assert_eq!(secret(&store).await.unwrap(), made);
        assert_ne!(secret(&MemoryStore::new()).await.unwrap(), made, "another store");
    }

    /// Workers that ask for the secret of a new store at the same moment all get one and
    /// the same: the store's unique constraint picks the first writer.
    #[test]
    fn racing_workers_agree_on_one_secret() {
        const WORKERS: usize = 8;
        for trial in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("idem.db");
            let barrier = std::sync::Barrier::new(WORKERS);
            let secrets: Vec<Vec<u8>> = std::thread::scope(|scope| {
                let workers: Vec<_> = (0..WORKERS)
                    .map(|_| {
                        let (path, barrier) = (&path, &barrier);
                        scope.spawn(move || {
                            let store = crate::store::SqliteStore::open(path).unwrap();
                            let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
                            barrier.wait();
                            runtime.block_on(secret(&store)).unwrap()
                        })
                    })
                    .collect();
                workers.into_iter().map(|worker| worker.join().unwrap()).collect()
            });
            assert!(secrets.iter().all(|s| *s == secrets[0]), "trial {trial}: {} different secrets", secrets.len());
        }
    }

    #[test]
    fn runs_round_trip() {
        let run = Run {
            namespace: "n".into(),
            key: "k:é".into(),
            token: Token(u64::MAX),
            created_at_ms: -1,
            awaits_approval: true,
        };
        assert_eq!(Run::from_json(&run.to_json()), Some(run));
        assert_eq!(Run::from_json("{}"), None);
    }
}
