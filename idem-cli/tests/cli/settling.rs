//! Settling a key by hand: `--done` as the tool stores it (`--rmcp` only where it stores
//! MCP tool results), from an argument, standard input or a file; `--json` only where the
//! command prints JSON.

use idem_runtime::store::{RecordId, RecordState, Store, block_on};

use super::{completed_and_abandoned, idem, store_with_records, text};

/// `--rmcp` where the namespace's completed records are plain values would make the tool
/// read back an MCP envelope instead of its value; where they are an HTTP layer's stored
/// responses, every retry would answer 500.
#[test]
fn resolve_done_rmcp_is_refused_where_the_tool_stores_no_tool_results() {
    let (_dir, db, store) = store_with_records();
    let http = r#"{"status":201,"headers":[],"body":"{\"id\":\"inv_1\"}"}"#;
    completed_and_abandoned(&store, "http", ("key-1", http), "key-2");
    for (namespace, key, why) in [
        ("shop::pay", "pay:3", "stores plain values, not MCP tool results"),
        ("http", "key-2", "stores HTTP responses"),
    ] {
        let refused = idem(&db, &["resolve", namespace, key, "--done", r#"{"id":"ch_3"}"#, "--rmcp", "--yes"], "");
        assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
        assert!(text(&refused).contains(why) && text(&refused).contains("--rmcp"), "{}", text(&refused));
        let record = block_on(store.read(RecordId { namespace, key })).unwrap().unwrap();
        assert!(matches!(record.state, RecordState::InProgress { .. }), "nothing changed: {record:?}");
    }
    let plain = idem(&db, &["resolve", "shop::pay", "pay:3", "--done", r#"{"id":"ch_3"}"#, "--yes"], "");
    assert!(plain.status.success(), "{}", text(&plain));
}

/// A result too large for an argument comes from standard input (`-`, which needs --yes)
/// or a file (`@FILE`): here a 300 KiB HTTP response.
#[test]
fn resolve_done_reads_standard_input_or_a_file() {
    let (dir, db, store) = store_with_records();
    let big = "x".repeat(300 * 1024);
    let response = serde_json::json!({ "status": 201, "body": big }).to_string();
    let stored = serde_json::json!({ "status": 201, "body": "first" }).to_string();
    completed_and_abandoned(&store, "http", ("key-1", &stored), "key-2");
    let file = dir.path().join("response.json");
    std::fs::write(&file, &response).unwrap();
    let from_file = idem(&db, &["resolve", "http", "key-2", "--done", &format!("@{}", file.display()), "--yes"], "");
    assert!(from_file.status.success(), "{}", text(&from_file));
    let id = RecordId { namespace: "http", key: "key-2" };
    assert_eq!(block_on(store.read(id)).unwrap().unwrap().state, RecordState::Completed { result: response.clone() });

    completed_and_abandoned(&store, "http", ("key-3", &stored), "key-4");
    let from_stdin = idem(&db, &["resolve", "http", "key-4", "--done", "-", "--yes"], &response);
    assert!(from_stdin.status.success(), "{}", text(&from_stdin));
    let id = RecordId { namespace: "http", key: "key-4" };
    assert_eq!(block_on(store.read(id)).unwrap().unwrap().state, RecordState::Completed { result: response });
}

/// Without --yes, `--done -` is a usage error (stdin holds the result, so nobody can be
/// asked); a missing file or one that is not JSON changes nothing.
#[test]
fn resolve_done_from_a_bad_source_changes_nothing() {
    let (dir, db, store) = store_with_records();
    let id = RecordId { namespace: "shop::pay", key: "pay:3" };
    let before = block_on(store.read(id)).unwrap();
    let asked = idem(&db, &["resolve", "shop::pay", "pay:3", "--done", "-"], "{}");
    assert_eq!(asked.status.code(), Some(2), "{}", text(&asked));
    assert!(text(&asked).contains("--yes"), "{}", text(&asked));
    let not_json = dir.path().join("not.json");
    std::fs::write(&not_json, "paid, I think").unwrap();
    for (source, why) in [
        (format!("@{}", dir.path().join("missing.json").display()), "No such file"),
        (format!("@{}", not_json.display()), "not JSON"),
        ("-".to_owned(), "not JSON"),
    ] {
        let output = idem(&db, &["resolve", "shop::pay", "pay:3", "--done", &source, "--yes"], "paid");
        assert_eq!(output.status.code(), Some(1), "{source}: {}", text(&output));
        assert!(text(&output).contains(why) && text(&output).contains("nothing changed"), "{}", text(&output));
        assert!(output.stdout.is_empty(), "read before the record is shown: {}", text(&output));
    }
    assert_eq!(block_on(store.read(id)).unwrap(), before);
}

/// `--json` where the command prints JSON, and a usage error where it does not.
#[test]
fn json_applies_to_list_count_show_and_purge_only() {
    let (_dir, db, store) = store_with_records();
    for args in [
        &["resolve", "shop::pay", "pay:3", "--release", "--yes", "--json"][..],
        &["--json", "reopen", "shop::pay", "pay:1", "--yes"],
    ] {
        let output = idem(&db, args, "");
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", text(&output));
        assert!(text(&output).contains("--json does not apply to"), "{}", text(&output));
    }
    assert!(
        block_on(store.read(RecordId { namespace: "shop::pay", key: "pay:3" })).unwrap().is_some(),
        "nothing changed"
    );
    assert!(matches!(
        block_on(store.read(RecordId { namespace: "shop::pay", key: "pay:1" })).unwrap().unwrap().state,
        RecordState::Completed { .. }
    ));
    for args in
        [&["list", "--json"][..], &["count", "--json"], &["show", "shop::pay", "pay:1", "--json"], &["purge", "--json"]]
    {
        let output = idem(&db, args, "");
        assert!(output.status.success(), "{args:?}: {}", text(&output));
        for line in String::from_utf8_lossy(&output.stdout).lines() {
            assert!(serde_json::from_str::<serde_json::Value>(line).is_ok(), "{args:?}: {line}");
        }
    }
}
