//! The process-wide default store: an SQLite file, opened on first use.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate::store::{Completion, Record, RecordId, Reservation, Reserve, SqliteStore, Store, StoreError, Token};

/// The environment variable that sets the default store's file, read on first use.
pub const DEFAULT_STORE_ENV: &str = "IDEM_DB";

/// The default store's file when neither [`set_default_store_path`] nor `IDEM_DB` sets one,
/// relative to the working directory.
pub const DEFAULT_STORE_FILE: &str = "idem.db";

static STORE: OnceLock<SqliteStore> = OnceLock::new();
static CONFIGURED_PATH: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Sets the default store's file. Call it before the first idempotent call that uses the
/// default store; afterwards the store is open and this returns an error naming its file.
pub fn set_default_store_path(path: impl AsRef<Path>) -> Result<(), StoreError> {
    let mut configured = CONFIGURED_PATH.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(open) = STORE.get() {
        return Err(StoreError::Backend(
            format!("the default store is already open at {}", open.path().display()).into(),
        ));
    }
    *configured = Some(path.as_ref().to_owned());
    Ok(())
}

/// The default store, opened (and created with its schema) on first use, from
/// [`set_default_store_path`], else `IDEM_DB`, else `idem.db` in the working directory.
/// A failure to open is returned, and the next call tries again.
pub fn default_store() -> Result<&'static SqliteStore, StoreError> {
    if let Some(store) = STORE.get() {
        return Ok(store);
    }
    let configured = CONFIGURED_PATH.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(store) = STORE.get() {
        return Ok(store);
    }
    let path = configured
        .clone()
        .or_else(|| std::env::var_os(DEFAULT_STORE_ENV).map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(DEFAULT_STORE_FILE));
    let store = SqliteStore::open(&path)?;
    tracing::info!(target: "idem", path = %path.display(), "opened the default store");
    Ok(STORE.get_or_init(|| store))
}

/// The store a tool uses when its attribute names none: [`default_store`].
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultStore;

impl Store for DefaultStore {
    fn reserve(&self, request: Reserve<'_>) -> Result<Reservation, StoreError> {
        default_store()?.reserve(request)
    }
    fn take_over(&self, id: RecordId<'_>, expired: Token, lease: Duration) -> Result<Token, StoreError> {
        Store::take_over(default_store()?, id, expired, lease)
    }
    fn complete(
        &self,
        id: RecordId<'_>,
        token: Token,
        completion: Completion<'_>,
        retain: Duration,
    ) -> Result<(), StoreError> {
        Store::complete(default_store()?, id, token, completion, retain)
    }
    fn release(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        Store::release(default_store()?, id, token)
    }
    fn abandon(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        Store::abandon(default_store()?, id, token)
    }
    fn read(&self, id: RecordId<'_>) -> Result<Option<Record>, StoreError> {
        Store::read(default_store()?, id)
    }
    fn purge(&self, limit: usize) -> Result<usize, StoreError> {
        Store::purge(default_store()?, limit)
    }
}

crate::store::async_store_from_sync!(DefaultStore);
