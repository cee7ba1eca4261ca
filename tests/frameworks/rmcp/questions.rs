//! A question asked during the call (an elicitation, MCP before 2026-07-28), through rmcp's
//! own client: the call waits for its answer only so long (the tool's `timeout`, else
//! `ELICITATION_WAIT`, and never past the request's expiry), then answers from the store
//! with the request still pending (APPROVAL_REQUIRED) or expired (APPROVAL_EXPIRED). A
//! decision made elsewhere (an operator, another client) ends the wait with that decision.
//! Whenever the call stops waiting for its question, it withdraws it
//! (`notifications/cancelled`), which rmcp's client hands to its handler as a cancellation.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use crate::support::mcp::served;
use idem::approval::State;
use idem::store::RecordId;
use idem::{MemoryStore, idempotent};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, Implementation,
};
use rmcp::service::{RequestContext, RoleClient, RunningService};
use rmcp::{ClientHandler, ErrorData, ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::Notify;

static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);

/// The longest any call of these tests may take: the waits they bound are seconds.
const PATIENCE: Duration = Duration::from_secs(30);

#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub(super) struct Payment {
    /// The supplier to pay.
    pub(super) supplier: String,
    /// The amount, in euros.
    pub(super) amount: f64,
}

/// Payments that need approval: `pay` (a day to decide), `pay_briefly` (two seconds),
/// `pay_promptly` (a call waits a second for its question).
#[derive(Clone, Default)]
pub(super) struct Desk {
    /// Transfers made: the effect, counted.
    pub(super) transfers: Arc<AtomicUsize>,
}

#[idem::status_tools]
#[tool_router]
impl Desk {
    /// Pay a supplier. Needs a person's approval above 1,000 EUR.
    #[idempotent(
        key = "pay:<req.supplier>",
        compare = [req.amount],
        approval(when = req.amount > 1000.0, text = "pay <req.supplier> <req.amount> EUR"),
        store = *STORE
    )]
    #[tool]
    async fn pay(&self, Parameters(req): Parameters<Payment>) -> Result<CallToolResult, ErrorData> {
        self.transfers.fetch_add(1, Ordering::SeqCst);
        Ok(CallToolResult::structured(json!({"paid": req.supplier, "amount": req.amount})))
    }

    /// Pay a supplier. Needs a person's approval above 1,000 EUR, within two seconds.
    #[idempotent(
        key = "pay:<req.supplier>",
        compare = [req.amount],
        approval(when = req.amount > 1000.0, text = "pay <req.supplier> <req.amount> EUR", ttl = "2s"),
        store = *STORE
    )]
    #[tool]
    async fn pay_briefly(&self, Parameters(req): Parameters<Payment>) -> Result<CallToolResult, ErrorData> {
        self.transfers.fetch_add(1, Ordering::SeqCst);
        Ok(CallToolResult::structured(json!({"paid": req.supplier, "amount": req.amount})))
    }

    /// Pay a supplier. Needs a person's approval above 1,000 EUR; a call answers within a
    /// second.
    #[idempotent(
        key = "pay:<req.supplier>",
        compare = [req.amount],
        approval(when = req.amount > 1000.0, text = "pay <req.supplier> <req.amount> EUR"),
        timeout = "1s",
        store = *STORE
    )]
    #[tool]
    async fn pay_promptly(&self, Parameters(req): Parameters<Payment>) -> Result<CallToolResult, ErrorData> {
        self.transfers.fetch_add(1, Ordering::SeqCst);
        Ok(CallToolResult::structured(json!({"paid": req.supplier, "amount": req.amount})))
    }
}

#[tool_handler]
#[idem::tasks]
impl ServerHandler for Desk {}

/// What the user does with a question.
#[derive(Clone, Debug)]
enum Reply {
    /// Answers at once.
    At(ElicitationAction),
    /// Never answers: waits until the question is withdrawn.
    Never,
    /// Answers once the store says the request expired, withdrawn or not.
    AfterExpiry(ElicitationAction),
}

/// A user of an earlier MCP's client (form elicitation): asked during the call.
#[derive(Clone)]
struct User {
    reply: Reply,
    /// Questions asked.
    asked: Arc<AtomicUsize>,
    /// Questions withdrawn by the server (`notifications/cancelled`) before an answer.
    withdrawn: Arc<AtomicUsize>,
    /// Told when a question arrives.
    arrived: Arc<Notify>,
}

impl User {
    fn new(reply: Reply) -> User {
        User { reply, asked: Arc::default(), withdrawn: Arc::default(), arrived: Arc::default() }
    }

    /// Waits until `n` questions were withdrawn: rmcp's client hears of it as the server
    /// sends it, after the call answered.
    async fn withdrawn(&self, n: usize) {
        for _ in 0..3000 {
            if self.withdrawn.load(Ordering::SeqCst) >= n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("{n} questions withdrawn expected, {} were", self.withdrawn.load(Ordering::SeqCst));
    }
}

impl ClientHandler for User {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams { message, .. } = request else { panic!("a form question") };
        self.asked.fetch_add(1, Ordering::SeqCst);
        self.arrived.notify_one();
        match self.reply.clone() {
            Reply::At(action) => Ok(ElicitResult::new(action)),
            Reply::Never => {
                context.ct.cancelled().await;
                self.withdrawn.fetch_add(1, Ordering::SeqCst);
                Err(ErrorData::internal_error("withdrawn", None))
            }
            Reply::AfterExpiry(action) => {
                let supplier = message.split_whitespace().find(|word| word.starts_with("late-")).unwrap().to_owned();
                expired(&supplier).await;
                if context.ct.is_cancelled() {
                    self.withdrawn.fetch_add(1, Ordering::SeqCst);
                }
                Ok(ElicitResult::new(action))
            }
        }
    }

    fn get_info(&self) -> ClientConfig {
        let capabilities = ClientCapabilities::builder().enable_elicitation().build();
        ClientConfig::new(capabilities, Implementation::new("idem-tests", "0"))
    }
}

/// The pending approval of `tool`'s action for `supplier`, once asked.
async fn request_of(supplier: &str) -> idem::approval::Request {
    for _ in 0..3000 {
        let waiting = idem::approval::pending(&*STORE, None, None).unwrap();
        if let Some(asked) = waiting.into_iter().find(|asked| asked.key == format!("pay:{supplier}")) {
            return asked;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("no request for {supplier}")
}

/// Waits until the request for `supplier` (of `pay_briefly`) has expired by the store's
/// reading.
async fn expired(supplier: &str) {
    let key = format!("pay:{supplier}");
    let namespace = namespace("pay_briefly");
    for _ in 0..3000 {
        let state = idem::approval::state(&*STORE, RecordId { namespace: &namespace, key: &key }).await.unwrap();
        if matches!(state, Some(State::Expired(_))) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("the request for {supplier} never expired")
}

/// The namespace of one of `Desk`'s tools: its module path and name.
fn namespace(tool: &str) -> String {
    format!("{}::{tool}", module_path!())
}

type Client = RunningService<RoleClient, User>;

async fn connect(desk: Desk, user: User) -> Client {
    let client_io = served(desk);
    user.serve(client_io).await.expect("the client connects")
}

async fn call(client: &Client, tool: &str, args: Value) -> Value {
    let Value::Object(args) = args else { unreachable!() };
    let call = client.call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args));
    let result =
        tokio::time::timeout(PATIENCE, call).await.unwrap_or_else(|_| panic!("{tool} still waits after {PATIENCE:?}"));
    result.expect("an answer").structured_content.expect("structured content")
}

async fn pay(client: &Client, tool: &str, supplier: &str) -> Value {
    call(client, tool, json!({"supplier": supplier, "amount": 1500.0})).await
}

async fn status(client: &Client, tool: &str, supplier: &str) -> Value {
    call(client, &format!("{tool}_status"), json!({"supplier": supplier})).await
}

#[tokio::test]
async fn a_question_nobody_answers_ends_at_the_requests_expiry() {
    let desk = Desk::default();
    let user = User::new(Reply::Never);
    let client = connect(desk.clone(), user.clone()).await;
    let answer = pay(&client, "pay_briefly", "silent-expiry").await;
    assert_eq!(answer["error"]["code"], "APPROVAL_EXPIRED", "{answer}");
    user.withdrawn(1).await;
    assert_eq!(status(&client, "pay_briefly", "silent-expiry").await["status"], "approval_expired");
    assert_eq!(desk.transfers.load(Ordering::SeqCst), 0);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_question_nobody_answers_ends_with_the_tools_timeout_and_the_request_pending() {
    let desk = Desk::default();
    let user = User::new(Reply::Never);
    let client = connect(desk.clone(), user.clone()).await;
    let started = std::time::Instant::now();
    let answer = pay(&client, "pay_promptly", "silent-timeout").await;
    assert_eq!(answer["error"]["code"], "APPROVAL_REQUIRED", "{answer}");
    assert!(started.elapsed() >= Duration::from_secs(1), "it waited for the person a second: {:?}", started.elapsed());
    user.withdrawn(1).await;
    assert_eq!(status(&client, "pay_promptly", "silent-timeout").await["status"], "awaiting_approval");

    // The request still waits: a later call asks the same question again, and a decision
    // made then counts.
    let asked = request_of("silent-timeout").await;
    let again = pay(&client, "pay_promptly", "silent-timeout").await;
    assert_eq!(again["error"]["code"], "APPROVAL_REQUIRED", "{again}");
    assert_eq!(request_of("silent-timeout").await, asked, "the same request");
    assert_eq!(user.asked.load(Ordering::SeqCst), 2);
    user.withdrawn(2).await;
    assert_eq!(desk.transfers.load(Ordering::SeqCst), 0);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn an_acceptance_after_the_ttl_is_approval_expired() {
    for action in [ElicitationAction::Accept, ElicitationAction::Decline] {
        let desk = Desk::default();
        let user = User::new(Reply::AfterExpiry(action.clone()));
        let client = connect(desk.clone(), user.clone()).await;
        let supplier = format!("late-{action:?}").to_lowercase();
        let answer = pay(&client, "pay_briefly", &supplier).await;
        assert_eq!(answer["error"]["code"], "APPROVAL_EXPIRED", "{action:?}: {answer}");
        let suggestion = answer["error"]["suggestion"].as_str().unwrap();
        assert!(suggestion.contains("still wanted"), "{suggestion}");
        assert_eq!(status(&client, "pay_briefly", &supplier).await["status"], "approval_expired");
        assert_eq!(desk.transfers.load(Ordering::SeqCst), 0, "{action:?}");
        client.cancel().await.unwrap();
    }
}

/// How the request is decided while the call waits for its question.
#[derive(Clone, Copy, Debug)]
enum Elsewhere {
    /// An operator approves, through the API the command uses.
    OperatorApproves,
    /// An operator declines.
    OperatorDeclines,
    /// Another client's user declines.
    AnotherClientDeclines,
    /// Another client's user accepts.
    AnotherClientAccepts,
}

#[tokio::test]
async fn a_decision_made_elsewhere_ends_the_wait_and_withdraws_the_question() {
    for elsewhere in [
        Elsewhere::OperatorApproves,
        Elsewhere::OperatorDeclines,
        Elsewhere::AnotherClientDeclines,
        Elsewhere::AnotherClientAccepts,
    ] {
        let desk = Desk::default();
        let waiting = User::new(Reply::Never);
        let client = connect(desk.clone(), waiting.clone()).await;
        let supplier = format!("elsewhere-{elsewhere:?}").to_lowercase();
        let arrived = waiting.arrived.notified();
        let call = tokio::spawn({
            let supplier = supplier.clone();
            let client = client.peer().clone();
            async move {
                let Value::Object(args) = json!({"supplier": supplier, "amount": 1500.0}) else { unreachable!() };
                let call = client.call_tool(CallToolRequestParams::new("pay").with_arguments(args));
                tokio::time::timeout(PATIENCE, call).await
            }
        });
        arrived.await;
        let approved = match elsewhere {
            Elsewhere::OperatorApproves | Elsewhere::OperatorDeclines => {
                let asked = request_of(&supplier).await;
                let action = RecordId { namespace: &asked.namespace, key: &asked.key };
                if matches!(elsewhere, Elsewhere::OperatorApproves) {
                    idem::approval::approve(&*STORE, action, "ops", None).await.expect("approved");
                    true
                } else {
                    idem::approval::decline(&*STORE, action, "ops", Some("not this month")).await.expect("declined");
                    false
                }
            }
            Elsewhere::AnotherClientDeclines | Elsewhere::AnotherClientAccepts => {
                let accepts = matches!(elsewhere, Elsewhere::AnotherClientAccepts);
                let action = if accepts { ElicitationAction::Accept } else { ElicitationAction::Decline };
                let other = connect(desk.clone(), User::new(Reply::At(action))).await;
                let answer = pay(&other, "pay", &supplier).await;
                if accepts {
                    // This call or the waiting one runs the action; the other replays it or
                    // finds it running.
                    assert!(answer["paid"] == supplier || answer["error"]["code"] == "IN_PROGRESS", "{answer}");
                } else {
                    assert_eq!(answer["error"]["code"], "DECLINED", "{answer}");
                }
                other.cancel().await.unwrap();
                accepts
            }
        };
        let answer = call.await.unwrap().unwrap_or_else(|_| panic!("{elsewhere:?}: the call still waits"));
        let answer = answer.expect("an answer").structured_content.expect("structured content");
        match elsewhere {
            Elsewhere::OperatorApproves => assert_eq!(answer["paid"], supplier, "{answer}"),
            Elsewhere::AnotherClientAccepts => assert!(
                answer["paid"] == supplier || answer["error"]["code"] == "IN_PROGRESS",
                "{elsewhere:?}: {answer}"
            ),
            _ => assert_eq!(answer["error"]["code"], "DECLINED", "{elsewhere:?}: {answer}"),
        }
        waiting.withdrawn(1).await;
        assert_eq!(desk.transfers.load(Ordering::SeqCst), usize::from(approved), "{elsewhere:?}: paid once or never");
        client.cancel().await.unwrap();
    }
}
