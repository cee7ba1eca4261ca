//! The command on a Redis store: what it lists and settles, and a URL or prefix that holds
//! no store, refused with nothing written.

use std::path::Path;
use std::time::Duration;

use idem_runtime::RedisStore;
use idem_runtime::store::{Completion, RecordId, RecordState, Reservation, Reserve, Store, block_on};

use super::{idem, text};

/// The test server's URL, or `None` after saying that `test` is skipped; under CI a
/// missing URL fails the test.
pub fn redis_url(test: &str) -> Option<String> {
    let url = std::env::var("IDEM_TEST_REDIS_URL").ok().filter(|url| !url.is_empty());
    if url.is_none() {
        if std::env::var("CI").is_ok_and(|ci| !ci.is_empty() && ci != "false" && ci != "0") {
            panic!("IDEM_TEST_REDIS_URL is not set under CI; CI must run the Redis tests");
        }
        eprintln!("SKIPPED {test}: set IDEM_TEST_REDIS_URL");
    }
    url
}

/// A key prefix no other store uses.
pub fn fresh_prefix() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("idem-cli-{}-{nanos}", std::process::id())
}

fn keys(url: &str, prefix: &str) -> Vec<String> {
    let mut connection = redis_client(url);
    let mut keys: Vec<String> = redis_cmd(&mut connection, &["KEYS", &format!("{prefix}*")]);
    keys.sort();
    keys
}

/// A raw connection to the server (the tests speak RESP themselves: no client crate to pin).
fn redis_client(url: &str) -> std::net::TcpStream {
    let address = url.trim_start_matches("redis://").split('/').next().unwrap().to_owned();
    std::net::TcpStream::connect(address).unwrap()
}

/// One command in RESP, its array-of-bulk-strings reply as text.
fn redis_cmd(stream: &mut std::net::TcpStream, args: &[&str]) -> Vec<String> {
    use std::io::{BufRead, BufReader, Write};
    let mut request = format!("*{}\r\n", args.len());
    for arg in args {
        request += &format!("${}\r\n{arg}\r\n", arg.len());
    }
    stream.write_all(request.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let count: usize = line.trim_start_matches('*').trim().parse().unwrap();
    (0..count)
        .map(|_| {
            let (mut length, mut value) = (String::new(), String::new());
            reader.read_line(&mut length).unwrap();
            reader.read_line(&mut value).unwrap();
            value.trim_end().to_owned()
        })
        .collect()
}

#[test]
fn lists_shows_and_settles_keys_on_redis() {
    let Some(url) = redis_url("lists_shows_and_settles_keys_on_redis") else { return };
    let prefix = fresh_prefix();
    let store = RedisStore::builder(&url).prefix(&prefix).build().unwrap();
    let id = |key| RecordId { namespace: "shop::pay", key };
    let reserve = |key| match block_on(store.reserve(Reserve { id: id(key), request: "{}", lease: Duration::ZERO })) {
        Ok(Reservation::Acquired { token }) => token,
        other => panic!("{other:?}"),
    };
    let done = reserve("pay:1");
    block_on(store.complete(id("pay:1"), done, Completion::Success("1"), Duration::from_secs(3600))).unwrap();
    reserve("pay:2");
    let db = Path::new(&url);
    let run = |args: &[&str]| idem(db, &[&["--prefix", prefix.as_str()], args].concat(), "");

    let listed = run(&["list", "--state", "abandoned"]);
    assert!(listed.status.success(), "{}", text(&listed));
    assert!(text(&listed).contains("pay:2") && !text(&listed).contains("pay:1"), "{}", text(&listed));
    let counted = run(&["--json", "count"]);
    assert!(text(&counted).contains(r#""state":"abandoned""#), "{}", text(&counted));
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
}

/// A prefix no tool wrote (a typo, another database number) is refused: the command
/// never writes to the server then, not even its marker.
#[test]
fn a_prefix_without_a_store_is_refused_and_nothing_is_written() {
    let Some(url) = redis_url("a_prefix_without_a_store_is_refused_and_nothing_is_written") else { return };
    let prefix = fresh_prefix();
    for args in [&["list"][..], &["purge"], &["resolve", "ns", "k", "--release", "--yes"]] {
        let refused = idem(Path::new(&url), &[&["--prefix", prefix.as_str()], args].concat(), "");
        assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
        assert!(text(&refused).contains("no idem store under the prefix"), "{}", text(&refused));
        assert!(!text(&refused).contains("password"), "{}", text(&refused));
    }
    assert_eq!(keys(&url, &prefix), Vec::<String>::new());
    let gone = idem(Path::new("redis://127.0.0.1:1/0"), &["list"], "");
    assert_eq!(gone.status.code(), Some(1));
    assert!(text(&gone).contains("Redis 127.0.0.1:1/0 (prefix idem): open: "), "{}", text(&gone));
}
