//! Answers a client sends, through rmcp's own client: an answer counts only as the answer
//! to a question idem asked, for that request, in that scope. MCP 2026-07-28's
//! `inputResponses` count only with the `requestState` idem sent with its question; a
//! `tasks/update` only for the task's own request, and only in the shape of an elicitation's
//! answer. And the status tool, which `APPROVAL_REQUIRED` sends the model to, says the
//! approval states it reads.

use std::collections::BTreeMap;
use std::time::Duration;

use idem::frameworks::rmcp::APPROVAL_INPUT;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, ErrorCode, GetTaskParams,
    Implementation, InputRequest, InputRequiredResult, InputResponses, ProtocolVersion, TaskPayload, TaskStatus,
    UpdateTaskParams,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService, ServiceError, ServiceExt};
use serde_json::{Value, json};

use super::questions::Desk;
use crate::support::mcp::served;

type Client = RunningService<RoleClient, ClientConfig>;

/// A client of `desk`: of MCP 2026-07-28 when `modern`, declaring form elicitation when
/// `elicits` and the tasks extension when `tasks`. It never answers a question by itself:
/// the test sends each round.
async fn connect(desk: Desk, (modern, elicits, tasks): (bool, bool, bool)) -> Client {
    let client_io = served(desk);
    let mut capabilities = if elicits {
        ClientCapabilities::builder().enable_elicitation().build()
    } else {
        ClientCapabilities::default()
    };
    if tasks {
        capabilities.extensions = ClientCapabilities::builder().enable_tasks().build().extensions;
    }
    let info = ClientConfig::new(capabilities, Implementation::new("idem-tests", "0"));
    if modern {
        let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::LATEST] };
        info.serve_with_lifecycle(client_io, lifecycle).await.expect("the client connects")
    } else {
        info.serve(client_io).await.expect("the client connects")
    }
}

/// An answer under the approval question's key.
fn answer(answer: Value) -> InputResponses {
    BTreeMap::from([(APPROVAL_INPUT.to_owned(), answer)])
}

fn accept() -> InputResponses {
    answer(json!({"action": "accept", "content": {}}))
}

/// One round of `tool` for `supplier`, 2,000 EUR, with `responses` and `state`.
async fn round(
    client: &Client,
    tool: &str,
    supplier: &str,
    (responses, state): (Option<InputResponses>, Option<&str>),
) -> CallToolResponse {
    let Value::Object(args) = json!({"supplier": supplier, "amount": 2000.0}) else { unreachable!() };
    let mut params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
    params.input_responses = responses;
    params.request_state = state.map(str::to_owned);
    client.call_tool_once(params).await.expect("an answer")
}

/// The question of an `InputRequiredResult`, and the state to echo with its answer.
fn question(response: CallToolResponse) -> (InputRequiredResult, String) {
    let CallToolResponse::InputRequired(asked) = response else { panic!("the question again, got {response:?}") };
    let requests = asked.input_requests.as_ref().expect("input requests");
    assert!(matches!(requests.get(APPROVAL_INPUT), Some(InputRequest::Elicitation(_))), "{requests:?}");
    let state = asked.request_state.clone().expect("a requestState with the question");
    (asked, state)
}

fn result(response: CallToolResponse) -> Value {
    let CallToolResponse::Complete(result) = response else { panic!("a tool result, got {response:?}") };
    result.structured_content.expect("structured content")
}

async fn status(client: &Client, tool: &str, supplier: &str) -> Value {
    let Value::Object(args) = json!({"supplier": supplier}) else { unreachable!() };
    let params = CallToolRequestParams::new(format!("{tool}_status")).with_arguments(args);
    client.call_tool(params).await.unwrap().structured_content.unwrap()
}

#[tokio::test]
async fn an_answer_to_no_question_changes_nothing() {
    let desk = Desk::default();
    let client = connect(desk.clone(), (true, true, false)).await;
    // The first call brings its own acceptance: no question was asked, so it is asked now.
    let (_, state) = question(round(&client, "pay", "unasked", (Some(accept()), None)).await);
    assert!(!state.contains("unasked") && !state.contains("pay"), "opaque: {state}");
    assert_eq!(status(&client, "pay", "unasked").await["status"], "awaiting_approval");
    // A state idem never gave out, one of another action, or none: the question again.
    let (_, other) = question(round(&client, "pay", "unasked-other", (None, None)).await);
    // The state with its last character changed.
    let forged = format!("{}{}", &state[..state.len() - 1], if state.ends_with('A') { 'B' } else { 'A' });
    for wrong in [None, Some("idem2.approval.AAAAAAAAAAAAAAAAAAAAAA"), Some(forged.as_str()), Some(other.as_str())] {
        let (_, again) = question(round(&client, "pay", "unasked", (Some(accept()), wrong)).await);
        assert_eq!(again, state, "{wrong:?}: the same request, the same state");
    }
    assert_eq!(status(&client, "pay", "unasked").await["status"], "awaiting_approval");
    assert_eq!(status(&client, "pay", "unasked-other").await["status"], "awaiting_approval");
    assert_eq!(desk.transfers.load(std::sync::atomic::Ordering::SeqCst), 0, "nothing ran");
    // The answer to the question asked, with its state: it counts, once.
    let paid = result(round(&client, "pay", "unasked", (Some(accept()), Some(&state))).await);
    assert_eq!(paid["paid"], "unasked", "{paid}");
    let replayed = result(round(&client, "pay", "unasked", (Some(accept()), Some(&state))).await);
    assert_eq!(replayed["replayed"], true, "{replayed}");
    assert_eq!(desk.transfers.load(std::sync::atomic::Ordering::SeqCst), 1);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn an_answer_from_a_client_that_was_not_asked_changes_nothing() {
    // A client that declared no elicitation is never asked: APPROVAL_REQUIRED, whatever it
    // sends. A tasks client's call waits as a task, its own answers notwithstanding.
    for (modern, tasks) in [(true, false), (false, false), (false, true)] {
        let desk = Desk::default();
        let client = connect(desk.clone(), (modern, false, tasks)).await;
        let supplier = format!("unasked-{modern}-{tasks}");
        for state in [None, Some("idem2.approval.AAAAAAAAAAAAAAAAAAAAAA")] {
            match round(&client, "pay", &supplier, (Some(accept()), state)).await {
                CallToolResponse::Task(task) if tasks => assert_eq!(task.task.status, TaskStatus::InputRequired),
                response => {
                    let answer = result(response);
                    assert_eq!(answer["error"]["code"], "APPROVAL_REQUIRED", "{modern} {tasks}: {answer}");
                }
            }
        }
        assert_eq!(status(&client, "pay", &supplier).await["status"], "awaiting_approval");
        assert_eq!(desk.transfers.load(std::sync::atomic::Ordering::SeqCst), 0);
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn a_state_of_an_earlier_request_changes_nothing() {
    let desk = Desk::default();
    let client = connect(desk.clone(), (true, true, false)).await;
    let (_, first) = question(round(&client, "pay_briefly", "stale", (None, None)).await);
    // The request expires unanswered; the next call says so, the one after asks anew.
    loop {
        if status(&client, "pay_briefly", "stale").await["status"] == "approval_expired" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let expired = result(round(&client, "pay_briefly", "stale", (Some(accept()), Some(&first))).await);
    assert_eq!(expired["error"]["code"], "APPROVAL_EXPIRED", "{expired}");
    let (_, second) = question(round(&client, "pay_briefly", "stale", (None, None)).await);
    assert_ne!(second, first, "a new request, a new state");
    // The first request's answer does not decide the second.
    let (_, again) = question(round(&client, "pay_briefly", "stale", (Some(accept()), Some(&first))).await);
    assert_eq!(again, second);
    assert_eq!(status(&client, "pay_briefly", "stale").await["status"], "awaiting_approval");
    assert_eq!(desk.transfers.load(std::sync::atomic::Ordering::SeqCst), 0);
    let paid = result(round(&client, "pay_briefly", "stale", (Some(accept()), Some(&second))).await);
    assert_eq!(paid["paid"], "stale", "{paid}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn an_unreadable_answer_is_refused_and_the_request_waits() {
    let desk = Desk::default();
    let client = connect(desk.clone(), (false, true, true)).await;
    let CallToolResponse::Task(task) = round(&client, "pay", "unreadable", (None, None)).await else {
        panic!("a task")
    };
    let id = task.task.task_id;
    for unreadable in [json!("yes"), json!({"action": 42}), json!({"action": "maybe"}), json!({}), json!(null)] {
        match client.update_task(UpdateTaskParams::new(&id, answer(unreadable.clone()))).await {
            Err(ServiceError::McpError(error)) => {
                assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{unreadable}: {error:?}");
                assert!(error.message.contains(r#"{"action": "accept"}"#), "{unreadable}: {}", error.message);
            }
            other => panic!("{unreadable}: refused expected, got {other:?}"),
        }
        let state = client.get_task(GetTaskParams::new(&id)).await.unwrap();
        assert_eq!(state.task.status(), TaskStatus::InputRequired, "{unreadable}: still waiting");
    }
    // The same in a call's own answer (MCP 2026-07-28): refused, nothing decided.
    let modern = connect(desk.clone(), (true, true, false)).await;
    let (_, state) = question(round(&modern, "pay", "unreadable-call", (None, None)).await);
    let Value::Object(args) = json!({"supplier": "unreadable-call", "amount": 2000.0}) else { unreachable!() };
    let params = CallToolRequestParams::new("pay").with_arguments(args).with_request_state(state);
    match modern.call_tool_once(params.with_input_responses(answer(json!({"action": 42})))).await {
        Err(ServiceError::McpError(error)) => assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{error:?}"),
        other => panic!("refused expected, got {other:?}"),
    }
    assert_eq!(status(&modern, "pay", "unreadable-call").await["status"], "awaiting_approval");
    modern.cancel().await.unwrap();

    client.update_task(UpdateTaskParams::new(&id, answer(json!({"action": "accept"})))).await.expect("acknowledged");
    for _ in 0..2000 {
        let state = client.get_task(GetTaskParams::new(&id)).await.unwrap();
        if let TaskPayload::Completed { result } = &state.task.payload {
            assert_eq!(result["structuredContent"]["paid"], "unreadable", "{result:?}");
            assert_eq!(desk.transfers.load(std::sync::atomic::Ordering::SeqCst), 1);
            return client.cancel().await.map(drop).unwrap();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("the accepted task never completed")
}

#[tokio::test]
async fn the_status_tool_says_the_approval_states_it_reads() {
    let client = connect(Desk::default(), (false, false, false)).await;
    let tools = client.list_all_tools().await.unwrap();
    let status = tools.iter().find(|tool| tool.name == "pay_status").expect("pay_status");
    let description = status.description.as_deref().unwrap();
    for state in ["awaiting_approval", "approved", "declined", "approval_expired", "APPROVAL_REQUIRED"] {
        assert!(description.contains(state), "{state}: {description}");
    }
    client.cancel().await.unwrap();
}
