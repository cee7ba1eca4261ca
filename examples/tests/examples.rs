//! The examples run as the docs say and end with the article's counts (run here with short
//! delays). Each is one of this package's binaries, which cargo builds with this test and
//! the same features: a test runs only where its example was built by the same command.

use std::process::Command;

/// What an example printed, once it exited successfully.
fn succeeded(command: &mut Command) -> String {
    let output = command.output().expect("cargo builds the example's binary for this test");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "the example failed:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    stdout
}

#[test]
fn the_invoicing_demo_shows_three_invoices_then_one() {
    let output = Command::new(env!("CARGO_BIN_EXE_invoicing"))
        .env("IDEM_DEMO_DELAY_MS", "300")
        .env("IDEM_DEMO_PATIENCE_MS", "100")
        .output()
        .expect("cargo builds the example's binary for this test");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "the demo failed:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(
        stdout.lines().last(),
        Some("naive: 3 invoices, keyed: 1 invoice, matrix: 2 invoices (1 per period)"),
        "{stdout}"
    );
    // The fixed agent: it learns the status tool from the description idem wrote, and after
    // the timeout it calls that, never send_invoice again.
    let part2 = &stdout[stdout.find("== Part 2").expect("part 2")..stdout.find("== Part 3").expect("part 3")];
    assert!(part2.contains("call send_invoice_status with the same customer and period instead"), "{part2}");
    assert_eq!(part2.matches("tool call: send_invoice {").count(), 1, "{part2}");
    assert!(part2.contains("tool call: send_invoice_status {"), "{part2}");
}

#[cfg(feature = "metrics")]
#[test]
fn the_dashboard_example_counts_each_answer_once_and_sends_one_invoice_per_period() {
    // Plain text: with --all-features, ADK's adk-telemetry turns on tracing-subscriber's
    // `ansi` feature for every example, and the spans would be colored.
    let output = Command::new(env!("CARGO_BIN_EXE_dashboard"))
        .env("IDEM_DEMO_DELAY_MS", "300")
        .env("NO_COLOR", "1")
        .output()
        .expect("cargo builds the example's binary for this test");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "the example failed:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let series = |outcome: &str| {
        stdout
            .lines()
            .find(|line| line.starts_with("idem_calls{") && line.contains(&format!("idem_outcome=\"{outcome}\"")))
            .and_then(|line| line.rsplit(' ').next())
            .and_then(|count| count.parse::<u64>().ok())
    };
    assert_eq!(series("fresh"), Some(2), "one first call per period:\n{stdout}");
    assert_eq!(series("conflict"), Some(1), "{stdout}");
    let repeats = series("replayed").unwrap_or(0) + series("in_progress").unwrap_or(0);
    assert_eq!(repeats, 3, "the other three calls are repeats:\n{stdout}");
    assert!(stdout.contains("replay rate  50% (3 of 6 calls were repeats)"), "{stdout}");
    assert_eq!(stdout.lines().last(), Some("invoices sent: 2"), "{stdout}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("execute_tool send_invoice{"), "the spans are printed:\n{stderr}");
}

#[cfg(feature = "http")]
#[test]
fn the_provider_keys_example_ends_with_one_invoice_and_one_email() {
    let stdout = succeeded(&mut Command::new(env!("CARGO_BIN_EXE_provider_keys")));
    assert!(stdout.contains("provider requests: +0"), "idem answers the third call itself:\n{stdout}");
    assert!(stdout.contains("provider answered 422: Idempotency-Key is already used"), "{stdout}");
    assert_eq!(stdout.lines().last(), Some("the provider created 1 invoice and sent 1 e-mail"), "{stdout}");
}

#[cfg(feature = "http")]
#[test]
fn the_billing_service_example_creates_one_invoice_per_caller() {
    let stdout = succeeded(&mut Command::new(env!("CARGO_BIN_EXE_billing_service")));
    assert!(stdout.contains("-> 409 Retry-After: "), "a retry during the first request:\n{stdout}");
    assert!(stdout.contains("Idempotent-Replayed: true"), "{stdout}");
    assert!(stdout.contains("-> 422"), "{stdout}");
    assert_eq!(stdout.lines().last(), Some("invoices created: 2 (one per caller)"), "{stdout}");
}

#[cfg(feature = "adk")]
#[test]
fn the_adk_agent_example_sends_two_invoices_plain_and_one_keyed() {
    let stdout = succeeded(&mut Command::new(env!("CARGO_BIN_EXE_adk_agent")));
    assert!(stdout.contains(r#"\"code\":\"TIMEOUT\""#), "the model reads idem's TIMEOUT:\n{stdout}");
    assert!(stdout.contains(r#"\"code\":\"IN_PROGRESS\""#), "a new function call id is a repeat:\n{stdout}");
    assert!(stdout.contains(r#""status":"completed""#), "the status tool reads the result:\n{stdout}");
    assert_eq!(stdout.lines().last(), Some("plain: 2 invoices, keyed: 1 invoice"), "{stdout}");
}

#[cfg(feature = "rmcp")]
#[test]
fn the_mcp_server_demo_sends_one_invoice_and_makes_one_export_per_month() {
    let stdout = succeeded(Command::new(env!("CARGO_BIN_EXE_mcp_server")).arg("--demo"));
    assert!(stdout.contains("invoices sent: 1"), "{stdout}");
    assert!(stdout.contains("\"code\":\"TIMEOUT\""), "a client without tasks gets TIMEOUT:\n{stdout}");
    assert_eq!(stdout.lines().last(), Some("ledger exports made: 2 (one per month)"), "{stdout}");
}

/// What an MCP client shows for the server is the example's own name and version, not
/// rmcp's (which it reports for a `#[tool_handler]` without `name`): over stdio, from a
/// separate process, as a client starts it.
#[cfg(feature = "rmcp")]
#[test]
fn the_mcp_server_names_itself_to_clients() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;

    let dir = tempfile::tempdir().unwrap();
    let mut server = Command::new(env!("CARGO_BIN_EXE_mcp_server"))
        .env("IDEM_DB", dir.path().join("keys.db"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("cargo builds the example's binary for this test");
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"idem-test","version":"0"}}}"#;
    let mut stdin = server.stdin.take().unwrap();
    writeln!(stdin, "{initialize}").unwrap();
    let mut answer = String::new();
    BufReader::new(server.stdout.take().unwrap()).read_line(&mut answer).unwrap();
    drop(stdin); // end of input: the server exits
    let status = server.wait().unwrap();
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{e}: {answer:?}"));
    let info = &answer["result"]["serverInfo"];
    assert_eq!(info["name"], "idem-billing", "{answer}");
    assert_eq!(info["version"], env!("CARGO_PKG_VERSION"), "{answer}");
    assert!(status.success(), "the server ends cleanly with its input: {status}");
}

#[test]
fn the_approvals_example_asks_once_and_pays_once() {
    let stdout = succeeded(&mut Command::new(env!("CARGO_BIN_EXE_approvals")));
    assert_eq!(stdout.matches("[approvers' channel]").count(), 2, "one request per action:\n{stdout}");
    assert!(stdout.contains("attempt 6: Err(ApprovalRequired)"), "{stdout}");
    assert!(stdout.contains("the model calls again: DECLINED"), "{stdout}");
    assert!(stdout.contains("transfers: 2\n"), "acme once, initech once, globex never:\n{stdout}");
}

#[test]
fn the_refunds_example_stops_a_runaway_loop_at_its_budget() {
    let stdout = succeeded(&mut Command::new(env!("CARGO_BIN_EXE_refunds")));
    assert_eq!(stdout.matches("ok: re_1").count(), 3, "a retried refund replays:\n{stdout}");
    assert_eq!(stdout.matches("BUDGET_EXCEEDED").count(), 6, "five refunds and one credit refused:\n{stdout}");
    assert!(stdout.contains("budget refunds for acme: used 4 of 4"), "{stdout}");
    assert!(stdout.contains("budget refunded for acme: used 450 of 500"), "{stdout}");
    assert!(stdout.contains("paid back: 7\n"), "3 + 1 refunds, 2 credits, 1 for globex:\n{stdout}");
}

#[cfg(feature = "rmcp")]
#[test]
fn the_remote_mcp_demo_runs_two_workers_behind_one_address() {
    let stdout = succeeded(&mut Command::new(env!("CARGO_BIN_EXE_remote_mcp")));
    assert!(stdout.contains("refused"), "beta cannot read acme's task:\n{stdout}");
    assert_eq!(stdout.lines().last(), Some("effects: 3 invoices (acme c1, acme c2, beta c1), 1 export"), "{stdout}");
}

/// The descriptions a Python agent's client reads, through the Python MCP SDK (`mcp` on
/// PyPI) over stdio and over streamable HTTP: each keyed tool's text then idem's paragraph,
/// naming its status tool and the key's fields; the approval sentence only on the tool that
/// asks a person. The SDK's Python comes from IDEM_TEST_PYTHON (`bash .ci/python DIR`
/// prints one).
#[cfg(feature = "rmcp")]
mod python_sdk {
    use std::collections::HashMap;
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Child, Command, Stdio};

    const LISTER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/list_tools.py");

    /// The Python with the MCP SDK, or `None` after saying loudly that `test` is skipped.
    /// Under CI a missing one fails the test: CI must run them.
    fn python(test: &str) -> Option<String> {
        match std::env::var("IDEM_TEST_PYTHON") {
            Ok(python) if !python.is_empty() => Some(python),
            _ if std::env::var("CI").is_ok_and(|ci| !ci.is_empty() && ci != "false" && ci != "0") => {
                panic!(
                    "{test}: IDEM_TEST_PYTHON is not set under CI; CI must run the Python MCP SDK tests (see .ci/run)"
                )
            }
            _ => {
                let _ = writeln!(
                    std::io::stderr(),
                    "SKIPPED {test}: set IDEM_TEST_PYTHON to a Python with the MCP SDK (`bash .ci/python DIR` prints one)"
                );
                None
            }
        }
    }

    /// `{tool: description}` as the SDK lists them.
    fn listed(python: &str, args: &[&str]) -> HashMap<String, String> {
        let output = Command::new(python).arg(LISTER).args(args).output().expect("python runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "the SDK failed:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
        let last = stdout.lines().last().unwrap_or_default();
        serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {stdout}"))
    }

    fn says(description: &str, sentences: &[&str]) {
        for said in sentences {
            assert!(description.contains(said), "{said:?} in {description}");
        }
    }

    #[test]
    fn over_stdio_the_python_sdk_reads_the_paragraph() {
        let Some(python) = python("over_stdio_the_python_sdk_reads_the_paragraph") else { return };
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("keys.db");
        // The SDK starts the server with an environment of its own: a shell passes IDEM_DB.
        let server = format!("IDEM_DB='{}' exec '{}'", db.display(), env!("CARGO_BIN_EXE_mcp_server"));
        let tools = listed(&python, &["stdio", "sh", "-c", &server]);
        let send = &tools["send_invoice"];
        assert!(send.starts_with("Create and send the invoice for one customer and billing period.\n\n"), "{send}");
        says(
            send,
            &[
                "a repeat for the same customer and period never runs it twice",
                "A repeat with a different amount is refused with CONFLICT: ask the user.",
                "call send_invoice_status with the same customer and period instead of calling again.",
            ],
        );
        says(&tools["export_ledger"], &["call export_ledger_status with the same month"]);
        assert!(!send.contains("approval") && !send.contains("budget"), "{send}");
        says(&tools["send_invoice_status"], &["Read-only status of send_invoice", "customer, period"]);
    }

    /// A worker of the remote example, on a free port; killed when dropped.
    struct Worker(Child);

    impl Drop for Worker {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    /// The SDK's client and a raw JSON-RPC POST, over streamable HTTP.
    #[test]
    fn over_streamable_http_the_python_sdk_reads_the_paragraph() {
        let Some(python) = python("over_streamable_http_the_python_sdk_reads_the_paragraph") else { return };
        let dir = tempfile::tempdir().unwrap();
        let (db, effects) = (dir.path().join("keys.db"), dir.path().join("effects"));
        let mut worker = Worker(
            Command::new(env!("CARGO_BIN_EXE_remote_mcp"))
                .args(["serve", "--port", "0", "--db"])
                .arg(&db)
                .arg("--effects")
                .arg(&effects)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("cargo builds the example's binary for this test"),
        );
        let mut line = String::new();
        BufReader::new(worker.0.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let address = line.trim().strip_prefix("listening on ").unwrap_or_else(|| panic!("{line:?}"));
        let url = format!("http://{address}/mcp");
        let tools = listed(&python, &["http", &url, "acme-token"]);
        // A raw JSON-RPC client (one POST written by hand) reads the same descriptions.
        assert_eq!(listed(&python, &["raw-http", &url, "acme-token"]), tools, "the raw client and the SDK agree");
        says(
            &tools["send_invoice"],
            &[
                "a repeat for the same customer and period never runs it twice",
                "call send_invoice_status with the same customer and period",
            ],
        );
        assert!(!tools["send_invoice"].contains("approval"), "{}", tools["send_invoice"]);
        says(
            &tools["refund"],
            &[
                "a repeat for the same invoice never runs it twice",
                "It needs a person's approval when amount > 500.0: it then answers APPROVAL_REQUIRED, and \
                 refund_status shows the decision.",
            ],
        );
    }
}
