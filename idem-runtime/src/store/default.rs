//! The process-wide default store: an SQLite file, opened on first use.
//!
//! Its place must not depend on where the process was started: MCP clients start stdio
//! servers from a directory of their choosing, and a store that moves with the working
//! directory answers a retry after a restart from another file (so the action runs
//! again). The default is a file in the user's data directory; the path is resolved
//! once, on the first query or the first open, made absolute, and kept.
//!
//! Its records are the tools' requests and results (invoices, amounts, stored HTTP
//! responses), so on Unix it is private to the user: see [`default_store`].

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate::store::budget::Charge;
use crate::store::{
    BudgetStore, Completion, DEFAULT_STORE_ENV, DEFAULT_STORE_FILE, Record, RecordId, Renew, Reservation, Reserve,
    SqliteStore, Store, StoreError, Token,
};

mod private;

static STORE: OnceLock<SqliteStore> = OnceLock::new();
/// The path, once fixed: by the first [`default_store_path`] or the first open, under the
/// lock of `CONFIGURED_PATH`.
static FIXED_PATH: OnceLock<PathBuf> = OnceLock::new();
static CONFIGURED_PATH: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Sets the default store's file. Call it before anything asks where the default store is
/// ([`default_store_path`], or the first idempotent call that uses it): from then on the
/// path is fixed, and this returns an error naming it. A relative path is taken against
/// the working directory when the path is fixed.
pub fn set_default_store_path(path: impl AsRef<Path>) -> Result<(), StoreError> {
    let mut configured = CONFIGURED_PATH.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(fixed) = FIXED_PATH.get() {
        let how = if STORE.get().is_some() { "is open" } else { "was asked for (default_store_path)" };
        return Err(StoreError::Backend(
            format!(
                "the default store's path is already fixed at {}: the store {how}; call set_default_store_path \
                 before either",
                fixed.display()
            )
            .into(),
        ));
    }
    *configured = Some(path.as_ref().to_owned());
    Ok(())
}

/// The default store's path, fixed now if it was not yet. `configured` is the locked
/// `CONFIGURED_PATH`.
fn fixed_path(configured: &Option<PathBuf>) -> Result<&'static Path, StoreError> {
    if let Some(path) = FIXED_PATH.get() {
        return Ok(path);
    }
    let path = resolve(configured.clone(), std::env::var_os(DEFAULT_STORE_ENV))?;
    Ok(FIXED_PATH.get_or_init(|| path))
}

/// The default store, opened (and created with its schema) on first use at
/// [`default_store_path`]. A failure to open is returned, naming the file, and the next
/// call tries again (at the same path).
///
/// On Unix the store is private to the user: the directory it creates for its file
/// (`idem/` in the data directory, or `IDEM_DB`'s missing directory) gets mode `0700`
/// (other missing directories above it `0700` less the umask), and a new store file
/// `0600`, whatever the umask; SQLite gives the file's `-wal` and `-shm` the
/// file's mode. An existing directory or file that other accounts can access (group or
/// other permission bits set) is left as it is, and named, with its mode, in one `warn`
/// event (target `idem`) the first time the store opens: `chmod 700` the directory and
/// `600` the files to close it. Its records are the tools' requests and results, which
/// other local accounts must not read. Stores opened with [`SqliteStore::open`] follow
/// the umask instead, as `sqlite3` does: their place is the deployer's choice, and a
/// service's operators may need group access.
///
/// The first open logs the path (an `info` event, target `idem`).
pub fn default_store() -> Result<&'static SqliteStore, StoreError> {
    if let Some(store) = STORE.get() {
        return Ok(store);
    }
    let configured = CONFIGURED_PATH.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(store) = STORE.get() {
        return Ok(store);
    }
    let path = fixed_path(&configured)?;
    private::prepare(path);
    // Its errors name the file, as every SqliteStore's do.
    let store = SqliteStore::open(path)?;
    tracing::info!(target: "idem", path = %store.path().display(), "opened the default store");
    Ok(STORE.get_or_init(|| store))
}

/// Where the default store is (or will be, on first use), as an absolute path, fixed by
/// the first call of this function or the first open of the store, whichever comes first:
/// the store opens exactly there, even if the working directory or `IDEM_DB` changes
/// afterwards, and [`set_default_store_path`] is refused from then on. It is
/// [`set_default_store_path`], else the `IDEM_DB` environment variable (a relative path is
/// taken against the working directory at that moment), else `idem/idem.db` in the user's data
/// directory: `$XDG_DATA_HOME` or `~/.local/share` on Linux and other Unix systems,
/// `~/Library/Application Support` on macOS, `%LOCALAPPDATA%` on Windows. The operator
/// command `idem` uses the same default.
///
/// A `postgres://` (or `postgresql://`) or `redis://` (`rediss://`, `valkey://`) URL in
/// `IDEM_DB`, which the `idem` command reads, is refused with an error saying so (a tool
/// on the default store answers `STORE_UNAVAILABLE`), never taken for a file name: give
/// such tools `store = ...` with an `idem::PgStore` or an `idem::RedisStore`.
///
/// Every process of a user shares that file: a tool's records are kept apart by its
/// namespace, and a retry from a restarted server, started from any directory, finds the
/// first call's record. A server in production should still name its store (`store =
/// ...`, `IDEM_DB`): its records then live where its operators look for them.
pub fn default_store_path() -> Result<PathBuf, StoreError> {
    if let Some(path) = FIXED_PATH.get() {
        return Ok(path.clone());
    }
    let configured = CONFIGURED_PATH.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    fixed_path(&configured).map(Path::to_owned)
}

/// The default store's path: `configured`, else the `IDEM_DB` value `env`, else the user's
/// data directory's. A PostgreSQL URL in `IDEM_DB` (which the `idem` command accepts) is
/// refused, never taken for a file name.
fn resolve(configured: Option<PathBuf>, env: Option<std::ffi::OsString>) -> Result<PathBuf, StoreError> {
    let server = |url: &str| {
        let scheme = url.split_once("://").map_or("", |(scheme, _)| scheme);
        match scheme {
            "postgres" | "postgresql" => {
                Some(("a PostgreSQL server", "an idem::PgStore (PgStore::from_env reads IDEM_DATABASE_URL)"))
            }
            "redis" | "rediss" | "valkey" | "valkeys" => {
                Some(("a Redis server", "an idem::RedisStore (feature `redis`)"))
            }
            _ => None,
        }
    };
    if configured.is_none()
        && let Some((server, store)) = env.as_ref().and_then(|value| value.to_str()).and_then(server)
    {
        return Err(StoreError::Backend(
            format!(
                "{DEFAULT_STORE_ENV} names {server}, but the default store is an SQLite file: give the tools \
                 `store = ...` with {store}, or set {DEFAULT_STORE_ENV} to a file path"
            )
            .into(),
        ));
    }
    let path = match configured.or_else(|| env.map(PathBuf::from)) {
        Some(path) => path,
        None => user_data_dir()?.join("idem").join(DEFAULT_STORE_FILE),
    };
    std::path::absolute(&path).map_err(|error| {
        StoreError::Backend(format!("cannot make the default store's path {} absolute: {error}", path.display()).into())
    })
}

/// The per-user data directory, from the environment alone.
fn user_data_dir() -> Result<PathBuf, StoreError> {
    let var = |name: &str| std::env::var_os(name).map(PathBuf::from).filter(|path| path.is_absolute());
    let dir = if cfg!(windows) {
        var("LOCALAPPDATA")
    } else if cfg!(target_os = "macos") {
        var("HOME").map(|home| home.join("Library").join("Application Support"))
    } else {
        var("XDG_DATA_HOME").or_else(|| var("HOME").map(|home| home.join(".local").join("share")))
    };
    dir.ok_or_else(|| {
        let needs = if cfg!(windows) { "LOCALAPPDATA" } else { "HOME" };
        StoreError::Backend(
            format!(
                "the default store has no place: {needs} is not set to an absolute path, so there is no per-user data directory; set {DEFAULT_STORE_ENV}, call idem::store::set_default_store_path, or give the tool `store = ...`"
            )
            .into(),
        )
    })
}

/// The store a tool uses when its attribute names none: [`default_store`], opened on first
/// use; a failure to open is each operation's error, and the next call tries again.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultStore;

impl Store for DefaultStore {
    async fn reserve(&self, request: Reserve<'_>) -> Result<Reservation, StoreError> {
        default_store()?.reserve(request).await
    }
    async fn take_over(&self, id: RecordId<'_>, expired: Token, lease: Duration) -> Result<Token, StoreError> {
        default_store()?.take_over(id, expired, lease).await
    }
    async fn renew(&self, renewal: Renew<'_>) -> Result<(), StoreError> {
        default_store()?.renew(renewal).await
    }
    async fn complete(
        &self,
        id: RecordId<'_>,
        token: Token,
        completion: Completion<'_>,
        retain: Duration,
    ) -> Result<(), StoreError> {
        default_store()?.complete(id, token, completion, retain).await
    }
    async fn release(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        default_store()?.release(id, token).await
    }
    async fn abandon(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        default_store()?.abandon(id, token).await
    }
    async fn read(&self, id: RecordId<'_>) -> Result<Option<Record>, StoreError> {
        default_store()?.read(id).await
    }
    async fn purge(&self, limit: usize) -> Result<usize, StoreError> {
        default_store()?.purge(limit).await
    }
}

/// The default store is an SQLite store, which keeps budgets.
impl BudgetStore for DefaultStore {
    async fn reserve_charged(&self, request: Reserve<'_>, charge: Charge<'_>) -> Result<Reservation, StoreError> {
        default_store()?.reserve_charged(request, charge).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_postgres_url_in_idem_db_is_refused_not_taken_for_a_file() {
        for url in ["postgres://app:secret@db/app", "postgresql://db/app"] {
            let error = resolve(None, Some(url.into())).unwrap_err().to_string();
            assert!(error.contains("PostgreSQL") && error.contains("PgStore") && !error.contains("secret"), "{error}");
        }
        for url in ["redis://:secret@cache:6379/0", "valkey://cache"] {
            let error = resolve(None, Some(url.into())).unwrap_err().to_string();
            assert!(error.contains("Redis") && error.contains("RedisStore") && !error.contains("secret"), "{error}");
        }
        let file = resolve(None, Some("relative/keys.db".into())).unwrap();
        assert!(file.is_absolute() && file.ends_with("relative/keys.db"), "{}", file.display());
        let configured = resolve(Some("/srv/keys.db".into()), Some("postgres://db/app".into())).unwrap();
        assert_eq!(configured, PathBuf::from("/srv/keys.db"), "set_default_store_path wins, as it does over a path");
    }
}
