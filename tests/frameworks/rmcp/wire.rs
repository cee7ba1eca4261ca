//! Approvals in the client over the wire: newline-delimited JSON-RPC written by hand to the
//! stdio of a real server process (this test binary, started again as an MCP server on an
//! SQLite file the test also opens, as an operator would), so that nothing of rmcp's client
//! shapes what the server receives. A client may send anything: an answer counts only as
//! the answer to a question the server asked, a question asked during a call is withdrawn
//! (`notifications/cancelled`) when the call stops waiting for it, and an answer that does
//! not read is refused.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use idem::store::RecordId;
use idem::{SqliteStore, idempotent};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{ErrorData, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde_json::{Value, json};

use super::questions::Payment;

/// The directory of the store and the effects file, for a server started as a child.
const DIR_ENV: &str = "IDEM_TEST_WIRE_DIR";
/// The tenant the child server serves.
const TENANT_ENV: &str = "IDEM_TEST_WIRE_TENANT";
/// The longest the test waits for any one message: the waits it checks are seconds.
const PATIENCE: Duration = Duration::from_secs(30);
const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";

/// The payments server of one tenant: the effect of a payment is a line in `effects`.
#[derive(Clone)]
struct Till {
    store: Arc<SqliteStore>,
    tenant: String,
    effects: PathBuf,
}

impl Till {
    fn pay_now(&self, req: &Payment) -> Result<CallToolResult, ErrorData> {
        let mut effects = std::fs::OpenOptions::new().create(true).append(true).open(&self.effects).unwrap();
        writeln!(effects, "{} {} {}", self.tenant, req.supplier, req.amount).unwrap();
        Ok(CallToolResult::structured(json!({"paid": req.supplier, "amount": req.amount})))
    }
}

#[idem::status_tools]
#[tool_router]
impl Till {
    /// Pay a supplier. Needs a person's approval above 1,000 EUR.
    #[idempotent(
        key = "pay:<req.supplier>",
        compare = [req.amount],
        approval(when = req.amount > 1000.0, text = "pay <req.supplier> <req.amount> EUR"),
        scope = self.tenant,
        store = *self.store
    )]
    #[tool]
    async fn pay(&self, Parameters(req): Parameters<Payment>) -> Result<CallToolResult, ErrorData> {
        self.pay_now(&req)
    }

    /// Pay a supplier. Needs a person's approval above 1,000 EUR, within two seconds.
    #[idempotent(
        key = "pay:<req.supplier>",
        compare = [req.amount],
        approval(when = req.amount > 1000.0, text = "pay <req.supplier> <req.amount> EUR", ttl = "2s"),
        scope = self.tenant,
        store = *self.store
    )]
    #[tool]
    async fn pay_briefly(&self, Parameters(req): Parameters<Payment>) -> Result<CallToolResult, ErrorData> {
        self.pay_now(&req)
    }

    /// Pay a supplier. Needs a person's approval above 1,000 EUR; a call answers within a
    /// second.
    #[idempotent(
        key = "pay:<req.supplier>",
        compare = [req.amount],
        approval(when = req.amount > 1000.0, text = "pay <req.supplier> <req.amount> EUR"),
        timeout = "1s",
        scope = self.tenant,
        store = *self.store
    )]
    #[tool]
    async fn pay_promptly(&self, Parameters(req): Parameters<Payment>) -> Result<CallToolResult, ErrorData> {
        self.pay_now(&req)
    }
}

#[tool_handler]
#[idem::tasks]
impl ServerHandler for Till {}

/// The server, as the child process runs it: MCP on stdin and stdout until stdin closes.
#[test]
#[ignore = "the server the wire tests start as a child process"]
fn wire_server() {
    let (Ok(dir), Ok(tenant)) = (std::env::var(DIR_ENV), std::env::var(TENANT_ENV)) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let store = Arc::new(SqliteStore::open(dir.join("idem.db")).unwrap());
    let till = Till { store, tenant, effects: dir.join("effects") };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let server = till.serve(rmcp::transport::stdio()).await.expect("the server starts");
        let _ = server.waiting().await;
    });
}

/// A client that writes JSON-RPC by hand to a server process and reads what it sends back.
struct Wire {
    child: Child,
    stdin: ChildStdin,
    incoming: Receiver<Value>,
    /// Messages read while looking for another, in the order they came.
    seen: Vec<Value>,
    next_id: u64,
    /// MCP 2026-07-28: each request says who asks (no `initialize`).
    modern: bool,
    capabilities: Value,
}

impl Wire {
    /// A server of `tenant` on the store in `dir`, and a client that declares
    /// `capabilities`, of MCP 2026-07-28 when `modern` (else initialized as 2025-11-25).
    fn start(dir: &Path, tenant: &str, modern: bool, capabilities: Value) -> Wire {
        let mut child = Command::new(std::env::current_exe().unwrap())
            // `-q`: the harness writes to stdout too, but not on the lines the server writes.
            .args([
                &crate::support::test_name(module_path!(), "wire_server"),
                "--exact",
                "--ignored",
                "-q",
                "--test-threads=1",
            ])
            .env(DIR_ENV, dir)
            .env(TENANT_ENV, tenant)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (sender, incoming) = channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { return };
                // The harness's own lines ("running 1 test") are not JSON-RPC.
                if let Ok(message) = serde_json::from_str::<Value>(&line)
                    && sender.send(message).is_err()
                {
                    return;
                }
            }
        });
        let mut wire = Wire { child, stdin, incoming, seen: Vec::new(), next_id: 0, modern, capabilities };
        if !modern {
            let init = json!({
                "protocolVersion": LEGACY,
                "capabilities": wire.capabilities,
                "clientInfo": {"name": "raw-json-rpc", "version": "0"},
            });
            let id = wire.request("initialize", init);
            let answer = wire.response(id);
            assert!(answer.get("result").is_some(), "initialized: {answer}");
            wire.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        }
        wire
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").and_then(|()| self.stdin.flush()).expect("the server reads");
    }

    /// Sends a request; its id.
    fn request(&mut self, method: &str, mut params: Value) -> u64 {
        self.next_id += 1;
        if self.modern {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientInfo": {"name": "raw-json-rpc", "version": "0"},
                "io.modelcontextprotocol/clientCapabilities": self.capabilities,
            });
        }
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The first message `wanted` accepts, among those seen or to come.
    fn find(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        if let Some(at) = self.seen.iter().position(&wanted) {
            return self.seen.remove(at);
        }
        let deadline = Instant::now() + PATIENCE;
        loop {
            match self.incoming.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(message) if wanted(&message) => return message,
                Ok(message) => self.seen.push(message),
                Err(RecvTimeoutError::Timeout) => panic!("no {what} within {PATIENCE:?}; seen: {:?}", self.seen),
                Err(RecvTimeoutError::Disconnected) => panic!("the server exited before {what}; seen: {:?}", self.seen),
            }
        }
    }

    /// The response to request `id`.
    fn response(&mut self, id: u64) -> Value {
        self.find(&format!("response to {id}"), |message| {
            message.get("id") == Some(&json!(id)) && message.get("method").is_none()
        })
    }

    /// The result of `tools/call` of `tool` with `args` (and an answer, and its state).
    fn call(&mut self, tool: &str, args: Value, (responses, state): (Option<Value>, Option<&str>)) -> Value {
        let mut params = json!({"name": tool, "arguments": args});
        if let Some(responses) = responses {
            params["inputResponses"] = responses;
        }
        if let Some(state) = state {
            params["requestState"] = json!(state);
        }
        let id = self.request("tools/call", params);
        self.response(id)
    }

    /// A request the server sent (`elicitation/create`).
    fn server_request(&mut self, method: &str) -> Value {
        self.find(method, |message| message["method"] == method && message.get("id").is_some())
    }

    /// The `notifications/cancelled` for the server's request `id`.
    fn withdrawn(&mut self, id: &Value) -> Value {
        self.find("notifications/cancelled", |message| {
            message["method"] == "notifications/cancelled" && message["params"]["requestId"] == *id
        })
    }
}

impl Drop for Wire {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn elicits() -> Value {
    json!({"elicitation": {"form": {}}})
}

fn payment(supplier: &str) -> Value {
    json!({"supplier": supplier, "amount": 2000.0})
}

fn accept() -> Value {
    json!({"idem.approval": {"action": "accept", "content": {}}})
}

/// The structured content of a tool result.
fn structured(response: &Value) -> &Value {
    let result = &response["result"];
    assert_ne!(result["resultType"], "input_required", "a tool result expected: {response}");
    &result["structuredContent"]
}

/// The approval question of an `input_required` result, and its state.
fn question(response: &Value) -> String {
    let result = &response["result"];
    assert_eq!(result["resultType"], "input_required", "the question expected: {response}");
    let asked = &result["inputRequests"]["idem.approval"];
    assert_eq!(asked["method"], "elicitation/create", "{response}");
    assert!(asked["params"]["message"].as_str().unwrap().contains("EUR"), "{response}");
    result["requestState"].as_str().expect("a requestState with the question").to_owned()
}

/// The payments made, per line: "tenant supplier amount".
fn effects(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("effects"))
        .map(|text| text.lines().map(str::to_owned).collect())
        .unwrap_or_default()
}

fn status(wire: &mut Wire, tool: &str, supplier: &str) -> Value {
    let answer = wire.call(&format!("{tool}_status"), json!({"supplier": supplier}), (None, None));
    structured(&answer)["status"].clone()
}

#[test]
fn an_answer_counts_only_with_the_state_of_the_question_asked() {
    let dir = tempfile::tempdir().unwrap();
    let mut acme = Wire::start(dir.path(), "acme", true, elicits());
    let mut globex = Wire::start(dir.path(), "globex", true, elicits());

    // The first call brings its own acceptance: it is asked the question, nothing runs.
    let asked = acme.call("pay", payment("p1"), (Some(accept()), None));
    let state = question(&asked);
    assert_eq!(status(&mut acme, "pay", "p1"), "awaiting_approval");
    // Another tenant's question for the same business key, and another action's question.
    let theirs = question(&globex.call("pay", payment("p1"), (None, None)));
    let other = question(&acme.call("pay", payment("p2"), (None, None)));
    assert_ne!(theirs, state, "a question of one tenant is not another's");
    // The state with its last character changed.
    let forged = format!("{}{}", &state[..state.len() - 1], if state.ends_with('A') { 'B' } else { 'A' });
    for wrong in [theirs.as_str(), other.as_str(), forged.as_str(), "", "idem2.approval.AAAAAAAAAAAAAAAAAAAAAA"] {
        let again = acme.call("pay", payment("p1"), (Some(accept()), Some(wrong)));
        assert_eq!(question(&again), state, "{wrong:?}: asked again, the same request");
    }
    // Acme's answer, sent to globex's server: not globex's question.
    let crossed = globex.call("pay", payment("p1"), (Some(accept()), Some(&state)));
    assert_eq!(question(&crossed), theirs);
    assert_eq!(status(&mut acme, "pay", "p1"), "awaiting_approval");
    assert_eq!(status(&mut globex, "pay", "p1"), "awaiting_approval");
    assert_eq!(effects(dir.path()), Vec::<String>::new(), "nothing ran");

    // The answer to the question asked, with its state, counts: once, for this tenant.
    let paid = acme.call("pay", payment("p1"), (Some(accept()), Some(&state)));
    assert_eq!(structured(&paid)["paid"], "p1", "{paid}");
    assert_eq!(effects(dir.path()), ["acme p1 2000"]);
    assert_eq!(status(&mut globex, "pay", "p1"), "awaiting_approval");
}

#[test]
fn an_answer_to_no_question_without_elicitation_is_approval_required() {
    let dir = tempfile::tempdir().unwrap();
    for (modern, supplier) in [(true, "n1"), (false, "n2")] {
        let mut wire = Wire::start(dir.path(), "acme", modern, json!({}));
        for state in [None, Some("idem2.approval.AAAAAAAAAAAAAAAAAAAAAA")] {
            let answer = wire.call("pay", payment(supplier), (Some(accept()), state));
            assert_eq!(structured(&answer)["error"]["code"], "APPROVAL_REQUIRED", "{answer}");
        }
        assert_eq!(status(&mut wire, "pay", supplier), "awaiting_approval");
    }
    assert_eq!(effects(dir.path()), Vec::<String>::new());
}

#[test]
fn a_question_asked_during_the_call_is_withdrawn_when_the_call_stops_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let mut wire = Wire::start(dir.path(), "acme", false, elicits());

    // Nobody answers: after the tool's `timeout` the call answers, the request still waits.
    let id = wire.request("tools/call", json!({"name": "pay_promptly", "arguments": payment("w1")}));
    let asked = wire.server_request("elicitation/create");
    let answer = wire.response(id);
    assert_eq!(structured(&answer)["error"]["code"], "APPROVAL_REQUIRED", "{answer}");
    let cancelled = wire.withdrawn(&asked["id"]);
    assert!(cancelled["params"]["reason"].as_str().is_some_and(|reason| !reason.is_empty()), "{cancelled}");
    assert_eq!(status(&mut wire, "pay_promptly", "w1"), "awaiting_approval");

    // Nobody answers within the request's time to live: APPROVAL_EXPIRED.
    let id = wire.request("tools/call", json!({"name": "pay_briefly", "arguments": payment("w2")}));
    let asked = wire.server_request("elicitation/create");
    let answer = wire.response(id);
    assert_eq!(structured(&answer)["error"]["code"], "APPROVAL_EXPIRED", "{answer}");
    wire.withdrawn(&asked["id"]);

    // An operator decides while the call waits: the call ends with that decision.
    let id = wire.request("tools/call", json!({"name": "pay", "arguments": payment("w3")}));
    let asked = wire.server_request("elicitation/create");
    let store = SqliteStore::open(dir.path().join("idem.db")).unwrap();
    let request = idem::approval::pending(&store, None, None).unwrap().into_iter().find(|r| r.key.ends_with("pay:w3"));
    let request = request.expect("the request is pending");
    let action = RecordId { namespace: &request.namespace, key: &request.key };
    idem::approval::blocking::approve(&store, action, "ops", None).expect("approved");
    let answer = wire.response(id);
    assert_eq!(structured(&answer)["paid"], "w3", "{answer}");
    wire.withdrawn(&asked["id"]);
    assert_eq!(effects(dir.path()), ["acme w3 2000"]);
}

#[test]
fn an_acceptance_after_the_ttl_is_approval_expired() {
    let dir = tempfile::tempdir().unwrap();
    let mut wire = Wire::start(dir.path(), "acme", false, elicits());
    let id = wire.request("tools/call", json!({"name": "pay_briefly", "arguments": payment("late")}));
    let asked = wire.server_request("elicitation/create");
    // The user accepts once the request has expired.
    let store = SqliteStore::open(dir.path().join("idem.db")).unwrap();
    let request =
        idem::approval::pending(&store, None, None).unwrap().into_iter().find(|r| r.key.ends_with("pay:late"));
    let request = request.expect("the request is pending");
    while idem::approval::blocking::state(&store, RecordId { namespace: &request.namespace, key: &request.key })
        .unwrap()
        .is_some_and(|state| matches!(state, idem::approval::State::Pending(_)))
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    wire.send(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {}}}));
    let answer = wire.response(id);
    assert_eq!(structured(&answer)["error"]["code"], "APPROVAL_EXPIRED", "{answer}");
    assert_eq!(status(&mut wire, "pay_briefly", "late"), "approval_expired");
    assert_eq!(effects(dir.path()), Vec::<String>::new());
}

#[test]
fn an_unreadable_answer_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let mut wire = Wire::start(dir.path(), "acme", false, tasks);
    let created = wire.call("pay", payment("u1"), (None, None));
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task = created["result"]["taskId"].as_str().unwrap().to_owned();
    assert_eq!(created["result"]["status"], "input_required", "{created}");
    for unreadable in [json!("yes"), json!({"action": 42})] {
        let params = json!({"taskId": task, "inputResponses": {"idem.approval": unreadable}});
        let id = wire.request("tasks/update", params);
        let refused = wire.response(id);
        assert_eq!(refused["error"]["code"], -32602, "{unreadable}: {refused}");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains(r#"{"action": "accept"}"#), "{message}");
        let id = wire.request("tasks/get", json!({"taskId": task}));
        let state = wire.response(id);
        assert_eq!(state["result"]["status"], "input_required", "{state}");
    }
    // The MCP 2026-07-28 round of a call: the same.
    let mut modern = Wire::start(dir.path(), "acme", true, elicits());
    let state = question(&modern.call("pay", payment("u2"), (None, None)));
    let refused = modern.call("pay", payment("u2"), (Some(json!({"idem.approval": "yes"})), Some(&state)));
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(status(&mut modern, "pay", "u2"), "awaiting_approval");
    assert_eq!(effects(dir.path()), Vec::<String>::new());
}

/// What the model reads, as a raw client lists it over stdio: each tool's own text, then
/// the paragraph `#[idempotent]` writes from the attribute (the key's fields, the compared
/// one, the status tool by name, the approval rule as written over the model's names).
#[test]
fn tools_list_over_stdio_gives_the_paragraph_the_attribute_implies() {
    let dir = tempfile::tempdir().unwrap();
    let mut wire = Wire::start(dir.path(), "acme", true, json!({}));
    let id = wire.request("tools/list", json!({}));
    let listed = wire.response(id);
    let tools = listed["result"]["tools"].as_array().unwrap_or_else(|| panic!("{listed}"));
    let described = |name: &str| -> String {
        let tool = tools.iter().find(|tool| tool["name"] == name).unwrap_or_else(|| panic!("no {name}: {listed}"));
        tool["description"].as_str().unwrap().to_owned()
    };
    assert_eq!(
        described("pay"),
        "Pay a supplier. Needs a person's approval above 1,000 EUR.\n\nSafe to retry: a repeat for the same \
         supplier never runs it twice; it gets the first call's result, or IN_PROGRESS while that call runs. \
         A repeat with a different amount is refused with CONFLICT: ask the user. After a TIMEOUT or \
         IN_PROGRESS, call pay_status with the same supplier instead of calling again. It needs a person's \
         approval when amount > 1000.0: it then answers APPROVAL_REQUIRED, and pay_status shows the decision."
    );
    for name in ["pay", "pay_briefly", "pay_promptly"] {
        let description = described(name);
        assert!(description.contains(&format!("call {name}_status with the same supplier")), "{description}");
        assert!(!description.contains("budget"), "no budget here: {description}");
    }
    let status = described("pay_status");
    assert!(status.contains("awaiting_approval, approved, declined or approval_expired"), "{status}");
}
