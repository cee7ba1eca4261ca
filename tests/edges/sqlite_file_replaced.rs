//! An SQLite file deleted or replaced under an open store: the store answers from no file
//! rather than from two. Before, its pooled connections went on replaying from the
//! deleted file while new ones opened (or created) the file at the path, where completed
//! keys were new: their bodies ran again.
//!
//! Here a sync and an async tool complete a key, calls from several threads at once leave
//! several connections idle, and the file goes (with its -wal and -shm). A call that would
//! reserve a key notices at once (the store checks the path right before it reserves);
//! from then on every call through that store answers STORE_UNAVAILABLE, naming the file
//! and what happened, and no body runs. (A replay within 10 ms of the store's last check
//! may still come from the file the store opened; that is still one file.)

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::sync::Barrier;
use std::sync::atomic::{AtomicUsize, Ordering};

use idem::{ErrorCode, SqliteStore, idempotent};

const THREADS: usize = 4;

struct Mailer {
    store: SqliteStore,
    sent: AtomicUsize,
    sent_async: AtomicUsize,
}

impl Mailer {
    fn open(path: &Path) -> Mailer {
        Mailer { store: SqliteStore::open(path).unwrap(), sent: AtomicUsize::new(0), sent_async: AtomicUsize::new(0) }
    }

    #[idempotent(key = "mail:<to>", namespace = "sqlite-file.mail", store = self.store)]
    fn send(&self, to: String) -> Result<String, idem::Error> {
        self.sent.fetch_add(1, Ordering::SeqCst);
        Ok(format!("sent to {to}"))
    }

    #[idempotent(key = "mail:<to>", namespace = "sqlite-file.mail-async", store = self.store)]
    async fn send_async(&self, to: String) -> Result<String, idem::Error> {
        self.sent_async.fetch_add(1, Ordering::SeqCst);
        Ok(format!("sent to {to}"))
    }

    fn runs(&self) -> (usize, usize) {
        (self.sent.load(Ordering::SeqCst), self.sent_async.load(Ordering::SeqCst))
    }
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(future)
}

/// Both tools complete `ann`, and threads replay it at once, each on a connection of its
/// own, which they leave idle in the pool.
fn complete_and_fill_the_pool(mailer: &Mailer) {
    assert_eq!(mailer.send("ann".into()).unwrap(), "sent to ann");
    assert_eq!(block_on(mailer.send_async("ann".into())).unwrap(), "sent to ann");
    let barrier = Barrier::new(THREADS);
    std::thread::scope(|scope| {
        for _ in 0..THREADS {
            scope.spawn(|| {
                barrier.wait();
                for _ in 0..20 {
                    assert_eq!(mailer.send("ann".into()).unwrap(), "sent to ann");
                    assert_eq!(block_on(mailer.send_async("ann".into())).unwrap(), "sent to ann");
                }
            });
        }
    });
    assert_eq!(mailer.runs(), (1, 1));
}

fn with_wal_and_shm(path: &Path) -> [PathBuf; 3] {
    let beside = |suffix: &str| PathBuf::from(format!("{}{suffix}", path.display()));
    [path.to_path_buf(), beside("-wal"), beside("-shm")]
}

fn delete(path: &Path) {
    for file in with_wal_and_shm(path) {
        std::fs::remove_file(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    }
}

/// A call's answer must be STORE_UNAVAILABLE whose message contains `what`.
fn assert_unavailable(answer: Result<String, idem::Error>, what: &str) {
    let error = answer.expect_err("the store answered from a file it no longer has");
    assert_eq!(error.code(), ErrorCode::StoreUnavailable, "{error}");
    assert!(error.message().contains(what), "{error}");
}

/// Many calls through `mailer` from threads at once, for the completed key and new ones,
/// sync and async: every one must be STORE_UNAVAILABLE naming `what`.
fn assert_every_call_unavailable(mailer: &Mailer, what: &str) {
    let barrier = Barrier::new(THREADS);
    std::thread::scope(|scope| {
        for thread in 0..THREADS {
            let barrier = &barrier;
            scope.spawn(move || {
                barrier.wait();
                for call in 0..20 {
                    let to = if call % 2 == 0 { "ann".to_owned() } else { format!("new-{thread}-{call}") };
                    assert_unavailable(mailer.send(to.clone()), what);
                    assert_unavailable(block_on(mailer.send_async(to)), what);
                }
            });
        }
    });
}

#[test]
fn a_deleted_file_answers_store_unavailable_and_is_never_recreated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mail.db");
    let mailer = Mailer::open(&path);
    complete_and_fill_the_pool(&mailer);
    delete(&path);

    let deleted =
        format!("SQLite {}: reserve: the file was deleted or moved away after this store opened it", path.display());
    assert_unavailable(mailer.send("bob".into()), &deleted);
    assert_unavailable(mailer.send("ann".into()), "restart the process");
    assert_every_call_unavailable(&mailer, "the file was deleted or moved away");
    assert_eq!(mailer.runs(), (1, 1), "a body ran again");
    for file in with_wal_and_shm(&path) {
        assert!(!file.exists(), "{} was created", file.display());
    }
}

#[test]
fn a_replaced_file_answers_store_unavailable_through_the_old_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mail.db");
    let old = Mailer::open(&path);
    complete_and_fill_the_pool(&old);
    delete(&path);
    let new = Mailer::open(&path);

    let replaced = format!("SQLite {}: reserve: the file was replaced after this store opened it", path.display());
    assert_unavailable(block_on(old.send_async("bob".into())), &replaced);
    assert_every_call_unavailable(&old, "the file was replaced after this store opened it");
    assert_eq!(old.runs(), (1, 1), "a body ran again through the old store");

    // The new store is a store of its own: its file has none of the old one's records,
    // so its bodies run once each.
    complete_and_fill_the_pool(&new);
    // Closing the old store leaves the new file's -wal and -shm alone: a store opened
    // afresh on the path replays what the new one completed.
    drop(old);
    let again = Mailer::open(&path);
    assert_eq!(again.send("ann".into()).unwrap(), "sent to ann");
    assert_eq!(block_on(again.send_async("ann".into())).unwrap(), "sent to ann");
    assert_eq!(again.runs(), (0, 0), "the new file's records were lost");
}
