//! The `idem` command against a real store file: what an operator sees and changes.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use idem_runtime::SqliteStore;
use idem_runtime::store::{
    Completion, Record, RecordId, RecordState, Renew, Reservation, Reserve, Store, Token, block_on,
};
use postgres::{pg_url, sql, sql_strings};

#[path = "cli/approvals.rs"]
mod approvals;
#[path = "cli/budgets.rs"]
mod budgets;
#[path = "cli/escaped_keys.rs"]
mod escaped_keys;
#[path = "cli/limits.rs"]
mod limits;
#[path = "cli/not_a_store.rs"]
mod not_a_store;
#[path = "cli/postgres.rs"]
mod postgres;
#[path = "cli/redis.rs"]
mod redis;
#[path = "cli/settling.rs"]
mod settling;

fn idem(db: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_idem"))
        .arg("--db")
        .arg(db)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A child that refuses its arguments exits without reading: a closed pipe is fine.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    child.wait_with_output().unwrap()
}

fn text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr)
}

fn reserve(store: &SqliteStore, key: &str, lease: Duration) -> Token {
    let id = RecordId { namespace: "shop::pay", key };
    match block_on(store.reserve(Reserve { id, request: r#"{"amount":10}"#, lease })).unwrap() {
        Reservation::Acquired { token } => token,
        other => panic!("{other:?}"),
    }
}

/// A store with one completed key, one live reservation and one abandoned (zero lease).
fn store_with_records() -> (tempfile::TempDir, std::path::PathBuf, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("idem.db");
    let store = SqliteStore::open(&db).unwrap();
    let done = reserve(&store, "pay:1", Duration::from_secs(600));
    let id = RecordId { namespace: "shop::pay", key: "pay:1" };
    block_on(store.complete(id, done, Completion::Success("\"paid\""), Duration::from_secs(600))).unwrap();
    reserve(&store, "pay:2", Duration::from_secs(600));
    reserve(&store, "pay:3", Duration::ZERO);
    (dir, db, store)
}

#[test]
fn list_filters_by_state() {
    let (_dir, db, _store) = store_with_records();
    let all = idem(&db, &["list"], "");
    assert!(all.status.success(), "{}", text(&all));
    assert!(text(&all).contains("3 record(s)"), "{}", text(&all));
    let abandoned = text(&idem(&db, &["list", "--state", "abandoned"], ""));
    assert!(abandoned.contains("pay:3") && !abandoned.contains("pay:2"), "{abandoned}");
    let completed = text(&idem(&db, &["list", "--state", "completed"], ""));
    assert!(completed.contains("pay:1") && completed.contains("1 record(s)"), "{completed}");
}

/// `--scope` lists one scope's records: those whose key starts with the scope's prefix.
#[test]
fn list_filters_by_scope() {
    let (_dir, db, store) = store_with_records();
    for tenant in ["acme", "beta"] {
        let key = format!("{}pay:1", idem_runtime::store::scope_prefix(tenant));
        reserve(&store, &key, Duration::from_secs(600));
    }
    let acme = text(&idem(&db, &["list", "--scope", "acme"], ""));
    assert!(acme.contains(&idem_runtime::store::scope_prefix("acme")) && acme.contains("1 record(s)"), "{acme}");
    let other = text(&idem(&db, &["list", "--scope", "Acme"], ""));
    assert!(other.contains("0 record(s)"), "a scope is exact: {other}");
    assert!(text(&idem(&db, &["list"], "")).contains("5 record(s)"));
}

/// The command line as the ecosystem's commands have it: --version, help per command,
/// --db anywhere, --limit=N, --state in_progress meaning running calls only.
#[test]
fn flags_anywhere_help_and_version() {
    let (_dir, db, _store) = store_with_records();
    let version = Command::new(env!("CARGO_BIN_EXE_idem")).arg("--version").output().unwrap();
    assert_eq!(text(&version).trim(), format!("idem {}", env!("CARGO_PKG_VERSION")));
    let help = text(&Command::new(env!("CARGO_BIN_EXE_idem")).args(["help", "resolve"]).output().unwrap());
    assert!(help.contains("--force") && help.contains("--rmcp") && help.contains("Example"), "{help}");
    let after = Command::new(env!("CARGO_BIN_EXE_idem")).args(["list", "--limit=1", "--db"]).arg(&db).output().unwrap();
    assert!(after.status.success(), "{}", text(&after));
    assert!(text(&after).contains("the oldest 1 of 3 record(s)"), "{}", text(&after));
    let old = text(&idem(&db, &["list", "--older-than", "1h"], ""));
    assert!(old.contains("0 record(s)"), "none is an hour old: {old}");
    let bad_age = idem(&db, &["list", "--older-than", "soon"], "");
    assert_eq!(bad_age.status.code(), Some(2), "{}", text(&bad_age));
    let running = text(&idem(&db, &["list", "--state", "in_progress"], ""));
    assert!(running.contains("pay:2") && !running.contains("pay:3"), "an abandoned call is not running: {running}");
}

/// `--json`: one object per line, stored JSON as JSON, times as RFC 3339; `count` groups
/// by namespace and state.
#[test]
fn json_lines_and_counts() {
    let (_dir, db, _store) = store_with_records();
    let listed = idem(&db, &["list", "--json"], "");
    let lines: Vec<serde_json::Value> =
        String::from_utf8_lossy(&listed.stdout).lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["key"], "pay:1");
    assert_eq!(lines[0]["result"], "paid");
    assert_eq!(lines[0]["request"]["amount"], 10);
    let created = lines[0]["created_at"].as_str().unwrap();
    assert!(created.len() == 24 && created.ends_with('Z') && created.as_bytes()[10] == b'T', "{created}");
    assert_eq!(lines[2]["state"], "abandoned");
    let counted = text(&idem(&db, &["count"], ""));
    for state in ["abandoned", "completed", "in_progress"] {
        assert!(
            counted.lines().any(|l| l.starts_with(state) && l.contains("shop::pay") && l.contains(" 1 ")),
            "{counted}"
        );
    }
    let counted = idem(&db, &["count", "--json"], "");
    let first: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&counted.stdout).lines().next().unwrap()).unwrap();
    assert_eq!((first["namespace"].as_str(), first["records"].as_u64()), (Some("shop::pay"), Some(1)));
}

#[test]
fn show_prints_the_record() {
    let (_dir, db, _store) = store_with_records();
    let shown = text(&idem(&db, &["show", "shop::pay", "pay:1"], ""));
    assert!(shown.contains("state:     completed") && shown.contains("result:    \"paid\""), "{shown}");
    let missing = idem(&db, &["show", "shop::pay", "nope"], "");
    assert!(!missing.status.success());
    assert!(text(&missing).contains("no record for shop::pay nope"));
}

/// A running call's progress message is shown after its lease, on one line; a record
/// without one shows no progress line.
#[test]
fn show_prints_the_progress_of_a_running_call() {
    let (_dir, db, store) = store_with_records();
    let quiet = text(&idem(&db, &["show", "shop::pay", "pay:2"], ""));
    assert!(quiet.contains("lease end: ") && !quiet.contains("\nprogress:"), "{quiet}");

    let id = RecordId { namespace: "shop::pay", key: "pay:2" };
    let Some(Record { token, .. }) = block_on(store.read(id)).unwrap() else { panic!("pay:2 is reserved") };
    let renew =
        |progress| block_on(store.renew(Renew { id, token, lease: Duration::from_secs(600), progress })).unwrap();
    renew(Some("charging card 2/3"));
    let shown = text(&idem(&db, &["show", "shop::pay", "pay:2"], ""));
    let lines: Vec<&str> = shown.lines().collect();
    let lease = lines.iter().position(|l| l.starts_with("lease end: ")).expect(&shown);
    assert_eq!(lines.get(lease + 1), Some(&"progress:  charging card 2/3"), "{shown}");

    renew(Some("line one\nstate:     completed"));
    let shown = text(&idem(&db, &["show", "shop::pay", "pay:2"], ""));
    assert!(shown.contains("progress:  line one\\nstate:     completed"), "{shown}");
    assert_eq!(shown.matches("\nstate:").count(), 1, "a message must stay on its line: {shown}");

    let done = text(&idem(&db, &["show", "shop::pay", "pay:1"], ""));
    assert!(!done.contains("\nprogress:"), "{done}");
}

#[test]
fn resolve_done_asks_first_and_records_the_result() {
    let (_dir, db, store) = store_with_records();
    let id = RecordId { namespace: "shop::pay", key: "pay:3" };
    let declined = idem(&db, &["resolve", "shop::pay", "pay:3", "--done", r#"{"id":"ch_1"}"#], "n\n");
    assert!(!declined.status.success());
    assert!(text(&declined).contains("nothing changed"));
    assert!(matches!(block_on(store.read(id)).unwrap().unwrap().state, RecordState::InProgress { .. }));

    let accepted = idem(&db, &["resolve", "shop::pay", "pay:3", "--done", r#"{"id":"ch_1"}"#], "y\n");
    assert!(accepted.status.success(), "{}", text(&accepted));
    assert_eq!(
        block_on(store.read(id)).unwrap().unwrap().state,
        RecordState::Completed { result: r#"{"id":"ch_1"}"#.into() }
    );
}

/// A key whose lease is live may belong to a call still running: releasing or resolving
/// it needs --force, and without it nothing changes.
#[test]
fn resolving_a_live_lease_needs_force() {
    let (_dir, db, store) = store_with_records();
    let id = RecordId { namespace: "shop::pay", key: "pay:2" };
    let before = block_on(store.read(id)).unwrap();
    for args in [
        &["resolve", "shop::pay", "pay:2", "--release", "--yes"][..],
        &["resolve", "shop::pay", "pay:2", "--done", "1", "--yes"],
    ] {
        let refused = idem(&db, args, "y\n");
        assert_eq!(refused.status.code(), Some(1), "{args:?}: {}", text(&refused));
        assert!(text(&refused).contains("lease is live") && text(&refused).contains("--force"), "{}", text(&refused));
        assert!(text(&refused).contains("state:     in_progress"), "what was there is shown: {}", text(&refused));
    }
    assert_eq!(block_on(store.read(id)).unwrap(), before, "nothing changed");
}

#[test]
fn resolve_release_with_yes_frees_the_key() {
    let (_dir, db, store) = store_with_records();
    let released = idem(&db, &["resolve", "shop::pay", "pay:2", "--release", "--force", "--yes"], "");
    assert!(released.status.success(), "{}", text(&released));
    assert_eq!(block_on(store.read(RecordId { namespace: "shop::pay", key: "pay:2" })).unwrap(), None);
    let settled = idem(&db, &["resolve", "shop::pay", "pay:1", "--release", "--yes"], "");
    assert!(!settled.status.success(), "a completed key is not stuck");
    assert!(text(&settled).contains("no longer in progress"), "{}", text(&settled));
}

#[test]
fn bad_input_is_refused_with_usage_and_changes_nothing() {
    let (_dir, db, store) = store_with_records();
    for args in [
        &["resolve", "shop::pay", "pay:3", "--done", "not json"][..],
        &["resolve", "shop::pay", "pay:3"],
        &["list", "--state", "stuck"],
        &["frobnicate"],
        &["show", "shop::pay", "pay:1", "--limit", "5"],
        &["resolve", "shop::pay", "pay:3", "--release", "--rmcp"],
    ] {
        let output = idem(&db, args, "y\n");
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", text(&output));
        assert!(text(&output).contains("error:") && text(&output).contains("--help"), "{args:?}: {}", text(&output));
    }
    assert!(block_on(store.read(RecordId { namespace: "shop::pay", key: "pay:3" })).unwrap().is_some());
}

/// A store that is not there is an error naming the path, and nothing is created: a typo
/// must not read as "no stuck keys". A directory, a file that is not a store and a
/// PostgreSQL server that does not answer are errors too.
#[test]
fn a_missing_store_is_an_error_and_nothing_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nodir").join("typo.db");
    let not_a_store = dir.path().join("notes.txt");
    std::fs::write(&not_a_store, "these are not the records you are looking for, not at all").unwrap();
    let cases: [(&Path, &str); 4] = [
        (&missing, "no store at"),
        (dir.path(), "is a directory"),
        (&not_a_store, "not a database"),
        (Path::new("postgres://idem@127.0.0.1:1/idem"), "PostgreSQL idem@127.0.0.1:1/idem (schema idem): open: "),
    ];
    for (db, why) in cases {
        let output = idem(db, &["list"], "");
        assert_eq!(output.status.code(), Some(1), "{}: {}", db.display(), text(&output));
        assert!(text(&output).contains(why), "{}: {}", db.display(), text(&output));
    }
    assert!(!dir.path().join("nodir").exists(), "nothing created");
    assert!(!Path::new("postgres:").exists(), "no directory named after the URL");
}

/// A namespace with one record completed with `stored` and one abandoned.
fn completed_and_abandoned(store: &SqliteStore, namespace: &str, (done, stored): (&str, &str), abandoned: &str) {
    for (key, lease) in [(done, Duration::from_secs(600)), (abandoned, Duration::ZERO)] {
        let id = RecordId { namespace, key };
        let Reservation::Acquired { token } = block_on(store.reserve(Reserve { id, request: "{}", lease })).unwrap()
        else {
            panic!()
        };
        if key == done {
            block_on(store.complete(id, token, Completion::Success(stored), Duration::from_secs(600))).unwrap();
        }
    }
}

/// `--done` for a namespace whose tool stores MCP tool results must be one, or be wrapped
/// with --rmcp as the tool would: a plain value would answer RECORD_UNREADABLE forever.
#[test]
fn resolve_done_keeps_an_rmcp_tools_result_shape() {
    let (_dir, db, store) = store_with_records();
    let namespace = "mcp::send_invoice";
    let stored = r#"{"content":[{"type":"text","text":"{\"invoice\":\"inv_1\"}"}],"structuredContent":{"invoice":"inv_1"},"isError":false}"#;
    completed_and_abandoned(&store, namespace, ("invoice:1", stored), "invoice:2");
    let plain = idem(&db, &["resolve", namespace, "invoice:2", "--done", r#"{"invoice":"inv_2"}"#, "--yes"], "");
    assert_eq!(plain.status.code(), Some(1), "{}", text(&plain));
    assert!(text(&plain).contains("--rmcp"), "{}", text(&plain));
    let id = RecordId { namespace, key: "invoice:2" };
    assert!(
        matches!(block_on(store.read(id)).unwrap().unwrap().state, RecordState::InProgress { .. }),
        "nothing changed"
    );
    let wrapped =
        idem(&db, &["resolve", namespace, "invoice:2", "--done", r#"{"invoice":"inv_2"}"#, "--rmcp", "--yes"], "");
    assert!(wrapped.status.success(), "{}", text(&wrapped));
    let RecordState::Completed { result } = block_on(store.read(id)).unwrap().unwrap().state else {
        panic!("completed")
    };
    let result: serde_json::Value = serde_json::from_str(&result).unwrap();
    assert_eq!(result["structuredContent"]["invoice"], "inv_2");
    assert_eq!(result["content"][0]["type"], "text");
}

/// `--done` for a namespace whose records are an HTTP layer's stored responses must be one:
/// anything else would answer every retry with a 500 (record-unreadable).
#[test]
fn resolve_done_keeps_an_http_layers_response_shape() {
    let (_dir, db, store) = store_with_records();
    let namespace = "http";
    let stored = r#"{"status":201,"headers":[["content-type","application/json"]],"body":"{\"id\":\"inv_1\"}"}"#;
    completed_and_abandoned(&store, namespace, ("key-1", stored), "key-2");
    let plain = idem(&db, &["resolve", namespace, "key-2", "--done", r#"{"id":"inv_2"}"#, "--yes"], "");
    assert_eq!(plain.status.code(), Some(1), "{}", text(&plain));
    assert!(text(&plain).contains("stores HTTP responses"), "{}", text(&plain));
    let id = RecordId { namespace, key: "key-2" };
    assert!(
        matches!(block_on(store.read(id)).unwrap().unwrap().state, RecordState::InProgress { .. }),
        "nothing changed"
    );
    let response = r#"{"status":201,"body":"{\"id\":\"inv_2\"}"}"#;
    let done = idem(&db, &["resolve", namespace, "key-2", "--done", response, "--yes"], "");
    assert!(done.status.success(), "{}", text(&done));
    let RecordState::Completed { result } = block_on(store.read(id)).unwrap().unwrap().state else {
        panic!("completed")
    };
    assert_eq!(serde_json::from_str::<serde_json::Value>(&result).unwrap()["status"], 201);
}

/// `reopen` undoes a wrong `resolve --done`: the record reads as abandoned again, and an
/// in-progress record cannot be reopened.
#[test]
fn reopen_undoes_a_wrong_resolve() {
    let (_dir, db, store) = store_with_records();
    let id = RecordId { namespace: "shop::pay", key: "pay:1" };
    let reopened = idem(&db, &["reopen", "shop::pay", "pay:1", "--yes"], "");
    assert!(reopened.status.success(), "{}", text(&reopened));
    assert!(text(&reopened).contains("result:    \"paid\""), "what was there is shown: {}", text(&reopened));
    let record = block_on(store.read(id)).unwrap().unwrap();
    assert!(matches!(record.state, RecordState::InProgress { lease_expired: true, .. }), "{record:?}");
    let running = idem(&db, &["reopen", "shop::pay", "pay:2", "--yes"], "");
    assert_eq!(running.status.code(), Some(1));
    assert!(text(&running).contains("not settled"), "{}", text(&running));
}

#[test]
fn purge_removes_records_past_retention() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("idem.db");
    let store = SqliteStore::open(&db).unwrap();
    let token = reserve(&store, "old", Duration::from_secs(600));
    let id = RecordId { namespace: "shop::pay", key: "old" };
    block_on(store.complete(id, token, Completion::Success("1"), Duration::ZERO)).unwrap();
    let purged = text(&idem(&db, &["purge"], ""));
    assert!(purged.contains("purged 1 record(s)"), "{purged}");
    assert_eq!(block_on(store.read(id)).unwrap(), None);
}

/// Without `--db` and `IDEM_DB`, the command reads the tools' default store, in the user's
/// data directory, whatever directory it is run from, and says which file it read.
#[test]
fn without_db_the_command_reads_the_tools_default_store() {
    let root = tempfile::tempdir().unwrap();
    let (home, cwd) = (root.path().join("home"), root.path().join("cwd"));
    std::fs::create_dir_all(&cwd).unwrap();
    let default = home.join("data").join("idem").join("idem.db");
    let store = SqliteStore::open(&default).unwrap();
    let token = reserve(&store, "pay:7", Duration::from_secs(600));
    let id = RecordId { namespace: "shop::pay", key: "pay:7" };
    block_on(store.complete(id, token, Completion::Success(r#"{"charge":"ch_7"}"#), Duration::from_secs(600))).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_idem"))
        .arg("list")
        .current_dir(&cwd)
        .env("HOME", &home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env_remove("IDEM_DB")
        .output()
        .unwrap();
    let shown = text(&output);
    assert!(output.status.success(), "{shown}");
    assert!(
        shown.contains("pay:7") && shown.contains(&format!("1 record(s) in SQLite {}", default.display())),
        "{shown}"
    );
    assert_eq!(std::fs::read_dir(&cwd).unwrap().count(), 0, "nothing created where it ran");
}

/// The same command on a PostgreSQL store (the test server of `IDEM_TEST_DATABASE_URL`):
/// a schema without idem's tables is an error and stays without them; on one a store
/// wrote, `list --state abandoned --json`, `count` and `resolve` work as on SQLite.
#[test]
fn postgres_stores_are_read_and_never_created() {
    let Some(url) = pg_url("postgres_stores_are_read_and_never_created") else { return };
    let schema = format!("idem_cli_{}", std::process::id());
    let pg = |args: &[&str]| {
        let output =
            Command::new(env!("CARGO_BIN_EXE_idem")).args(["--db", &url, "--schema", &schema]).args(args).output();
        output.unwrap()
    };
    let missing = pg(&["list"]);
    assert_eq!(missing.status.code(), Some(1), "{}", text(&missing));
    assert!(text(&missing).contains("not an idem store"), "{}", text(&missing));
    let store = idem_runtime::store::PgStore::builder(&url).schema(&schema).build().unwrap();
    let schemas = format!("SELECT nspname::text FROM pg_namespace WHERE nspname = '{schema}'");
    assert!(sql_strings(&url, &schemas).is_empty(), "the command created nothing");
    let id = RecordId { namespace: "shop::pay", key: "pay:9" };
    let reserved = block_on(store.reserve(Reserve { id, request: r#"{"amount":9}"#, lease: Duration::ZERO }));
    assert!(matches!(reserved, Ok(Reservation::Acquired { .. })), "{reserved:?}");

    let listed = pg(&["list", "--state", "abandoned", "--json"]);
    assert!(listed.status.success(), "{}", text(&listed));
    let line: serde_json::Value = serde_json::from_str(String::from_utf8_lossy(&listed.stdout).trim()).unwrap();
    assert_eq!((line["key"].as_str(), line["state"].as_str()), (Some("pay:9"), Some("abandoned")), "{line}");
    let counted = text(&pg(&["count"]));
    assert!(counted.contains("abandoned") && counted.contains("shop::pay"), "{counted}");
    let resolved = pg(&["resolve", "shop::pay", "pay:9", "--done", r#"{"charge":"ch_9"}"#, "--yes"]);
    assert!(resolved.status.success(), "{}", text(&resolved));
    let record = block_on(store.read(id)).unwrap().unwrap();
    assert_eq!(record.state, RecordState::Completed { result: r#"{"charge":"ch_9"}"#.into() });
    sql(&url, &format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
}
