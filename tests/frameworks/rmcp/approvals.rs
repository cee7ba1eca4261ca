//! Approvals asked in band, through rmcp's own client: a client of an earlier MCP gets an
//! `elicitation/create` during the call; a client of MCP 2026-07-28 gets an
//! `InputRequiredResult` and calls again with its user's answer (rmcp's `call_tool` does
//! both rounds); a client that declared no elicitation gets APPROVAL_REQUIRED; a client that
//! takes tasks gets a task, `input_required` until a decision (its `tasks/update`, or an
//! operator's). Accept runs the action once; decline and cancel decline it, for every later
//! call too.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};

use crate::support::mcp::served;
use idem::store::RecordId;
use idem::{MemoryStore, idempotent};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities, ClientConfig,
    ElicitRequestParams, ElicitResult, ElicitationAction, GetTaskParams, GetTaskResult, Implementation, InputRequest,
    ProtocolVersion, TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RequestContext, RoleClient, RunningService};
use rmcp::{ClientHandler, ErrorData, ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};

static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);

#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct Payment {
    /// The supplier to pay.
    supplier: String,
    /// The amount, in euros.
    amount: f64,
}

#[derive(Clone, Default)]
struct Bank {
    /// Transfers made: the effect, counted.
    transfers: Arc<AtomicUsize>,
}

#[idem::status_tools]
#[tool_router]
impl Bank {
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
}

#[tool_handler]
#[idem::tasks]
impl ServerHandler for Bank {}

/// A user who answers every approval question with `action`, and counts the questions.
#[derive(Clone)]
struct User {
    action: ElicitationAction,
    asked: Arc<AtomicUsize>,
    elicits: bool,
    /// It declares the tasks extension.
    tasks: bool,
}

impl ClientHandler for User {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams { message, .. } = request else { panic!("a form question") };
        assert!(message.contains("pay ") && message.contains("EUR"), "the user sees the action: {message}");
        self.asked.fetch_add(1, Ordering::SeqCst);
        Ok(ElicitResult::new(self.action.clone()))
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = if self.elicits {
            ClientCapabilities::builder().enable_elicitation().build()
        } else {
            ClientCapabilities::default()
        };
        if self.tasks {
            capabilities.extensions = ClientCapabilities::builder().enable_tasks().build().extensions;
        }
        ClientConfig::new(capabilities, Implementation::new("idem-tests", "0"))
    }
}

type Client = RunningService<RoleClient, User>;

/// `bank` served over an in-process pipe to a client whose user answers `action`; of MCP
/// 2026-07-28 when `modern`.
async fn connect(bank: Bank, user: User, modern: bool) -> Client {
    let client_io = served(bank);
    if modern {
        let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::LATEST] };
        user.serve_with_lifecycle(client_io, lifecycle).await.expect("the client connects")
    } else {
        user.serve(client_io).await.expect("the client connects")
    }
}

fn user(action: ElicitationAction) -> User {
    User { action, asked: Arc::default(), elicits: true, tasks: false }
}

async fn pay(client: &Client, supplier: &str, amount: f64) -> Value {
    let Value::Object(args) = json!({"supplier": supplier, "amount": amount}) else { unreachable!() };
    let result = client.call_tool(CallToolRequestParams::new("pay").with_arguments(args)).await.expect("an answer");
    result.structured_content.expect("structured content")
}

#[tokio::test]
async fn an_earlier_clients_user_is_asked_during_the_call() {
    for (supplier, action, paid) in [
        ("legacy-accept", ElicitationAction::Accept, true),
        ("legacy-decline", ElicitationAction::Decline, false),
        ("legacy-cancel", ElicitationAction::Cancel, false),
    ] {
        let bank = Bank::default();
        let user = user(action);
        let client = connect(bank.clone(), user.clone(), false).await;
        let first = pay(&client, supplier, 1200.0).await;
        if paid {
            assert_eq!(first["paid"], supplier, "{first}");
        } else {
            assert_eq!(first["error"]["code"], "DECLINED", "{first}");
            assert!(first["error"]["message"].as_str().unwrap().contains("the user through the client"), "{first}");
        }
        // Every later call follows the decision, without asking again.
        let again = pay(&client, supplier, 1200.0).await;
        if paid {
            assert_eq!(again["replayed"], true, "{again}");
        } else {
            assert_eq!(again["error"]["code"], "DECLINED", "{again}");
        }
        assert_eq!(user.asked.load(Ordering::SeqCst), 1, "{supplier}: asked once");
        assert_eq!(bank.transfers.load(Ordering::SeqCst), usize::from(paid), "{supplier}");
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn a_2026_clients_user_answers_and_the_client_calls_again() {
    for (supplier, action, paid) in [
        ("modern-accept", ElicitationAction::Accept, true),
        ("modern-decline", ElicitationAction::Decline, false),
        ("modern-cancel", ElicitationAction::Cancel, false),
    ] {
        let bank = Bank::default();
        let user = user(action);
        let client = connect(bank.clone(), user.clone(), true).await;
        assert!(!client.peer_info().unwrap().protocol_version.has_initialize(), "MCP 2026-07-28");
        let answer = pay(&client, supplier, 2000.0).await;
        if paid {
            assert_eq!(answer["paid"], supplier, "{answer}");
        } else {
            assert_eq!(answer["error"]["code"], "DECLINED", "{answer}");
        }
        assert_eq!(user.asked.load(Ordering::SeqCst), 1, "{supplier}: one question, one answer");
        assert_eq!(bank.transfers.load(Ordering::SeqCst), usize::from(paid), "{supplier}");
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn a_client_that_cannot_ask_its_user_gets_approval_required() {
    for modern in [false, true] {
        let bank = Bank::default();
        let user = User { action: ElicitationAction::Accept, asked: Arc::default(), elicits: false, tasks: false };
        let client = connect(bank.clone(), user.clone(), modern).await;
        let supplier = if modern { "nobody-modern" } else { "nobody-legacy" };
        let answer = pay(&client, supplier, 3000.0).await;
        assert_eq!(answer["error"]["code"], "APPROVAL_REQUIRED", "{answer}");
        assert_eq!(answer["error"]["approval"]["text"], format!("pay {supplier} 3000 EUR"), "{answer}");
        let Value::Object(args) = json!({"supplier": supplier}) else { unreachable!() };
        let status = client.call_tool(CallToolRequestParams::new("pay_status").with_arguments(args)).await.unwrap();
        assert_eq!(status.structured_content.unwrap()["status"], "awaiting_approval");
        assert_eq!(bank.transfers.load(Ordering::SeqCst), 0);
        // Below the threshold nothing is asked.
        let small = pay(&client, &format!("{supplier}-small"), 10.0).await;
        assert_eq!(small["amount"], 10.0, "{small}");
        client.cancel().await.unwrap();
    }
}

/// How the test decides a call that waits as a task.
#[derive(Clone, Copy, Debug)]
enum Decide {
    /// The client answers the task's question with `tasks/update`.
    Update(&'static str),
    /// The client cancels the task.
    Cancel,
    /// An operator approves out of band, through the API the CLI uses.
    Operator,
}

fn payment(supplier: &str, amount: f64) -> CallToolRequestParams {
    let Value::Object(args) = json!({"supplier": supplier, "amount": amount}) else { unreachable!() };
    CallToolRequestParams::new("pay").with_arguments(args)
}

async fn waiting_task(client: &Client, supplier: &str) -> String {
    match client.call_tool_once(payment(supplier, 1500.0)).await.expect("an answer") {
        CallToolResponse::Task(created) => {
            assert_eq!(created.task.status, TaskStatus::InputRequired, "{created:?}");
            assert!(created.task.status_message.as_deref().unwrap().contains("approval"), "{created:?}");
            created.task.task_id
        }
        other => panic!("a task, got {other:?}"),
    }
}

/// Polls the task until it leaves `input_required` and `working`.
async fn decided(client: &Client, id: &str) -> GetTaskResult {
    for _ in 0..2000 {
        let state = client.get_task(GetTaskParams::new(id)).await.expect("tasks/get answers");
        if !matches!(state.task.status(), TaskStatus::InputRequired | TaskStatus::Working) {
            return state;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    panic!("task {id} still waiting after 2000 polls")
}

#[tokio::test]
async fn a_tasks_client_gets_a_task_that_waits_for_the_decision() {
    for (supplier, decide, paid) in [
        ("task-accept", Decide::Update("accept"), true),
        ("task-decline", Decide::Update("decline"), false),
        ("task-cancel", Decide::Cancel, false),
        ("task-operator", Decide::Operator, true),
    ] {
        let bank = Bank::default();
        let user = User { tasks: true, ..user(ElicitationAction::Accept) };
        let client = connect(bank.clone(), user.clone(), false).await;
        let id = waiting_task(&client, supplier).await;
        // A retry while it waits is the same task: one request, one question.
        assert_eq!(waiting_task(&client, supplier).await, id, "{supplier}");
        let state = client.get_task(GetTaskParams::new(&id)).await.unwrap();
        let TaskPayload::InputRequired { input_requests } = &state.task.payload else { panic!("{state:?}") };
        let Some(InputRequest::Elicitation(question)) = input_requests.get(idem::frameworks::rmcp::APPROVAL_INPUT)
        else {
            panic!("the approval question: {input_requests:?}")
        };
        let ElicitRequestParams::FormElicitationParams { message, .. } = &question.params else { panic!("a form") };
        assert!(message.contains(&format!("pay {supplier} 1500 EUR")), "{message}");
        assert_eq!(bank.transfers.load(Ordering::SeqCst), 0, "{supplier}: nothing runs before a decision");

        match decide {
            Decide::Update(action) => {
                let answer =
                    BTreeMap::from([(idem::frameworks::rmcp::APPROVAL_INPUT.to_owned(), json!({"action": action}))]);
                client.update_task(UpdateTaskParams::new(&id, answer)).await.expect("tasks/update is acknowledged");
            }
            Decide::Cancel => client.cancel_task(CancelTaskParams::new(&id)).await.expect("acknowledged"),
            Decide::Operator => {
                let waiting = idem::approval::pending(&*STORE, None, None).unwrap();
                let asked = waiting.iter().find(|asked| asked.text.contains(supplier)).expect("listed as pending");
                let action = RecordId { namespace: &asked.namespace, key: &asked.key };
                idem::approval::approve(&*STORE, action, "ops", None).await.expect("approved");
            }
        }
        let state = decided(&client, &id).await;
        assert_eq!(state.task.status(), TaskStatus::Completed, "{supplier}: {state:?}");
        let TaskPayload::Completed { result } = &state.task.payload else { unreachable!() };
        let result = &result["structuredContent"];
        if paid {
            assert_eq!(result["paid"], supplier, "{result}");
        } else {
            assert_eq!(result["error"]["code"], "DECLINED", "{result}");
        }
        assert_eq!(bank.transfers.load(Ordering::SeqCst), usize::from(paid), "{supplier}: paid once or never");
        assert_eq!(user.asked.load(Ordering::SeqCst), 0, "{supplier}: asked through the task, not during the call");
        // The task stays as it ended, and a later call follows the decision.
        assert_eq!(client.get_task(GetTaskParams::new(&id)).await.unwrap().task.status(), TaskStatus::Completed);
        let again = pay(&client, supplier, 1500.0).await;
        if paid {
            assert_eq!(again["replayed"], true, "{again}");
        } else {
            assert_eq!(again["error"]["code"], "DECLINED", "{again}");
        }
        assert_eq!(bank.transfers.load(Ordering::SeqCst), usize::from(paid), "{supplier}");
        client.cancel().await.unwrap();
    }
}
