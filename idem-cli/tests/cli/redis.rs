//! The command on a Redis store, on one server and on a Redis Cluster: what it lists,
//! settles and purges, and a URL or prefix that holds no store, refused with nothing
//! written.

use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use idem_runtime::RedisStore;
use idem_runtime::store::{Completion, RecordId, RecordState, Reservation, Reserve, Store, block_on};

use super::{idem, text};

/// The test server's URL, or `None` after saying that `test` is skipped; under CI a
/// missing URL fails the test.
pub fn redis_url(test: &str) -> Option<String> {
    url_in("IDEM_TEST_REDIS_URL", test)
}

/// The test cluster's URL (`redis+cluster://` naming every primary), as [`redis_url`].
pub fn cluster_url(test: &str) -> Option<String> {
    url_in("IDEM_TEST_REDIS_CLUSTER_URL", test)
}

fn url_in(env: &str, test: &str) -> Option<String> {
    let url = std::env::var(env).ok().filter(|url| !url.is_empty());
    if url.is_none() {
        if std::env::var("CI").is_ok_and(|ci| !ci.is_empty() && ci != "false" && ci != "0") {
            panic!("{env} is not set under CI; CI must run the Redis tests");
        }
        eprintln!("SKIPPED {test}: set {env}");
    }
    url
}

/// A key prefix no other store uses.
pub fn fresh_prefix() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("idem-cli-{}-{nanos}", std::process::id())
}

/// The `host:port` of each server `url` names: one, or a cluster's nodes. The test
/// cluster's URL names every primary, so between them they hold every key.
fn nodes(url: &str) -> Vec<String> {
    match url.strip_prefix("redis+cluster://") {
        Some(hosts) => hosts.split(',').map(str::to_owned).collect(),
        None => vec![url.trim_start_matches("redis://").split('/').next().unwrap().to_owned()],
    }
}

/// The store's keys on each node, in the order of [`nodes`]: `KEYS` answers only for the
/// slots of the node it is sent to.
fn keys_per_node(url: &str, prefix: &str) -> Vec<Vec<String>> {
    let pattern = format!("{prefix}*");
    nodes(url).iter().map(|node| redis_cmd(&mut TcpStream::connect(node).unwrap(), &["KEYS", &pattern])).collect()
}

/// Every key of the store, sorted.
fn keys(url: &str, prefix: &str) -> Vec<String> {
    let mut keys = keys_per_node(url, prefix).concat();
    keys.sort();
    keys
}

/// One command in RESP, its array-of-bulk-strings reply as text (the tests speak RESP
/// themselves: no client crate to pin).
fn redis_cmd(stream: &mut TcpStream, args: &[&str]) -> Vec<String> {
    use std::io::{BufRead, BufReader, Write};
    let mut request = format!("*{}\r\n", args.len());
    for arg in args {
        request += &format!("${}\r\n{arg}\r\n", arg.len());
    }
    stream.write_all(request.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let count: usize = line.strip_prefix('*').and_then(|count| count.trim().parse().ok()).expect(&line);
    (0..count)
        .map(|_| {
            let (mut length, mut value) = (String::new(), String::new());
            reader.read_line(&mut length).unwrap();
            reader.read_line(&mut value).unwrap();
            value.trim_end().to_owned()
        })
        .collect()
}

/// How many nodes hold a record of one of `keys` (of `shop::pay`, in the store's layout).
fn nodes_holding(url: &str, prefix: &str, keys: &[String]) -> usize {
    let names: Vec<String> = keys.iter().map(|key| format!(":r:9:shop::pay:{key}")).collect();
    let holds = |held: &Vec<String>| held.iter().any(|key| names.iter().any(|name| key.ends_with(name)));
    keys_per_node(url, prefix).iter().filter(|held| holds(held)).count()
}

/// `list`, `count`, `show`, `resolve`, `reopen` and `purge` on a store a tool wrote at
/// `url`: pay:1 completed, pay:2 to pay:8 abandoned.
fn lists_shows_and_settles_keys(url: &str) {
    let prefix = fresh_prefix();
    let store = RedisStore::builder(url).prefix(&prefix).build().unwrap();
    let id = |key| RecordId { namespace: "shop::pay", key };
    let reserve = |key, lease| match block_on(store.reserve(Reserve { id: id(key), request: "{}", lease })) {
        Ok(Reservation::Acquired { token }) => token,
        other => panic!("{other:?}"),
    };
    let done = reserve("pay:1", Duration::ZERO);
    block_on(store.complete(id("pay:1"), done, Completion::Success("1"), Duration::from_secs(3600))).unwrap();
    let abandoned: Vec<String> = (2..=8).map(|n| format!("pay:{n}")).collect();
    for key in &abandoned {
        reserve(key.as_str(), Duration::ZERO);
    }
    // Abandoned records all on one node would let a listing that reads one node pass.
    let holding = nodes_holding(url, &prefix, &abandoned);
    assert!(holding > 1 || nodes(url).len() == 1, "the abandoned records lie on {holding} node(s) of the cluster");
    let db = Path::new(url);
    let run = |args: &[&str]| idem(db, &[&["--prefix", prefix.as_str()], args].concat(), "");

    let listed = run(&["--json", "list", "--state", "abandoned"]);
    assert!(listed.status.success(), "{}", text(&listed));
    let mut keys: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap()["key"].as_str().unwrap().to_owned())
        .collect();
    keys.sort();
    assert_eq!(keys, abandoned, "{}", text(&listed));
    let first = run(&["list", "--state", "abandoned", "--limit", "1"]);
    assert!(text(&first).contains("the oldest 1 of 7 record(s)"), "{}", text(&first));
    let counted = run(&["--json", "count"]);
    let states: Vec<(String, u64)> = String::from_utf8_lossy(&counted.stdout)
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .map(|count| (count["state"].as_str().unwrap().to_owned(), count["records"].as_u64().unwrap()))
        .collect();
    assert!(states.contains(&("abandoned".into(), 7)) && states.contains(&("completed".into(), 1)), "{states:?}");
    let shown = run(&["show", "shop::pay", "pay:1"]);
    assert!(shown.status.success() && text(&shown).contains("completed"), "{}", text(&shown));

    let resolved = run(&["resolve", "shop::pay", "pay:2", "--done", "2", "--yes"]);
    assert!(resolved.status.success(), "{}", text(&resolved));
    let record = block_on(store.read(id("pay:2"))).unwrap().unwrap();
    assert_eq!(record.state, RecordState::Completed { result: "2".into() });
    let reopened = run(&["reopen", "shop::pay", "pay:2", "--yes"]);
    assert!(reopened.status.success(), "{}", text(&reopened));
    let released = run(&["resolve", "shop::pay", "pay:2", "--release", "--yes"]);
    assert!(released.status.success(), "{}", text(&released));
    assert_eq!(block_on(store.read(id("pay:2"))).unwrap(), None);

    let due = reserve("pay:9", Duration::from_secs(600));
    block_on(store.complete(id("pay:9"), due, Completion::Success("9"), Duration::ZERO)).unwrap();
    let purged = run(&["purge"]);
    assert!(text(&purged).contains("purged 1 record(s)"), "{}", text(&purged));
    assert_eq!(block_on(store.read(id("pay:9"))).unwrap(), None);
    assert!(block_on(store.read(id("pay:1"))).unwrap().is_some(), "pay:1 is kept an hour");
    // A record in progress never expires: none is left on the shared server.
    for key in &abandoned[1..] {
        assert!(run(&["resolve", "shop::pay", key, "--release", "--yes"]).status.success());
    }
}

#[test]
fn lists_shows_and_settles_keys_on_one_server() {
    let Some(url) = redis_url("lists_shows_and_settles_keys_on_one_server") else { return };
    lists_shows_and_settles_keys(&url);
}

#[test]
fn lists_shows_and_settles_keys_on_a_cluster() {
    let Some(url) = cluster_url("lists_shows_and_settles_keys_on_a_cluster") else { return };
    lists_shows_and_settles_keys(&url);
}

/// A prefix no tool wrote (a typo, another database number) is refused: the command
/// never writes to the server then, not even its marker.
fn refuses_a_prefix_without_a_store(url: &str) {
    let prefix = fresh_prefix();
    for args in [&["list"][..], &["purge"], &["resolve", "ns", "k", "--release", "--yes"]] {
        let refused = idem(Path::new(url), &[&["--prefix", prefix.as_str()], args].concat(), "");
        assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
        assert!(text(&refused).contains("no idem store under the prefix"), "{}", text(&refused));
        assert!(!text(&refused).contains("password"), "{}", text(&refused));
    }
    assert_eq!(keys(url, &prefix), Vec::<String>::new());
}

#[test]
fn a_prefix_without_a_store_is_refused_and_nothing_is_written_on_one_server() {
    let test = "a_prefix_without_a_store_is_refused_and_nothing_is_written_on_one_server";
    let Some(url) = redis_url(test) else { return };
    refuses_a_prefix_without_a_store(&url);
}

#[test]
fn a_prefix_without_a_store_is_refused_and_nothing_is_written_on_a_cluster() {
    let test = "a_prefix_without_a_store_is_refused_and_nothing_is_written_on_a_cluster";
    let Some(url) = cluster_url(test) else { return };
    refuses_a_prefix_without_a_store(&url);
}

/// A server or cluster that does not answer is named in the one line that refuses it, and
/// a cluster URL with a database number is refused before anything is asked: it is read
/// as a Redis store, not as a file named like a URL.
#[test]
fn a_redis_url_that_names_no_store_is_refused() {
    for (url, says) in [
        ("redis://127.0.0.1:1/0", "Redis 127.0.0.1:1/0 (prefix idem): open: "),
        ("redis+cluster://127.0.0.1:1,127.0.0.1:2", "Redis 127.0.0.1:1,127.0.0.1:2 (prefix idem): open: "),
        ("redis+cluster://127.0.0.1:1/0", "a cluster has no database number to choose"),
    ] {
        let refused = idem(Path::new(url), &["list"], "");
        assert_eq!(refused.status.code(), Some(1), "{url}: {}", text(&refused));
        assert!(text(&refused).contains(says), "{url}: {}", text(&refused));
    }
}
