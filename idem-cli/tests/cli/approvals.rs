//! `idem approvals`, `idem approve`, `idem decline` and `idem reopen` of a declined
//! approval, on requests a real tool made, on SQLite and PostgreSQL.

use std::path::Path;

use idem::store::{Store, block_on};
use idem::{ErrorCode, idempotent};

use super::postgres::pg_url;
use super::{idem, text};

struct Shop<S> {
    store: S,
}

impl<S: Store> Shop<S> {
    /// Refund an order.
    #[idempotent(key = "refund:<order>", compare = [amount], approval, namespace = "shop::refund", store = self.store)]
    fn refund(&self, order: String, amount: u32) -> Result<u32, idem::Error> {
        Ok(amount)
    }
}

fn asked<S: Store>(shop: &Shop<S>, order: &str) -> ErrorCode {
    shop.refund(order.into(), 10).expect_err("not approved yet").code()
}

/// The decision commands on the store at `db` (a file, or a URL with `--schema`).
fn decides<S: Store>(shop: &Shop<S>, db: &Path, schema: &[&str]) {
    let run = |args: &[&str]| idem(db, &[schema, args].concat(), "");
    assert_eq!(asked(shop, "o1"), ErrorCode::ApprovalRequired);
    assert_eq!(asked(shop, "o2"), ErrorCode::ApprovalRequired);

    let listed = run(&["approvals"]);
    assert!(listed.status.success(), "{}", text(&listed));
    let out = text(&listed);
    assert!(out.contains("shop::refund") && out.contains("refund:o1") && out.contains("refund:o2"), "{out}");
    assert!(out.contains("2 approval request(s) waiting"), "{out}");
    let json = run(&["--json", "approvals"]);
    let first: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&json.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(first["key"], "refund:o1");
    assert_eq!(first["request"]["amount"], 10);

    // Bad input changes nothing.
    for (args, code, says) in [
        (vec!["approve", "shop::refund", "refund:o9", "--by", "alice", "--yes"], 1, "no approval request is waiting"),
        (vec!["approve", "shop::nope", "refund:o1", "--by", "alice", "--yes"], 1, "no approval request is waiting"),
        (vec!["approve", "shop::refund", "refund:o1", "--by", " ", "--yes"], 2, "say who decides"),
        (vec!["approve", "shop::refund", "refund:o1", "--yes"], 2, "--by"),
        (vec!["--json", "approve", "shop::refund", "refund:o1", "--by", "alice", "--yes"], 2, "--json does not apply"),
    ] {
        let refused = run(&args);
        assert_eq!(refused.status.code(), Some(code), "{args:?}: {}", text(&refused));
        assert!(text(&refused).contains(says), "{args:?}: {}", text(&refused));
    }
    let unanswered = idem(db, &[schema, &["approve", "shop::refund", "refund:o1", "--by", "alice"]].concat(), "n\n");
    assert!(text(&unanswered).contains("nothing changed"), "{}", text(&unanswered));
    assert_eq!(asked(shop, "o1"), ErrorCode::ApprovalRequired, "still waiting");

    let approved = run(&["approve", "shop::refund", "refund:o1", "--by", "alice", "--note", "ok", "--yes"]);
    assert!(approved.status.success(), "{}", text(&approved));
    assert_eq!(shop.refund("o1".into(), 10).unwrap(), 10, "the next call runs it");
    let again = run(&["decline", "shop::refund", "refund:o1", "--by", "bob", "--yes"]);
    assert_eq!(again.status.code(), Some(1));
    assert!(text(&again).contains("approved already, by alice"), "{}", text(&again));

    let declined = run(&["decline", "shop::refund", "refund:o2", "--by", "bob", "--note", "duplicate", "--yes"]);
    assert!(declined.status.success(), "{}", text(&declined));
    let answer = shop.refund("o2".into(), 10).unwrap_err();
    assert_eq!(answer.code(), ErrorCode::Declined);
    assert!(answer.message().contains("bob") && answer.message().contains("duplicate"), "{answer}");
    let anonymous = run(&["reopen", "shop::refund", "refund:o2", "--yes"]);
    assert_eq!(anonymous.status.code(), Some(1));
    assert!(text(&anonymous).contains("--by"), "{}", text(&anonymous));
    let reopened = run(&["reopen", "shop::refund", "refund:o2", "--by", "carol", "--yes"]);
    assert!(reopened.status.success(), "{}", text(&reopened));
    assert_eq!(asked(shop, "o2"), ErrorCode::ApprovalRequired, "asked anew");
    let waiting = run(&["approvals"]);
    assert!(text(&waiting).contains("1 approval request(s) waiting"), "{}", text(&waiting));
}

#[test]
fn an_operator_approves_and_declines_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("idem.db");
    let shop = Shop { store: idem::SqliteStore::open(&db).unwrap() };
    decides(&shop, &db, &[]);
}

#[test]
fn an_operator_approves_and_declines_on_postgres() {
    let Some(url) = pg_url("approvals on PostgreSQL") else { return };
    let schema = format!("cli_approvals_{}", std::process::id());
    let shop = Shop { store: idem::PgStore::builder(&url).schema(&schema).build().unwrap() };
    block_on(shop.store.read(idem::store::RecordId { namespace: "x", key: "y" })).unwrap();
    decides(&shop, Path::new(&url), &["--schema", &schema]);
    super::postgres::sql(&url, &format!("DROP SCHEMA {schema} CASCADE"));
}

/// An order typed with a space is stored percent-encoded (`refund:o%201`): approve, decline
/// and reopen find its approval from the key as the tool's fields read, as show, resolve
/// and reopen find records, and say which key they used; a key that names nothing says
/// where it was looked for.
#[test]
fn decisions_find_an_approval_whose_key_is_stored_percent_encoded() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("idem.db");
    let shop = Shop { store: idem::SqliteStore::open(&db).unwrap() };
    let run = |args: &[&str]| idem(&db, args, "");
    assert_eq!(asked(&shop, "o 1"), ErrorCode::ApprovalRequired);
    assert_eq!(asked(&shop, "o 2"), ErrorCode::ApprovalRequired);

    let declined = run(&["decline", "shop::refund", "refund:o 1", "--by", "bob", "--yes"]);
    assert!(declined.status.success(), "{}", text(&declined));
    assert!(text(&declined).contains("using refund:o%201"), "{}", text(&declined));
    assert_eq!(shop.refund("o 1".into(), 10).unwrap_err().code(), ErrorCode::Declined);

    let reopened = run(&["reopen", "shop::refund", "refund:o 1", "--by", "carol", "--yes"]);
    assert!(reopened.status.success(), "{}", text(&reopened));
    assert!(text(&reopened).contains("no approval request under refund:o 1 as typed; using refund:o%201"));
    assert_eq!(asked(&shop, "o 1"), ErrorCode::ApprovalRequired, "asked anew");

    let approved = run(&["approve", "shop::refund", "refund:o 2", "--by", "alice", "--yes"]);
    assert!(approved.status.success(), "{}", text(&approved));
    assert_eq!(shop.refund("o 2".into(), 10).unwrap(), 10, "the next call runs it");

    let missing = run(&["reopen", "shop::refund", "refund:o 9", "--by", "carol", "--yes"]);
    assert_eq!(missing.status.code(), Some(1), "{}", text(&missing));
    assert!(
        text(&missing).contains(
            "no record and no approval request for shop::refund refund:o 9 (looked under the key as typed and as \
             refund%3Ao 9, refund:o%209, refund%3Ao%209); nothing changed"
        ),
        "{}",
        text(&missing)
    );
}
