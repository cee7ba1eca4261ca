//! The PostgreSQL benches: the bench tool as an async tool on `PgStore`, against the same
//! tool written by hand with tokio-postgres, on the server `IDEM_TEST_DATABASE_URL` names
//! (skipped without one). Both sides run in tasks of one multi-threaded tokio runtime, as a
//! server's tool calls do, and talk to the same server, so its durability settings apply
//! to both alike.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use idem::store::{PgStore, RecordId, Reservation, Reserve, Store};
use tokio_postgres::{Client, NoTls, Statement};

use super::Settings;
use super::hand::{HandSchema, answer_existing, store_error};
use super::harness::compare;
use super::report::{Report, Row, Target};
use super::tool::{
    AMOUNT, Args, AsyncTools, Check, Effects, Invoice, LONG_LEASE, NAMESPACE, OTHER_AMOUNT, PERIOD, REQUEST_JSON,
    ToolError, body, conflict, cycling, fresh, fresh_customers, idem_budgeted_call, idem_call, in_progress, replayed,
    reserve_in_progress, timed_task,
};

/// Where the benches find a server; the same variable as the PostgreSQL tests.
pub const URL_ENV: &str = "IDEM_TEST_DATABASE_URL";

/// The same tool by hand with tokio-postgres, one connection, statements prepared once:
/// `send_invoice` answers a repeat with one SELECT; `send_invoice_new` is the first-call
/// path alone (INSERT .. ON CONFLICT DO NOTHING to reserve, UPDATE to complete). With
/// [`HandSchema::IdemLike`] the table is idem's own `idem_records` (its token sequence,
/// timestamps and retention index; the hand-written keys are not escaped, so they never
/// meet idem's) and the statements write what idem's write, as plain INSERT and UPDATE.
pub struct HandPg {
    client: Client,
    reserve: Statement,
    complete: Statement,
    select: Statement,
    pub effects: Effects,
}

impl HandPg {
    /// Connects, creates its table in `schema` (which exists) and prepares the statements.
    /// The connection is driven by a task of the caller's runtime, as hand-written code
    /// spawns it (and as `PgStore` does for async tools on a multi-threaded runtime).
    async fn open(url: &str, schema: &str, table: HandSchema) -> Self {
        let (client, connection) = tokio_postgres::connect(url, NoTls).await.unwrap();
        tokio::spawn(connection);
        let (reserve, complete, select) = match table {
            HandSchema::Minimal => {
                let table = format!("{schema}.hand_invoices");
                let create =
                    format!("CREATE TABLE {table} (key text PRIMARY KEY, amount float8 NOT NULL, result text)");
                client.batch_execute(&create).await.unwrap();
                (
                    format!("INSERT INTO {table} (key, amount) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING"),
                    format!("UPDATE {table} SET result = $2 WHERE key = $1"),
                    format!("SELECT amount, result FROM {table} WHERE key = $1"),
                )
            }
            HandSchema::IdemLike => {
                let (table, now) = (format!("{schema}.idem_records"), "date_trunc('milliseconds', now())");
                let namespace = format!("'{NAMESPACE}'");
                (
                    format!(
                        "INSERT INTO {table} (namespace, key, state, request, created_at, updated_at, lease_until) \
                         VALUES ({namespace}, $1, 'in_progress', $2::float8::text, {now}, {now}, \
                         {now} + interval '1 hour') ON CONFLICT (namespace, key) DO NOTHING"
                    ),
                    format!(
                        "UPDATE {table} SET state = 'completed', result = $2, updated_at = {now}, lease_until = NULL, \
                         retain_until = {now} + interval '7 days' WHERE namespace = {namespace} AND key = $1"
                    ),
                    format!(
                        "SELECT request::float8, result FROM {table} \
                         WHERE namespace = {namespace} AND key = $1"
                    ),
                )
            }
        };
        let (reserve, complete, select) = (
            client.prepare(&reserve).await.unwrap(),
            client.prepare(&complete).await.unwrap(),
            client.prepare(&select).await.unwrap(),
        );
        HandPg { client, reserve, complete, select, effects: Effects::default() }
    }

    pub async fn send_invoice(
        &self,
        customer: String,
        period: String,
        amount: f64,
        memo: String,
    ) -> Result<Invoice, ToolError> {
        let key = format!("invoice:{customer}:{period}");
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
        let key = format!("invoice:{customer}:{period}");
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
        if self.client.execute(&self.reserve, &[&key, &amount]).await.map_err(store_error)? == 0 {
            let existing = self.existing(key, amount).await;
            return existing.unwrap_or_else(|| Err(store_error("the record vanished")));
        }
        let invoice = body(&self.effects, customer, period, amount, memo);
        let json = serde_json::to_string(&invoice).map_err(store_error)?;
        self.client.execute(&self.complete, &[&key, &json]).await.map_err(store_error)?;
        Ok(invoice)
    }

    /// The answer for a key that has a record: CONFLICT, IN_PROGRESS or the stored result.
    async fn existing(&self, key: &str, amount: f64) -> Option<Result<Invoice, ToolError>> {
        match self.client.query_opt(&self.select, &[&key]).await {
            Ok(row) => row.map(|row| answer_existing(row.get(0), row.get(1), amount)),
            Err(error) => Some(Err(store_error(error))),
        }
    }

    async fn reserve_only(&self, customer: &str) {
        let key = format!("invoice:{customer}:{PERIOD}");
        assert_eq!(self.client.execute(&self.reserve, &[&key, &AMOUNT]).await.unwrap(), 1);
    }
}

async fn hand_repeat(hand: Arc<HandPg>, a: Args) -> Result<Invoice, ToolError> {
    hand.send_invoice(a.customer, a.period, a.amount, a.memo).await
}

async fn hand_first(hand: Arc<HandPg>, a: Args) -> Result<Invoice, ToolError> {
    hand.send_invoice_new(a.customer, a.period, a.amount, a.memo).await
}

/// The server's durability settings, for the report: `fsync` and `synchronous_commit`.
async fn durability(client: &Client) -> String {
    let setting = |name: &'static str| async move {
        let row = client.query_one(&format!("SHOW {name}"), &[]).await.unwrap();
        row.get::<_, String>(0)
    };
    format!("fsync={}, synchronous_commit={}", setting("fsync").await, setting("synchronous_commit").await)
}

/// The PostgreSQL rows, or none (and a line saying why) without a server.
pub fn postgres(settings: &Settings, report: &mut Report) {
    let url = match std::env::var(URL_ENV) {
        Ok(url) if !url.is_empty() => url,
        _ => {
            eprintln!("postgres: skipped; set {URL_ENV}=postgres://... to measure the PostgreSQL store");
            report.skipped.push("postgres");
            return;
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let schema = format!("idem_bench_{}", std::process::id());
    let store = PgStore::builder(&url).schema(&schema).build().unwrap();
    let (hands, admin, server) = runtime.block_on(async {
        store.migrate().await.unwrap();
        let hands = [
            HandPg::open(&url, &schema, HandSchema::Minimal).await,
            HandPg::open(&url, &schema, HandSchema::IdemLike).await,
        ];
        let (admin, connection) = tokio_postgres::connect(&url, NoTls).await.unwrap();
        tokio::spawn(connection);
        let server = durability(&admin).await;
        (hands.map(Arc::new), admin, server)
    });
    report.postgres = Some(server);
    let tools = Arc::new(AsyncTools::new(store));
    let [hand, like] = &hands;
    let store_name = "PostgreSQL";

    // First calls against the minimal table, then against idem's table written with plain
    // statements: what the schema costs apart from idem's statements and code.
    let firsts: [(&str, &Arc<HandPg>, &str, Target); 2] = [
        ("first call", hand, "tokio-postgres: INSERT + UPDATE", Target::RatioAtMost(1.2)),
        ("first call, same schema", like, "tokio-postgres: INSERT + UPDATE, idem's table", Target::None),
    ];
    for (call, side, baseline, target) in firsts {
        let pair = compare(
            settings.plan(200),
            |n| timed_task(&runtime, &tools, fresh_customers(n), idem_call, fresh),
            |n| timed_task(&runtime, side, fresh_customers(n), hand_first, fresh),
        );
        report.rows.push(Row { store: store_name, call, baseline, pair, target });
    }
    let hand_first_calls = hands.each_ref().map(|h| h.effects.total());
    assert_eq!(tools.effects.total(), hand_first_calls.iter().sum::<u64>(), "every first call runs its body once");

    // A budget's own cost: the same tool with one, against it without (one statement each).
    let (before, mut with, mut without) = (tools.effects.total(), 0, 0);
    let pair = compare(
        settings.plan(200),
        |n| {
            with += n as u64;
            timed_task(&runtime, &tools, fresh_customers(n), idem_budgeted_call, fresh)
        },
        |n| {
            without += n as u64;
            timed_task(&runtime, &tools, fresh_customers(n), idem_call, fresh)
        },
    );
    let baseline = "idem, the same tool without a budget";
    report.rows.push(Row { store: store_name, call: "first call with a budget", baseline, pair, target: Target::None });
    assert_eq!(tools.effects.total() - before, with + without, "every first call runs its body once");

    // Replays charge nothing: with a budget they should cost what they cost without one.
    let budgeted: Vec<String> = fresh_customers(settings.pool()).into_iter().map(|a| a.customer).collect();
    runtime.block_on(async {
        for customer in &budgeted {
            let args = Args::new(customer.clone(), AMOUNT);
            fresh(&idem_budgeted_call(Arc::clone(&tools), args.clone()).await);
            fresh(&idem_call(Arc::clone(&tools), args).await);
        }
    });
    let settled = tools.effects.total();
    let (mut a, mut b) = (0, 0);
    let pair = compare(
        settings.plan(500),
        |n| timed_task(&runtime, &tools, cycling(&budgeted, &mut a, n, AMOUNT), idem_budgeted_call, replayed),
        |n| timed_task(&runtime, &tools, cycling(&budgeted, &mut b, n, AMOUNT), idem_call, replayed),
    );
    report.rows.push(Row { store: store_name, call: "replay with a budget", baseline, pair, target: Target::None });
    assert_eq!(tools.effects.total(), settled, "replays must not run the body");
    let idem_first_calls = tools.effects.total();

    let pool: Vec<String> = fresh_customers(settings.pool()).into_iter().map(|a| a.customer).collect();
    let busy: Vec<String> = (0..settings.pool()).map(|i| format!("busy{i}")).collect();
    runtime.block_on(async {
        for customer in &pool {
            let args = Args::new(customer.clone(), AMOUNT);
            fresh(&idem_call(Arc::clone(&tools), args.clone()).await);
            fresh(&hand_first(Arc::clone(hand), args.clone()).await);
            fresh(&hand_first(Arc::clone(like), args).await);
        }
        for customer in &busy {
            hand.reserve_only(customer).await;
        }
    });
    for customer in &busy {
        reserve_in_progress(&tools.store, customer);
    }
    /// One repeat bench: which keys, which amount, what must come back, against which side.
    struct Repeat<'a> {
        call: &'static str,
        keys: &'a [String],
        amount: f64,
        check: Check,
        side: &'a Arc<HandPg>,
        baseline: &'static str,
        target: Target,
    }
    let select = "tokio-postgres: SELECT";
    let repeats = [
        Repeat {
            call: "replay",
            keys: &pool,
            amount: AMOUNT,
            check: replayed,
            side: hand,
            baseline: select,
            target: Target::RatioAtMost(1.2),
        },
        Repeat {
            call: "replay, same schema",
            keys: &pool,
            amount: AMOUNT,
            check: replayed,
            side: like,
            baseline: "tokio-postgres: SELECT, idem's table",
            target: Target::None,
        },
        Repeat {
            call: "in progress",
            keys: &busy,
            amount: AMOUNT,
            check: in_progress,
            side: hand,
            baseline: select,
            target: Target::None,
        },
        Repeat {
            call: "conflict",
            keys: &pool,
            amount: OTHER_AMOUNT,
            check: conflict,
            side: hand,
            baseline: select,
            target: Target::None,
        },
    ];
    for Repeat { call, keys, amount, check, side, baseline, target } in repeats {
        let (mut a, mut b) = (0, 0);
        let pair = compare(
            settings.plan(500),
            |n| timed_task(&runtime, &tools, cycling(keys, &mut a, n, amount), idem_call, check),
            |n| timed_task(&runtime, side, cycling(keys, &mut b, n, amount), hand_repeat, check),
        );
        report.rows.push(Row { store: store_name, call, baseline, pair, target });
    }
    // The store's reservation alone on an existing record (the statement a replay runs and
    // its decoding), against the same SELECT: which part of a replay's gap is the store's,
    // and which the call path's around it.
    let ids: Arc<Vec<String>> = Arc::new(busy.iter().map(|customer| format!("invoice:{customer}:{PERIOD}")).collect());
    let (mut a, mut b) = (0usize, 0usize);
    let pair = compare(
        settings.plan(500),
        |n| {
            let (tools, ids) = (Arc::clone(&tools), Arc::clone(&ids));
            let start = a;
            a += n;
            runtime
                .block_on(runtime.spawn(async move {
                    let started = Instant::now();
                    for i in start..start + n {
                        let id = RecordId { namespace: NAMESPACE, key: &ids[i % ids.len()] };
                        let found = tools.store.reserve(Reserve { id, request: REQUEST_JSON, lease: LONG_LEASE });
                        assert!(matches!(black_box(found.await), Ok(Reservation::Existing(_))));
                    }
                    started.elapsed()
                }))
                .unwrap()
        },
        |n| timed_task(&runtime, hand, cycling(&busy, &mut b, n, AMOUNT), hand_repeat, in_progress),
    );
    report.rows.push(Row {
        store: store_name,
        call: "store.reserve alone, existing record",
        baseline: select,
        pair,
        target: Target::None,
    });
    let seeded = pool.len() as u64;
    assert_eq!(tools.effects.total(), idem_first_calls + seeded, "repeats must not run the body");
    assert_eq!(hand.effects.total(), hand_first_calls[0] + seeded);
    assert_eq!(like.effects.total(), hand_first_calls[1] + seeded);
    drop(hands);
    runtime.block_on(admin.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))).unwrap();
}
