//! `list` says when it stopped at `--limit` and how many records it left out; `purge`
//! removes everything that is due, batch after batch.

use std::path::{Path, PathBuf};
use std::time::Duration;

use idem_runtime::SqliteStore;
use idem_runtime::store::{Completion, RecordId, Reservation, Reserve, Store, Synchronous, block_on};

use super::{idem, text};

/// A store with `due` records past their retention and `kept` completed ones that are not.
fn store_with(due: usize, kept: usize) -> (tempfile::TempDir, PathBuf, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("idem.db");
    let store = SqliteStore::builder(&db).synchronous(Synchronous::Normal).open().unwrap();
    for n in 0..due + kept {
        let key = format!("pay:{n}");
        let id = RecordId { namespace: "shop::pay", key: &key };
        let Ok(Reservation::Acquired { token }) =
            block_on(store.reserve(Reserve { id, request: "{}", lease: Duration::from_secs(600) }))
        else {
            panic!("{key} is new")
        };
        let retain = if n < due { Duration::ZERO } else { Duration::from_secs(600) };
        block_on(store.complete(id, token, Completion::Success("1"), retain)).unwrap();
    }
    (dir, db, store)
}

fn listed(db: &Path, args: &[&str]) -> (usize, String) {
    let output = idem(db, args, "");
    assert!(output.status.success(), "{}", text(&output));
    (String::from_utf8_lossy(&output.stdout).lines().count(), String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn list_says_when_it_stopped_at_the_limit_and_how_many_more_match() {
    let (_dir, db, _store) = store_with(0, 5);
    let (lines, said) = listed(&db, &["list", "--limit", "2"]);
    assert_eq!(lines, 2);
    assert!(said.contains("the oldest 2 of 5 record(s) in SQLite"), "{said}");
    assert!(said.contains("stopped at --limit 2, 3 more match"), "{said}");
    let (lines, said) = listed(&db, &["list", "--limit", "2", "--json", "--state", "completed"]);
    assert_eq!(lines, 2, "stdout holds the records only");
    assert!(said.contains("3 more match"), "{said}");
    for limit in ["5", "6"] {
        let (lines, said) = listed(&db, &["list", "--limit", limit]);
        assert_eq!(lines, 5);
        assert_eq!(said.trim(), format!("5 record(s) in SQLite {}", db.display()), "nothing left out");
    }
}

/// More records are due than a batch holds (and than the 100 the command used to stop
/// at): `purge` removes them all, and never a record that is not due.
#[test]
fn purge_goes_on_until_nothing_is_due() {
    let (_dir, db, store) = store_with(150, 3);
    let output = idem(&db, &["purge"], "");
    assert!(output.status.success(), "{}", text(&output));
    assert!(text(&output).contains("purged 150 record(s) past their retention, in 1 batch(es)"), "{}", text(&output));
    let (lines, _) = listed(&db, &["list"]);
    assert_eq!(lines, 3, "the records still kept are left");

    let (_dir, db, _store2) = store_with(7, 1);
    let output = idem(&db, &["purge", "--batch", "3", "--json"], "");
    let answer: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(answer, serde_json::json!({ "purged": 7, "batches": 3 }), "3 + 3 + 1");
    drop(store);
}
