//! `idem budgets`, `idem raise` and `idem reset`, on windows a real tool charged, on SQLite,
//! PostgreSQL, Redis and a Redis Cluster.

use std::path::Path;

use idem::budget::Budget;
use idem::store::{BudgetStore, Store, block_on};
use idem::{ErrorCode, idempotent};

use super::postgres::pg_url;
use super::{idem, text};

static REFUNDS: Budget = Budget::count("refunds", 2).per_day();

struct Shop<S> {
    store: S,
    tenant: String,
}

impl<S: BudgetStore> Shop<S> {
    /// Refund an order.
    #[idempotent(key = "refund:<order>", compare = [amount], scope = self.tenant, budget = REFUNDS,
        namespace = "shop::refund", store = self.store)]
    fn refund(&self, order: String, amount: u32) -> Result<u32, idem::Error> {
        Ok(amount)
    }
}

fn refund<S: BudgetStore>(shop: &Shop<S>, order: &str) -> Result<u32, ErrorCode> {
    shop.refund(order.into(), 10).map_err(|error| error.code())
}

/// The budget commands on the store at `db` (a file, or a URL with `--schema`).
fn adjusts<S: BudgetStore>(shop: &Shop<S>, db: &Path, schema: &[&str]) {
    let run = |args: &[&str]| idem(db, &[schema, args].concat(), "");
    refund(shop, "o1").unwrap();
    refund(shop, "o2").unwrap();
    assert_eq!(refund(shop, "o3"), Err(ErrorCode::BudgetExceeded));

    let listed = run(&["budgets"]);
    assert!(listed.status.success(), "{}", text(&listed));
    let out = text(&listed);
    assert!(out.contains("refunds") && out.contains("used 2 of 2"), "{out}");
    assert!(out.contains(&idem::store::scope_prefix("acme")), "the scope as its keys' prefix: {out}");
    assert!(out.contains("1 budget window(s)"), "{out}");
    let json = run(&["--json", "budgets", "--scope", "acme", "--current"]);
    let line: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&json.stdout).lines().next().expect("one window")).unwrap();
    assert_eq!(
        (line["budget"].as_str(), line["used"].as_f64(), line["limit"].as_f64()),
        (Some("refunds"), Some(2.0), Some(2.0))
    );
    let other = run(&["budgets", "--scope", "globex"]);
    assert!(text(&other).contains("0 budget window(s)"), "{}", text(&other));

    // Bad input changes nothing.
    for (args, code, says) in [
        (vec!["raise", "refunds", "1", "--scope", "acme", "--by", "ops", "--yes"], 2, "--note"),
        (vec!["raise", "refunds", "1", "--scope", "acme", "--by", "ops", "--note", " ", "--yes"], 2, "say why"),
        (vec!["raise", "refunds", "0", "--scope", "acme", "--by", "ops", "--note", "x", "--yes"], 2, "above zero"),
        (vec!["raise", "refunds", "-1", "--scope", "acme", "--by", "ops", "--note", "x", "--yes"], 2, ""),
        (vec!["raise", "refunds", "1", "--scope", "acme", "--by", " ", "--note", "x", "--yes"], 2, "say who"),
        (vec!["raise", "refunds", "1", "--by", "ops", "--note", "x", "--yes"], 1, "no window in use now"),
        (vec!["raise", "nothing", "1", "--scope", "acme", "--by", "ops", "--note", "x", "--yes"], 1, "no window"),
        (
            vec!["reset", "refunds", "--scope", "acme", "--window", "12", "--by", "ops", "--note", "x", "--yes"],
            1,
            "no window starting at 12",
        ),
        (
            vec!["--json", "reset", "refunds", "--scope", "acme", "--by", "ops", "--note", "x", "--yes"],
            2,
            "--json does not apply",
        ),
    ] {
        let refused = run(&args);
        assert_eq!(refused.status.code(), Some(code), "{args:?}: {}", text(&refused));
        assert!(text(&refused).contains(says), "{args:?}: {}", text(&refused));
    }
    let unanswered = idem(
        db,
        &[schema, &["raise", "refunds", "1", "--scope", "acme", "--by", "ops", "--note", "x"]].concat(),
        "n\n",
    );
    assert!(text(&unanswered).contains("nothing changed"), "{}", text(&unanswered));
    assert_eq!(refund(shop, "o3"), Err(ErrorCode::BudgetExceeded), "still spent");

    let raised =
        run(&["raise", "refunds", "1", "--scope", "acme", "--by", "ops", "--note", "agreed with acme", "--yes"]);
    assert!(raised.status.success(), "{}", text(&raised));
    assert!(text(&raised).contains("used 2 of 3"), "{}", text(&raised));
    assert_eq!(refund(shop, "o3"), Ok(10), "one more fits");
    assert_eq!(refund(shop, "o4"), Err(ErrorCode::BudgetExceeded));

    let reset = run(&["reset", "refunds", "--scope", "acme", "--by", "ops", "--note", "test run", "--yes"]);
    assert!(reset.status.success(), "{}", text(&reset));
    assert_eq!(refund(shop, "o4"), Ok(10), "a reset window has room again");
    let listed = text(&run(&["budgets", "--budget", "refunds"]));
    assert!(
        listed.contains("used 1 of 3") && listed.contains("reset (was 3) by ops") && listed.contains("test run"),
        "{listed}"
    );
    let json = run(&["--json", "budgets"]);
    let line: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&json.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(line["adjusted"]["by"], "ops");
    assert_eq!(line["raised"].as_f64(), Some(1.0));
}

#[test]
fn an_operator_raises_and_resets_a_budget_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("idem.db");
    let shop = Shop { store: idem::SqliteStore::open(&db).unwrap(), tenant: "acme".into() };
    adjusts(&shop, &db, &[]);
}

#[test]
fn an_operator_raises_and_resets_a_budget_on_postgres() {
    let Some(url) = pg_url("budgets on PostgreSQL") else { return };
    let schema = format!("cli_budgets_{}", std::process::id());
    let shop = Shop { store: idem::PgStore::builder(&url).schema(&schema).build().unwrap(), tenant: "acme".into() };
    block_on(shop.store.read(idem::store::RecordId { namespace: "x", key: "y" })).unwrap();
    adjusts(&shop, Path::new(&url), &["--schema", &schema]);
    super::postgres::sql(&url, &format!("DROP SCHEMA {schema} CASCADE"));
}

/// The budget commands on a fresh prefix of the Redis store at `url`.
fn adjusts_on_redis(url: &str) {
    let prefix = super::redis::fresh_prefix();
    let store = idem::RedisStore::builder(url).prefix(&prefix).build().unwrap();
    let shop = Shop { store, tenant: "acme".into() };
    adjusts(&shop, Path::new(url), &["--prefix", &prefix]);
}

#[test]
fn an_operator_raises_and_resets_a_budget_on_redis() {
    let Some(url) = super::redis::redis_url("budgets on Redis") else { return };
    adjusts_on_redis(&url);
}

#[test]
fn an_operator_raises_and_resets_a_budget_on_a_redis_cluster() {
    let Some(url) = super::redis::cluster_url("budgets on a Redis Cluster") else { return };
    adjusts_on_redis(&url);
}
