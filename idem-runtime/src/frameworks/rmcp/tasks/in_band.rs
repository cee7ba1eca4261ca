//! Asking a person in band, through the MCP client, for an approval a call waits for:
//!
//! | the client | the call |
//! | --- | --- |
//! | MCP 2026-07-28, declared form elicitation | answers with an `InputRequiredResult` holding an `elicitation/create` (key [`APPROVAL_INPUT`]) and a `requestState`; the client asks its user and calls again with the answer and the state, which this reads |
//! | an earlier MCP, declared form elicitation | sends `elicitation/create` to the client and waits for the answer, at most [`elicitation_wait`] and never past the request's expiry, and only while the request waits (a decision made elsewhere ends the wait); when it stops waiting, it withdraws the question (`notifications/cancelled`) |
//! | neither | answers APPROVAL_REQUIRED; a person decides out of band |
//!
//! The user sees the action's text and its compared fields. Accept approves, decline and
//! cancel decline; the decision is recorded as made by [`DECIDED_IN_THE_CLIENT`], like any
//! other, so every later call (on any worker) follows it.
//!
//! An answer counts only as the answer to the question asked: for the request (the round of
//! it) the question was asked about, and in a `tools/call` only with the `requestState`
//! sent with the question, which names that round of that action (see
//! `ids::request_state`). An answer without it, or with one of another request, action or
//! scope, changes nothing: the call is asked the question again.

use std::time::Duration;

use rmcp::ErrorData;
use rmcp::RoleServer;
use rmcp::model::{
    ClientResult, ElicitRequest, ElicitationAction, InputRequest, InputRequests, InputRequiredResult, ServerRequest,
};
use rmcp::service::{PeerRequestOptions, RequestHandle};
use serde_json::Value;

use super::client::Client;
use super::state::question;
use super::{ids, records};
use crate::approval::{self, Asked, DecideError, Request, State};
use crate::call::Tool;
use crate::key::Key;
use crate::store::{DynStore, RecordId, Store, StoreError, now_ms};

/// The key of an approval question in an `InputRequiredResult`'s `inputRequests` (MCP
/// 2026-07-28), and of its answer in the `inputResponses` of the call that follows.
pub const APPROVAL_INPUT: &str = "idem.approval";

/// Who an approval decided in the MCP client is recorded as decided by.
pub const DECIDED_IN_THE_CLIENT: &str = "the user through the client";

/// How long a call waits for its user's answer to a question asked during the call (an
/// elicitation, MCP before 2026-07-28) when its tool sets no `timeout`: 30 seconds. A person
/// at the screen answers within it, and it is well inside the time clients give a request
/// (60 seconds in the TypeScript SDK), so the call answers before its client gives up.
/// A tool with `timeout` waits that long instead. Either way the wait ends at the request's
/// expiry (the approval's `ttl`) and as soon as the request is decided elsewhere.
pub const ELICITATION_WAIT: Duration = Duration::from_secs(30);

/// The longest a call waiting for approval goes without reading whether it was decided.
pub(super) const MOST_BETWEEN_READS: Duration = Duration::from_secs(1);

/// How long a call waits for the answer to a question asked during the call (the request's
/// expiry may end it sooner): its tool's `timeout`, else [`ELICITATION_WAIT`].
pub(super) fn elicitation_wait(timeout: Option<Duration>) -> Duration {
    timeout.unwrap_or(ELICITATION_WAIT)
}

/// A person's answer to the approval question, as their client reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reply {
    Accept,
    Decline,
    Cancel,
}

impl Reply {
    /// An answer sent as JSON (`inputResponses`, `tasks/update`): an elicitation's result,
    /// `{"action": "accept" | "decline" | "cancel", ...}`. Anything else is refused with
    /// `-32602` (invalid params), saying what is expected.
    pub(super) fn read(answer: &Value) -> Result<Reply, ErrorData> {
        match answer.get("action").and_then(Value::as_str) {
            Some("accept") => Ok(Reply::Accept),
            Some("decline") => Ok(Reply::Decline),
            Some("cancel") => Ok(Reply::Cancel),
            _ => {
                let mut got = answer.to_string();
                if got.len() > 200 {
                    let end = (0..=200).rev().find(|&at| got.is_char_boundary(at)).unwrap_or(0);
                    got.truncate(end);
                    got.push('…');
                }
                Err(ErrorData::invalid_params(
                    format!(
                        r#"the answer under "{APPROVAL_INPUT}" must be an elicitation's result: {{"action": "accept"}}, {{"action": "decline"}} or {{"action": "cancel"}}; got {got}. Nothing was decided"#
                    ),
                    None,
                ))
            }
        }
    }

    fn of(action: &ElicitationAction) -> Reply {
        match action {
            ElicitationAction::Accept => Reply::Accept,
            ElicitationAction::Decline => Reply::Decline,
            // Cancel, and whatever a newer client answers: not an approval.
            _ => Reply::Cancel,
        }
    }
}

/// What an answer sent with a `tools/call` (MCP 2026-07-28) came to.
pub(super) enum Answered {
    /// None was sent, or it answered no question asked (no state, another request's,
    /// another action's or scope's, or forged): it changed nothing.
    Not,
    /// It was taken (or the request was decided meanwhile): the gate looks again.
    Taken,
    /// It does not read: the call is refused with this.
    Refused(ErrorData),
}

/// The answer the call's client sent with it for the approval `asked`, if it answers the
/// question asked: its `requestState` must be the state of the request waiting now.
pub(super) async fn answered(
    tool: &Tool,
    key: &Key,
    asked: &Request,
    store: &dyn DynStore,
    client: &Client,
) -> Answered {
    let Some(answer) = client.responses.as_ref().and_then(|responses| responses.get(APPROVAL_INPUT)) else {
        return Answered::Not;
    };
    let reply = match Reply::read(answer) {
        Ok(reply) => reply,
        Err(refused) => return Answered::Refused(refused),
    };
    let id = RecordId { namespace: tool.namespace, key: key.as_str() };
    let waiting = async {
        match approval::waiting(store, id).await? {
            Some((round, request)) if round.asked_at_ms == asked.asked_at_ms => {
                Ok(Some((round, state_of(store, id, round, &request).await?)))
            }
            _ => Ok::<_, StoreError>(None),
        }
    };
    let (round, state) = match waiting.await {
        Ok(Some(waiting)) => waiting,
        // Decided, or asked anew, meanwhile: the gate says how it stands.
        Ok(None) => return Answered::Taken,
        Err(error) => {
            tracing::warn!(target: "idem", tool = tool.name, %error, "the answer to the approval question could not be checked; it changes nothing");
            return Answered::Not;
        }
    };
    if !client.request_state.as_deref().is_some_and(|given| ids::same(given, &state)) {
        tracing::warn!(
            target: "idem",
            tool = tool.name,
            "an answer to an approval question came without the requestState of the question asked (none, another request's, or one idem did not make); it changes nothing, and the question is asked again"
        );
        return Answered::Not;
    }
    if let Err(error) = record(store, id, round, reply).await {
        tracing::warn!(target: "idem", tool = tool.name, %error, "an approval answered in the client was not recorded");
    }
    Answered::Taken
}

/// Asks for the approval `asked` through the call's client if it can be asked; `true` when
/// the gate should look at the approval again (a decision may have been recorded, here or
/// elsewhere, or the request expired). A question to send back (MCP 2026-07-28) goes to
/// `answer_with`.
pub(super) async fn ask(
    tool: &Tool,
    key: &Key,
    asked: &Request,
    store: &dyn DynStore,
    client: &Client,
    answer_with: impl FnOnce(InputRequiredResult),
) -> bool {
    if !client.elicits {
        return false;
    }
    let id = RecordId { namespace: tool.namespace, key: key.as_str() };
    let unasked = |error: StoreError| {
        tracing::warn!(target: "idem", tool = tool.name, %error, "the approval question could not be asked; it answers APPROVAL_REQUIRED");
        false
    };
    // The round the question is about: its answer decides that round and no later one.
    let (round, request) = match approval::waiting(store, id).await {
        Ok(Some((round, request))) if round.asked_at_ms == asked.asked_at_ms => (round, request),
        Ok(_) => return true, // decided, or asked anew, meanwhile: the gate says how it stands
        Err(error) => return unasked(error),
    };
    let elicitation = ElicitRequest::new(question(tool, asked));
    if client.modern {
        let state = match state_of(store, id, round, &request).await {
            Ok(state) => state,
            Err(error) => return unasked(error),
        };
        let questions = InputRequests::from([(APPROVAL_INPUT.to_owned(), InputRequest::Elicitation(elicitation))]);
        answer_with(InputRequiredResult::new(Some(questions), Some(state)));
        return false;
    }
    // rmcp's `create_elicitation` needs its `elicitation` feature (and the `url` crate), and
    // cannot be withdrawn: the request it sends, sent here.
    let request = ServerRequest::ElicitRequest(elicitation);
    let sent = match client.peer.send_cancellable_request(request, PeerRequestOptions::no_options()).await {
        Ok(sent) => sent,
        Err(error) => {
            tracing::warn!(target: "idem", tool = tool.name, %error, "the client could not ask its user for approval; it answers APPROVAL_REQUIRED");
            return false;
        }
    };
    match await_answer(tool, key, asked, store, sent).await {
        Some(Ok(ClientResult::ElicitResult(result))) => {
            if let Err(error) = record(store, id, round, Reply::of(&result.action)).await {
                tracing::warn!(target: "idem", tool = tool.name, %error, "an approval answered in the client was not recorded");
            }
            true
        }
        // The wait ended without an answer: the gate says where the request stands now.
        None => true,
        Some(Ok(other)) => {
            tracing::warn!(target: "idem", tool = tool.name, ?other, "the client answered the approval question with something else; it answers APPROVAL_REQUIRED");
            false
        }
        Some(Err(error)) => {
            tracing::warn!(target: "idem", tool = tool.name, %error, "the client could not ask its user for approval; it answers APPROVAL_REQUIRED");
            false
        }
    }
}

/// The client's answer to the question `sent`, or `None` when the call stopped waiting for
/// it (the tool's wait passed, or the request was decided elsewhere or expired): the
/// question is then withdrawn, so that the client stops asking.
async fn await_answer(
    tool: &Tool,
    key: &Key,
    asked: &Request,
    store: &dyn DynStore,
    mut sent: RequestHandle<RoleServer>,
) -> Option<Result<ClientResult, rmcp::service::ServiceError>> {
    let wait = elicitation_wait(tool.timeout);
    let why = tokio::select! {
        answered = &mut sent.rx => {
            return Some(answered.unwrap_or(Err(rmcp::service::ServiceError::TransportClosed)));
        }
        () = decided(tool, key, asked, store) => "the approval was decided elsewhere, or its request expired",
        () = tokio::time::sleep(wait) => "the call stopped waiting for an answer; the request still waits",
    };
    if let Err(error) = sent.cancel(Some(why.to_owned())).await {
        tracing::debug!(target: "idem", tool = tool.name, %error, "the approval question could not be withdrawn");
    }
    None
}

/// Waits, reading the store, until the approval `asked` is no longer waiting: decided (here,
/// by another worker, or by an operator), declined by a cancel, reopened, or expired.
pub(super) async fn decided(tool: &Tool, key: &Key, asked: &Request, store: &dyn DynStore) {
    let id = RecordId { namespace: tool.namespace, key: key.as_str() };
    let mut pause = Duration::from_millis(10);
    loop {
        match approval::state(store, id).await {
            Ok(Some(State::Pending(request))) if request.asked_at_ms == asked.asked_at_ms => {}
            Ok(_) => return,
            // A store that fails is read again; past the request's expiry the gate answers.
            Err(error) => {
                tracing::debug!(target: "idem", tool = tool.name, %error, "could not read whether the approval was decided")
            }
        }
        let left = asked.expires_at_ms.saturating_sub(now_ms());
        if left <= 0 {
            return;
        }
        tokio::time::sleep(pause.min(Duration::from_millis(left.unsigned_abs()))).await;
        pause = (pause * 2).min(MOST_BETWEEN_READS);
    }
}

/// The `requestState` of the question about `request`, asked in `round` for the action `id`.
async fn state_of(
    store: &dyn DynStore,
    id: RecordId<'_>,
    round: Asked,
    request: &Request,
) -> Result<String, StoreError> {
    let secret = records::secret(store).await?;
    Ok(ids::request_state(&secret, (id.namespace, id.key), (round.round, round.asked_at_ms), &request.request))
}

/// Records the user's answer to the request `asked` (and to no later one): accept approves,
/// decline and cancel decline. A request decided, expired or asked anew meanwhile is left
/// as it stands; only a store that fails is an error.
pub(super) async fn record<S: Store + ?Sized>(
    store: &S,
    id: RecordId<'_>,
    asked: Asked,
    reply: Reply,
) -> Result<(), StoreError> {
    let verdict = match reply {
        Reply::Accept => (true, DECIDED_IN_THE_CLIENT, None),
        Reply::Decline => (false, DECIDED_IN_THE_CLIENT, Some("declined in the client")),
        Reply::Cancel => (false, DECIDED_IN_THE_CLIENT, Some("cancelled in the client")),
    };
    match approval::decide_asked(store, id, asked, verdict).await {
        Err(DecideError::Store(error)) => Err(error),
        // Decided, expired, or asked anew meanwhile (and what a decision in the client
        // cannot meet: no decider's name, a reopen): what stands, stands.
        Ok(_) | Err(_) => Ok(()),
    }
}

/// Records the answer to the question of a task waiting for the request asked at
/// `asked_at_ms` (`tasks/update`, `tasks/cancel`): for that request only.
pub(super) async fn record_for_task<S: Store + ?Sized>(
    store: &S,
    id: RecordId<'_>,
    asked_at_ms: i64,
    reply: Reply,
) -> Result<(), StoreError> {
    match approval::waiting(store, id).await? {
        Some((asked, _)) if asked.asked_at_ms == asked_at_ms => record(store, id, asked, reply).await,
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn answers_read_as_an_elicitations_result_or_are_refused() {
        assert_eq!(Reply::read(&json!({"action": "accept", "content": {}})).unwrap(), Reply::Accept);
        assert_eq!(Reply::read(&json!({"action": "decline"})).unwrap(), Reply::Decline);
        assert_eq!(Reply::read(&json!({"action": "cancel"})).unwrap(), Reply::Cancel);
        for unreadable in [json!("yes"), json!({"action": 42}), json!({"action": "ok"}), json!({}), json!(null)] {
            let refused = Reply::read(&unreadable).unwrap_err();
            assert_eq!(refused.code, rmcp::model::ErrorCode::INVALID_PARAMS, "{unreadable}");
            assert!(refused.message.contains(r#"{"action": "accept"}"#), "{}", refused.message);
        }
        let long = Reply::read(&json!("é".repeat(500))).unwrap_err();
        assert!(long.message.len() < 600, "{}", long.message);
    }

    #[test]
    fn a_call_waits_for_its_user_the_tools_timeout_else_half_a_minute() {
        assert_eq!(elicitation_wait(None), ELICITATION_WAIT);
        assert_eq!(elicitation_wait(Some(Duration::from_secs(2))), Duration::from_secs(2));
        assert_eq!(elicitation_wait(Some(Duration::from_secs(300))), Duration::from_secs(300));
        assert!(ELICITATION_WAIT < Duration::from_secs(60), "inside the time clients give a request");
    }
}
