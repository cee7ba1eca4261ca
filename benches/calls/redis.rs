//! The Redis benches: the bench tool as an async tool on `RedisStore`, against the same
//! tool written by hand with redis-rs, on the server `IDEM_TEST_REDIS_URL` names and on the
//! cluster `IDEM_TEST_REDIS_CLUSTER_URL` names (each skipped without its variable). Both
//! sides run in tasks of one multi-threaded tokio runtime and talk to the same server (on
//! a cluster, the hand-written side's keys share one hash tag and it talks to the primary
//! that serves it: the least a cluster costs), so its persistence settings (reported)
//! apply to both alike.

use std::sync::Arc;

use idem::store::{RecordId, RedisStore, Reservation, Reserve, Store};
use redis::aio::MultiplexedConnection;

use super::Settings;
use super::hand::{answer_existing, store_error};
use super::harness::compare;
use super::report::{Report, Row, Target};
use super::tool::{
    AMOUNT, Args, AsyncTools, Check, Effects, Invoice, LONG_LEASE, NAMESPACE, PERIOD, REQUEST_JSON, ToolError, body,
    cycling, fresh, fresh_customers, idem_call, in_progress, replayed, reserve_in_progress, timed_task,
};

/// Where the benches find a server; the same variable as the Redis tests.
pub const URL_ENV: &str = "IDEM_TEST_REDIS_URL";
/// Where the benches find a cluster; the same variable as the Redis tests.
pub const CLUSTER_URL_ENV: &str = "IDEM_TEST_REDIS_CLUSTER_URL";

/// The same tool by hand with redis-rs on one multiplexed connection (driven by the
/// caller's runtime, as hand-written code opens it): a repeat is one `HMGET`; a first call
/// reserves with `HSETNX` (the key and the compared amount) and completes with `HSET`.
/// No lease, token, clock or expiry: the least that answers repeats.
pub struct HandRedis {
    connection: MultiplexedConnection,
    prefix: String,
    pub effects: Effects,
}

impl HandRedis {
    pub async fn send_invoice(
        &self,
        customer: String,
        period: String,
        amount: f64,
        memo: String,
    ) -> Result<Invoice, ToolError> {
        let key = format!("{}:invoice:{customer}:{period}", self.prefix);
        match self.existing(&key, amount).await {
            Some(answer) => answer,
            None => self.reserve_and_run(&key, &customer, &period, amount, &memo).await,
        }
    }

    pub async fn send_invoice_new(
        &self,
        customer: String,
        period: String,
        amount: f64,
        memo: String,
    ) -> Result<Invoice, ToolError> {
        let key = format!("{}:invoice:{customer}:{period}", self.prefix);
        self.reserve_and_run(&key, &customer, &period, amount, &memo).await
    }

    async fn reserve_and_run(
        &self,
        key: &str,
        customer: &str,
        period: &str,
        amount: f64,
        memo: &str,
    ) -> Result<Invoice, ToolError> {
        let mut connection = self.connection.clone();
        let reserved: i64 = redis::cmd("HSETNX")
            .arg(key)
            .arg("amount")
            .arg(amount)
            .query_async(&mut connection)
            .await
            .map_err(store_error)?;
        if reserved == 0 {
            return self.existing(key, amount).await.unwrap_or_else(|| Err(store_error("the record vanished")));
        }
        let invoice = body(&self.effects, customer, period, amount, memo);
        let json = serde_json::to_string(&invoice).map_err(store_error)?;
        redis::cmd("HSET").arg(key).arg("result").arg(json).exec_async(&mut connection).await.map_err(store_error)?;
        Ok(invoice)
    }

    /// The answer for a key that has a record: CONFLICT, IN_PROGRESS or the stored result.
    async fn existing(&self, key: &str, amount: f64) -> Option<Result<Invoice, ToolError>> {
        let mut connection = self.connection.clone();
        let found: Result<(Option<f64>, Option<String>), _> =
            redis::cmd("HMGET").arg(key).arg("amount").arg("result").query_async(&mut connection).await;
        match found {
            Ok((Some(stored), result)) => Some(answer_existing(stored, result.as_deref(), amount)),
            Ok((None, _)) => None,
            Err(error) => Some(Err(store_error(error))),
        }
    }
}

async fn hand_repeat(hand: Arc<HandRedis>, a: Args) -> Result<Invoice, ToolError> {
    hand.send_invoice(a.customer, a.period, a.amount, a.memo).await
}

async fn hand_first(hand: Arc<HandRedis>, a: Args) -> Result<Invoice, ToolError> {
    hand.send_invoice_new(a.customer, a.period, a.amount, a.memo).await
}

/// The Redis rows, on one server and on a cluster, or none (and a line saying why) without
/// their variables.
pub fn redis(settings: &Settings, report: &mut Report) {
    let mut servers = Vec::new();
    for (env, store_name) in [(URL_ENV, "Redis"), (CLUSTER_URL_ENV, "Redis Cluster")] {
        match std::env::var(env) {
            Ok(url) if !url.is_empty() => {
                servers.push(format!("{store_name}: {}", rows(settings, report, &url, store_name)))
            }
            _ => {
                eprintln!("{store_name}: skipped; set {env} to measure the Redis store there");
                report.skipped.push(if env == URL_ENV { "redis" } else { "redis cluster" });
            }
        }
    }
    if !servers.is_empty() {
        report.redis = Some(servers.join("; "));
    }
}

/// The node of `url` (`redis://` or `redis+cluster://`) that serves `tag`'s slot, as a
/// `redis://` URL: the one that does not answer `MOVED`.
async fn serving(url: &str, tag: &str) -> String {
    let Some(nodes) = url.strip_prefix("redis+cluster://") else { return url.to_owned() };
    for node in nodes.split(',') {
        let node = format!("redis://{node}");
        let mut connection =
            redis::Client::open(node.as_str()).unwrap().get_multiplexed_async_connection().await.unwrap();
        let probe: Result<i64, _> = redis::cmd("EXISTS").arg(format!("{tag}:probe")).query_async(&mut connection).await;
        if probe.is_ok() {
            return node;
        }
    }
    panic!("no node of {url} serves {tag}: the URL must name every primary");
}

/// One server's or cluster's rows; returns its persistence settings.
fn rows(settings: &Settings, report: &mut Report, url: &str, store_name: &'static str) -> String {
    // One worker: each side's task and its connection's driver share it, so the figures are the
    // code's and not where tokio placed the tasks (with two workers, each side's rounds jumped
    // between about 12 and 100 µs as the call and the driver landed on one thread or two).
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let prefix = format!("idem-bench-{}", std::process::id());
    let store = RedisStore::builder(url).prefix(&prefix).build().unwrap();
    // On a cluster the hand-written side's keys share one hash tag, so one node serves them.
    let hand_prefix = format!("{{{prefix}-hand}}");
    let (hand, server) = runtime.block_on(async {
        let node = serving(url, &hand_prefix).await;
        let client = redis::Client::open(node.as_str()).unwrap();
        let mut connection = client.get_multiplexed_async_connection().await.unwrap();
        let config: Vec<String> =
            redis::cmd("CONFIG").arg("GET").arg("append*").query_async(&mut connection).await.unwrap();
        let hand = HandRedis { connection, prefix: hand_prefix.clone(), effects: Effects::default() };
        (Arc::new(hand), config.chunks(2).map(|pair| pair.join("=")).collect::<Vec<_>>().join(", "))
    });
    let tools = Arc::new(AsyncTools::new(store));

    let pair = compare(
        settings.plan(200),
        |n| timed_task(&runtime, &tools, fresh_customers(n), idem_call, fresh),
        |n| timed_task(&runtime, &hand, fresh_customers(n), hand_first, fresh),
    );
    report.rows.push(Row {
        store: store_name,
        call: "first call",
        baseline: "redis-rs: HSETNX + HSET",
        pair,
        target: Target::None,
    });
    let idem_first_calls = tools.effects.total();
    assert_eq!(idem_first_calls, hand.effects.total(), "every first call runs its body once");

    let pool: Vec<String> = fresh_customers(settings.pool()).into_iter().map(|a| a.customer).collect();
    let busy: Vec<String> = (0..settings.pool()).map(|i| format!("busy{i}")).collect();
    runtime.block_on(async {
        for customer in &pool {
            let args = Args::new(customer.clone(), AMOUNT);
            fresh(&idem_call(Arc::clone(&tools), args.clone()).await);
            fresh(&hand_first(Arc::clone(&hand), args).await);
        }
        let mut connection = hand.connection.clone();
        for customer in &busy {
            let key = format!("{}:invoice:{customer}:{PERIOD}", hand.prefix);
            let _: i64 =
                redis::cmd("HSETNX").arg(key).arg("amount").arg(AMOUNT).query_async(&mut connection).await.unwrap();
        }
    });
    for customer in &busy {
        reserve_in_progress(&tools.store, customer);
    }
    for (call, keys, check) in [("replay", &pool, replayed as Check), ("in progress", &busy, in_progress as Check)] {
        let (mut a, mut b) = (0, 0);
        let pair = compare(
            settings.plan(500),
            |n| timed_task(&runtime, &tools, cycling(keys, &mut a, n, AMOUNT), idem_call, check),
            |n| timed_task(&runtime, &hand, cycling(keys, &mut b, n, AMOUNT), hand_repeat, check),
        );
        report.rows.push(Row { store: store_name, call, baseline: "redis-rs: HMGET", pair, target: Target::None });
    }
    let seeded = pool.len() as u64;
    assert_eq!(tools.effects.total(), idem_first_calls + seeded, "repeats must not run the body");
    if store_name == "Redis" {
        reads(settings, report, &runtime, (&tools, &hand), &busy, &prefix);
    }
    runtime.block_on(async {
        let nodes = url
            .strip_prefix("redis+cluster://")
            .map_or(vec![url.to_owned()], |nodes| nodes.split(',').map(|node| format!("redis://{node}")).collect());
        for node in nodes {
            let client = redis::Client::open(node.as_str()).unwrap();
            let mut connection = client.get_multiplexed_async_connection().await.unwrap();
            for pattern in [format!("{prefix}:*"), format!("{hand_prefix}:*")] {
                let keys: Vec<String> = redis::cmd("KEYS").arg(pattern).query_async(&mut connection).await.unwrap();
                for key in keys {
                    let _: i64 = redis::cmd("DEL").arg(key).query_async(&mut connection).await.unwrap();
                }
            }
        }
    });
    server
}

/// The fields the store reads a record from, as it asks for them (the store's own list is
/// not public).
const RECORD_FIELDS: [&str; 9] =
    ["state", "lease", "result", "progress", "token", "request", "created", "updated", "retain"];

/// The store's part of a repeat alone, on one server: `reserve` of an existing record (the
/// in-progress ones, whose keys the bench wrote as they are), which reads it (`TIME` and
/// `HMGET` of its fields, pipelined, after a stretch of repeats), against the same two
/// commands by hand on the same runtime, reading the same record (its key written out as
/// the store lays it out on one server): the same bytes from the server, so what this row
/// costs beyond its baseline is the store's own work around the read. What the tool's
/// repeat rows cost beyond this row is the call's.
fn reads(
    settings: &Settings,
    report: &mut Report,
    runtime: &tokio::runtime::Runtime,
    (tools, hand): (&Arc<AsyncTools<RedisStore>>, &Arc<HandRedis>),
    busy: &[String],
    prefix: &str,
) {
    let keys: Arc<Vec<String>> = Arc::new(busy.iter().map(|customer| format!("invoice:{customer}:{PERIOD}")).collect());
    let (mut a, mut b) = (0usize, 0usize);
    let pair = compare(
        settings.plan(500),
        |n| {
            let (tools, keys, start) = (Arc::clone(tools), Arc::clone(&keys), a);
            a += n;
            runtime
                .block_on(runtime.spawn(async move {
                    let began = std::time::Instant::now();
                    for i in start..start + n {
                        let id = RecordId { namespace: NAMESPACE, key: &keys[i % keys.len()] };
                        let found = tools.store.reserve(Reserve { id, request: REQUEST_JSON, lease: LONG_LEASE }).await;
                        assert!(matches!(found, Ok(Reservation::Existing(_))), "{found:?}");
                    }
                    began.elapsed()
                }))
                .unwrap()
        },
        |n| {
            let (hand, keys, start, prefix) = (Arc::clone(hand), Arc::clone(&keys), b, prefix.to_owned());
            b += n;
            runtime
                .block_on(runtime.spawn(async move {
                    let mut connection = hand.connection.clone();
                    let began = std::time::Instant::now();
                    for i in start..start + n {
                        let key = format!("{prefix}:r:{}:{NAMESPACE}:{}", NAMESPACE.len(), keys[i % keys.len()]);
                        let (time, record): ((i64, i64), Vec<Option<String>>) = redis::pipe()
                            .cmd("TIME")
                            .cmd("HMGET")
                            .arg(key)
                            .arg(&RECORD_FIELDS[..])
                            .query_async(&mut connection)
                            .await
                            .unwrap();
                        assert!(time.0 > 0 && record[0].as_deref() == Some("in_progress"), "{record:?}");
                    }
                    began.elapsed()
                }))
                .unwrap()
        },
    );
    let baseline = "redis-rs: TIME + HMGET of the same record";
    report.rows.push(Row {
        store: "Redis",
        call: "store.reserve alone, existing record",
        baseline,
        pair,
        target: Target::None,
    });
}
