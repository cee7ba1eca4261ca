//! The Redis benches: the bench tool as an async tool on `RedisStore`, against the same
//! tool written by hand with redis-rs, on the server `IDEM_TEST_REDIS_URL` names (skipped
//! without one). Both sides run in tasks of one multi-threaded tokio runtime and talk to
//! the same server, so its persistence settings (reported) apply to both alike.

use std::sync::Arc;

use idem::store::RedisStore;
use redis::aio::MultiplexedConnection;

use super::Settings;
use super::hand::{answer_existing, store_error};
use super::harness::compare;
use super::report::{Report, Row, Target};
use super::tool::{
    AMOUNT, Args, AsyncTools, Check, Effects, Invoice, PERIOD, ToolError, body, cycling, fresh, fresh_customers,
    idem_call, in_progress, replayed, reserve_in_progress, timed_task,
};

/// Where the benches find a server; the same variable as the Redis tests.
pub const URL_ENV: &str = "IDEM_TEST_REDIS_URL";

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

/// The Redis rows, or none (and a line saying why) without a server.
pub fn redis(settings: &Settings, report: &mut Report) {
    let url = match std::env::var(URL_ENV) {
        Ok(url) if !url.is_empty() => url,
        _ => {
            eprintln!("redis: skipped; set {URL_ENV}=redis://... to measure the Redis store");
            report.skipped.push("redis");
            return;
        }
    };
    // One worker: each side's task and its connection's driver share it, so the figures are the
    // code's and not where tokio placed the tasks (with two workers, each side's rounds jumped
    // between about 12 and 100 µs as the call and the driver landed on one thread or two).
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let prefix = format!("idem-bench-{}", std::process::id());
    let store = RedisStore::builder(&url).prefix(&prefix).build().unwrap();
    let (hand, server) = runtime.block_on(async {
        let client = redis::Client::open(url.as_str()).unwrap();
        let mut connection = client.get_multiplexed_async_connection().await.unwrap();
        let config: Vec<String> =
            redis::cmd("CONFIG").arg("GET").arg("append*").query_async(&mut connection).await.unwrap();
        let hand = HandRedis { connection, prefix: format!("{prefix}-hand"), effects: Effects::default() };
        (Arc::new(hand), config.chunks(2).map(|pair| pair.join("=")).collect::<Vec<_>>().join(", "))
    });
    report.redis = Some(server);
    let tools = Arc::new(AsyncTools::new(store));
    let store_name = "Redis";

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
    runtime.block_on(async {
        let mut connection = hand.connection.clone();
        for pattern in [format!("{prefix}:*"), format!("{prefix}-hand:*")] {
            let keys: Vec<String> = redis::cmd("KEYS").arg(pattern).query_async(&mut connection).await.unwrap();
            for key in keys {
                let _: i64 = redis::cmd("DEL").arg(key).query_async(&mut connection).await.unwrap();
            }
        }
    });
}
