//! A store whose file is deleted, replaced or swapped under it, on real files.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::super::SqliteStore;
use super::FileId;
use crate::store::{Completion, RecordId, Reservation, Reserve, Store, StoreError, Token, block_on};

fn id(key: &str) -> RecordId<'_> {
    RecordId { namespace: "identity-test", key }
}

fn reserve(store: &SqliteStore, key: &str) -> Result<Reservation, StoreError> {
    block_on(store.reserve(Reserve { id: id(key), request: "{}", lease: Duration::from_secs(60) }))
}

fn complete(store: &SqliteStore, key: &str) -> Token {
    let Reservation::Acquired { token } = reserve(store, key).unwrap() else { panic!("{key}: not acquired") };
    block_on(store.complete(id(key), token, Completion::Success("1"), Duration::from_secs(60))).unwrap();
    token
}

/// The file and the two SQLite keeps beside it in WAL mode.
fn with_wal_and_shm(path: &Path) -> [PathBuf; 3] {
    let beside = |suffix: &str| PathBuf::from(format!("{}{suffix}", path.display()));
    [path.to_path_buf(), beside("-wal"), beside("-shm")]
}

fn delete(path: &Path) {
    for file in with_wal_and_shm(path) {
        std::fs::remove_file(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    }
}

fn backend_text(result: Result<impl std::fmt::Debug, StoreError>) -> String {
    match result {
        Err(error @ StoreError::Backend(_)) => error.to_string(),
        other => panic!("expected a backend failure, got {other:?}"),
    }
}

#[test]
fn a_deleted_file_fails_every_operation_and_is_never_recreated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deleted.db");
    let store = SqliteStore::open(&path).unwrap();
    let token = complete(&store, "done");
    // Three connections in use at once leave three idle, each with the file open.
    store.with_conn("read", |_| store.with_conn("read", |_| store.with_conn("read", |_| Ok(())))).unwrap();
    assert_eq!(store.idle.lock().unwrap().len(), 3);
    delete(&path);

    // A reservation checks the path right before it writes, however recent the last check.
    let error = backend_text(reserve(&store, "new"));
    let named = format!("store failed: SQLite {}: reserve: the file was deleted or moved away", path.display());
    assert!(error.starts_with(&named) && error.contains("restart the process"), "{error}");
    assert!(store.idle.lock().unwrap().is_empty(), "no connection to the deleted file may answer again");
    // Final: every operation fails from now on, reads within the interval included.
    assert!(backend_text(block_on(store.read(id("done")))).contains(": read: the file was deleted"));
    assert!(backend_text(reserve(&store, "done")).contains(": reserve: the file was deleted"));
    let done = Completion::Success("2");
    assert!(backend_text(block_on(store.complete(id("done"), token, done, Duration::ZERO))).contains(": complete: "));
    assert!(backend_text(block_on(store.purge(10))).contains(": purge: the file was deleted"));
    assert!(
        backend_text(crate::store::Admin::list(&store, &Default::default())).contains(": list: the file was deleted")
    );
    assert!(with_wal_and_shm(&path).iter().all(|file| !file.exists()), "a file was created at the path");
}

#[test]
fn reads_check_the_path_at_least_every_interval() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("read.db");
    let store = SqliteStore::open(&path).unwrap();
    complete(&store, "done");
    delete(&path);
    store.identity.make_read_check_due();
    assert!(backend_text(block_on(store.read(id("done")))).contains(": read: the file was deleted"));
}

#[test]
fn a_new_connection_never_creates_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no-create.db");
    let store = SqliteStore::open(&path).unwrap();
    delete(&path);
    let error = store.connect().map(drop).unwrap_err().to_string();
    assert!(error.contains("the file was deleted or moved away"), "{error}");
    assert!(!path.exists(), "opening a connection created the file");
}

#[test]
fn a_replaced_file_fails_every_operation_and_names_both_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("replaced.db");
    let old = SqliteStore::open(&path).unwrap();
    complete(&old, "done");
    let opened = FileId::of(&path).unwrap();
    delete(&path);
    let new = SqliteStore::open(&path).unwrap();
    let now = FileId::of(&path).unwrap();
    assert_ne!(opened, now);

    let error = backend_text(reserve(&old, "fresh"));
    let replaced =
        format!("the file was replaced after this store opened it (it opened {opened}; the path now names {now})");
    assert!(error.contains(&replaced), "{error}");
    assert!(backend_text(block_on(old.read(id("done")))).contains(&replaced));
    // The new store is a store of its own, with the new file's (empty) records.
    assert!(matches!(reserve(&new, "done").unwrap(), Reservation::Acquired { .. }));
}

/// The last connection to a WAL file deletes its -wal and -shm files by name when it
/// closes: a store whose file was replaced must not delete the new file's. SQLite's pager
/// sees to that (it neither checkpoints nor deletes on closing a moved file); this pins
/// what the store relies on when it closes its connections.
#[test]
fn closing_a_store_whose_file_was_replaced_leaves_the_new_files_alone() {
    for noticed in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("closed.db");
        let old = SqliteStore::open(&path).unwrap();
        complete(&old, "old");
        delete(&path);
        let new = SqliteStore::open(&path).unwrap();
        complete(&new, "new");
        let beside = with_wal_and_shm(&path);
        let before: Vec<_> = beside.iter().map(|file| FileId::of(file).unwrap()).collect();
        if noticed {
            backend_text(block_on(old.read(id("old"))).and(reserve(&old, "x")));
        }
        drop(old);
        let after: Vec<_> = beside.iter().map(|file| FileId::of(file).ok()).collect();
        assert_eq!(after, before.into_iter().map(Some).collect::<Vec<_>>(), "noticed: {noticed}");
        assert!(block_on(new.read(id("new"))).unwrap().is_some());
    }
}

/// A connection that opened another file than the one the path names when it is checked
/// (files moved in and out meanwhile) is refused, though the path names the store's file.
#[test]
fn a_connection_to_another_file_than_the_one_at_the_path_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("swapped.db");
    let away = dir.path().join("away.db");
    let store = SqliteStore::open(&path).unwrap();
    std::fs::rename(&path, &away).unwrap();
    let other = rusqlite::Connection::open(&path).unwrap(); // creates another file at the path
    std::fs::rename(&away, &path).unwrap();
    let error = store.identity.check_connection(&other, &path).unwrap_err().to_string();
    assert!(error.contains("files were moved in and out of the path"), "{error}");
    assert!(store.identity.is_lost());
}

/// The store holds its file open while its pool holds no connection, so that the file's
/// inode is not freed and given to a replacement, which would then pass for the store's.
#[cfg(target_os = "linux")]
#[test]
fn the_store_holds_its_file_open_with_an_empty_pool() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("held.db");
    let store = SqliteStore::open(&path).unwrap();
    complete(&store, "done");
    store.idle.lock().unwrap().clear();
    let real = path.canonicalize().unwrap();
    let descriptors = std::fs::read_dir("/proc/self/fd").unwrap();
    let held = descriptors.filter_map(|fd| std::fs::read_link(fd.unwrap().path()).ok()).filter(|to| *to == real);
    assert_ne!(held.count(), 0, "no descriptor of the file is open");
}
