//! What a dashboard shows after the article's five retry scenarios: idem's telemetry
//! wired to `tracing-subscriber` (each call's `execute_tool` span, on stderr) and to a
//! Prometheus exporter through the `metrics` facade (the page a scraper reads, on stdout),
//! then calls per outcome and the replay rate.
//!
//! ```sh
//! cargo run --bin dashboard --features metrics
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use idem::telemetry::Outcome;
use idem::telemetry::conventions::DURATION_METRIC;
use idem::testing::matrix::RetryMatrix;
use idem::{MemoryStore, idempotent};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use tracing_subscriber::fmt::format::FmtSpan;

static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);

/// The invoices the provider sent, by period.
static SENT: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// How long the provider takes, longer than the caller waits (`PATIENCE`).
static SLOW_MS: AtomicUsize = AtomicUsize::new(300);
const PATIENCE: Duration = Duration::from_millis(150);

#[derive(Clone)]
struct InvoiceArgs {
    customer: &'static str,
    period: &'static str,
    amount_cents: u64,
    memo: &'static str,
}

/// Create and send the invoice for one customer and billing period.
#[idempotent(key = "invoice:<customer>:<period>", compare = [amount_cents], store = *STORE)]
fn send_invoice(customer: &str, period: &str, amount_cents: u64, memo: &str) -> Result<String, idem::Error> {
    std::thread::sleep(Duration::from_millis(SLOW_MS.load(Ordering::Relaxed) as u64));
    SENT.lock().unwrap().push(period.to_owned());
    Ok(format!("inv-{customer}-{period} ({amount_cents} cents, {memo})"))
}

fn main() {
    // Spans on stderr, each printed when it closes with its fields and timing.
    tracing_subscriber::fmt().with_writer(std::io::stderr).with_span_events(FmtSpan::CLOSE).with_target(false).init();
    let prometheus = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Full(DURATION_METRIC.to_owned()), &[0.001, 0.01, 0.1, 0.5, 1.0, 5.0])
        .expect("the buckets are not empty")
        .install_recorder()
        .expect("no other recorder is installed");
    idem::telemetry::describe_metrics();
    if let Some(ms) = std::env::var("IDEM_DEMO_DELAY_MS").ok().and_then(|ms| ms.parse().ok()) {
        SLOW_MS.store(ms, Ordering::Relaxed);
    }

    let args = |period, amount_cents, memo| InvoiceArgs { customer: "acme", period, amount_cents, memo };
    let matrix = RetryMatrix {
        first: args("2026-10", 12_000, "October support"),
        reworded: args("2026-10", 12_000, "Support, October 2026"),
        changed: args("2026-10", 15_000, "October support"),
        other: args("2026-11", 12_000, "November support"),
        patience: PATIENCE,
    };
    let sent = |a: &InvoiceArgs| SENT.lock().unwrap().iter().filter(|period| *period == a.period).count();
    let report = matrix.run(|a| send_invoice(a.customer, a.period, a.amount_cents, a.memo), sent);
    report.check().expect("every scenario got the answer an idempotent tool must give");

    println!("== what Prometheus scrapes (idem's series) ==");
    let page = prometheus.render();
    let ours = |line: &&str| line.contains("idem_") || line.contains("gen_ai_execute_tool");
    let idem_lines = page.lines().filter(ours).filter(|line| !line.contains("_bucket"));
    for line in idem_lines {
        println!("{line}");
    }

    println!("\n== the dashboard ==");
    for tool in idem::telemetry::metrics().into_iter().filter(|tool| tool.tool == "send_invoice") {
        let total = tool.total();
        for (outcome, count) in tool.counts().filter(|(_, count)| *count > 0) {
            println!("{:<12} {count}", outcome.as_str());
        }
        let repeats = tool.count(Outcome::Replayed) + tool.count(Outcome::InProgress);
        println!("calls        {total}");
        // The article's early warning: repeats answered from the store, per call.
        println!(
            "replay rate  {:.0}% ({repeats} of {total} calls were repeats)",
            100.0 * repeats as f64 / total as f64
        );
    }
    println!("invoices sent: {}", SENT.lock().unwrap().len());
}
