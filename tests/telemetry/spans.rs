//! The `execute_tool <tool>` span of each call, seen through a capturing layer: its name,
//! kind marker and attributes for each kind of answer, the body's events inside it, and
//! an outer span for the same tool reused instead of a second one.

use std::sync::{Barrier, LazyLock, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use idem::telemetry::{KeyInTelemetry, key_hash, set_key_in_telemetry};
use idem::{MemoryStore, Status, idempotent};
use tracing::field::Empty;

use super::capture::{Capture, Seen, SpanSeen};

/// `set_key_in_telemetry` is process-wide: the tests that read keys take turns.
static KEYS: Mutex<()> = Mutex::new(());

fn keys() -> MutexGuard<'static, ()> {
    KEYS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[derive(Debug)]
enum NoteError {
    Idem(idem::Error),
    Refused,
}

impl From<idem::Error> for NoteError {
    fn from(error: idem::Error) -> Self {
        NoteError::Idem(error)
    }
}

impl NoteError {
    fn code(&self) -> Option<idem::ErrorCode> {
        match self {
            NoteError::Idem(error) => Some(error.code()),
            NoteError::Refused => None,
        }
    }
}

#[idempotent(key = "note:<id>", compare = [text], store = store, namespace = "telemetry::send_note")]
fn send_note(store: &MemoryStore, id: u32, text: &str, refuse: bool) -> Result<String, NoteError> {
    tracing::info!(target: "notes", id, "writing the note");
    if refuse { Err(NoteError::Refused) } else { Ok(format!("note {id}: {text}")) }
}

#[idempotent(key = "slow:<id>", store = store, namespace = "telemetry::slow_note")]
fn slow_note(store: &MemoryStore, id: u32, entered: &Barrier, release: &Barrier) -> Result<u32, NoteError> {
    entered.wait();
    release.wait();
    Ok(id)
}

static TIMED_STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);
static TIMED_RELEASE: LazyLock<tokio::sync::Semaphore> = LazyLock::new(|| tokio::sync::Semaphore::new(0));

#[idempotent(key = "timed:<id>", store = *TIMED_STORE, timeout = "50ms", namespace = "telemetry::timed_note")]
async fn timed_note(id: u32) -> Result<u32, NoteError> {
    let _permit = TIMED_RELEASE.acquire().await.expect("the semaphore stays open");
    tracing::info!(target: "notes", id, "the timed note went on");
    Ok(id)
}

const SEND_NOTE: &str = "execute_tool send_note";

/// The attributes every idem span carries, whatever the answer.
fn assert_conventions(span: &SpanSeen, tool: &str, namespace: &str) {
    assert_eq!(span.target, "idem");
    assert_eq!(span.field("otel.kind"), Some("internal"), "the kind marker");
    assert_eq!(span.field("gen_ai.operation.name"), Some("execute_tool"));
    assert_eq!(span.field("gen_ai.tool.name"), Some(tool));
    assert_eq!(span.field("gen_ai.tool.type"), Some("function"));
    assert_eq!(span.field("idem.namespace"), Some(namespace));
}

fn the_note_span(seen: &Seen) -> (usize, SpanSeen) {
    let (index, span) = seen.only_span(SEND_NOTE);
    assert_conventions(span, "send_note", "telemetry::send_note");
    (index, span.clone())
}

#[test]
fn a_fresh_call_is_one_span_around_reserve_body_and_settle_with_the_bodys_events_inside() {
    let _keys = keys();
    let (store, capture) = (MemoryStore::new(), Capture::default());
    let answer = capture.run(|| send_note(&store, 1, "hello", false));
    assert_eq!(answer.unwrap(), "note 1: hello");
    let seen = capture.seen();
    let (index, span) = the_note_span(&seen);
    assert_eq!(span.field("idem.key"), Some("note:1"));
    assert_eq!(span.field("idem.outcome"), Some("fresh"));
    assert_eq!(span.field("error.type"), None, "a fresh success is no error");
    assert_eq!(span.field("otel.status_code"), None);
    assert!(span.field("idem.lease_token").is_some_and(|token| token.parse::<u64>().is_ok()), "{span:?}");
    for phase in ["idem.reserve_us", "idem.body_us", "idem.settle_us"] {
        assert!(span.field(phase).is_some_and(|us| us.parse::<u64>().is_ok()), "{phase} in {span:?}");
    }
    assert!(span.closed, "the span ends with the call");
    assert_eq!(span.declared, idem::telemetry::conventions::SPAN_FIELDS, "the fields the conventions module names");
    let body = seen.events_saying("writing the note").next().expect("the body's event");
    assert_eq!(body.span, Some(index), "the body's event is inside the call's span");
    let call = seen.events_saying("idempotent call").next().expect("idem's event for the call");
    assert_eq!(call.span, Some(index), "idem's own event is inside it too");
    assert_eq!(call.field("outcome"), Some("fresh"));
}

#[test]
fn a_replay_and_a_conflict_are_spans_without_a_body() {
    let _keys = keys();
    let (store, capture) = (MemoryStore::new(), Capture::default());
    send_note(&store, 2, "hello", false).unwrap();
    capture.run(|| send_note(&store, 2, "hello", false)).unwrap();
    let seen = std::mem::take(&mut *capture.seen());
    let (_, replay) = the_note_span(&seen);
    assert_eq!(replay.field("idem.outcome"), Some("replayed"));
    assert_eq!(replay.field("error.type"), None, "a replayed success is no error");
    assert!(replay.field("idem.reserve_us").is_some());
    assert_eq!(replay.field("idem.body_us"), None, "no body ran");
    assert_eq!(replay.field("idem.lease_token"), None, "a replay holds no lease");
    assert_eq!(seen.events_saying("writing the note").count(), 0);

    let conflict = capture.run(|| send_note(&store, 2, "other text", false)).unwrap_err();
    assert_eq!(conflict.code(), Some(idem::ErrorCode::Conflict));
    let seen = capture.seen();
    let (_, span) = the_note_span(&seen);
    assert_eq!(span.field("idem.outcome"), Some("conflict"));
    assert_eq!(span.field("error.type"), Some("CONFLICT"), "error.type is the idem code");
    assert_eq!(span.field("otel.status_code"), Some("ERROR"));
}

#[test]
fn the_tools_own_error_is_a_tool_error() {
    let _keys = keys();
    let (store, capture) = (MemoryStore::new(), Capture::default());
    let refused = capture.run(|| send_note(&store, 3, "hello", true)).unwrap_err();
    assert!(matches!(refused, NoteError::Refused));
    let seen = capture.seen();
    let (_, span) = the_note_span(&seen);
    assert_eq!(span.field("idem.outcome"), Some("released"));
    assert_eq!(span.field("error.type"), Some("tool_error"), "as MCP instrumentation marks isError");
    assert_eq!(span.field("otel.status_code"), Some("ERROR"));
}

#[test]
fn a_repeat_while_the_first_call_runs_is_an_in_progress_span() {
    let _keys = keys();
    let (store, capture) = (MemoryStore::new(), Capture::default());
    let (entered, release) = (Barrier::new(2), Barrier::new(2));
    let repeat = std::thread::scope(|scope| {
        let first = scope.spawn(|| capture.run(|| slow_note(&store, 4, &entered, &release)));
        entered.wait();
        let repeat = capture.run(|| slow_note(&store, 4, &entered, &release));
        release.wait();
        assert_eq!(first.join().unwrap().unwrap(), 4);
        repeat
    });
    assert_eq!(repeat.unwrap_err().code(), Some(idem::ErrorCode::InProgress));
    let seen = capture.seen();
    let spans: Vec<_> = seen.spans_named("execute_tool slow_note").map(|(_, span)| span).collect();
    assert_eq!(spans.len(), 2, "one span per call: {spans:#?}");
    for span in &spans {
        assert_conventions(span, "slow_note", "telemetry::slow_note");
        assert_eq!(span.field("idem.key"), Some("slow:4"));
    }
    let outcome = |wanted: &str| spans.iter().find(|span| span.field("idem.outcome") == Some(wanted)).copied();
    let running = outcome("in_progress").expect("the repeat's span");
    assert_eq!(running.field("error.type"), Some("IN_PROGRESS"));
    assert_eq!(outcome("fresh").expect("the first call's span").field("error.type"), None);
}

#[test]
fn a_timed_out_call_answers_timeout_and_its_span_lasts_until_the_body_settles() {
    let _keys = keys();
    let capture = Capture::default();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    capture.run(|| {
        runtime.block_on(async {
            let answer = timed_note(5).await.unwrap_err();
            assert_eq!(answer.code(), Some(idem::ErrorCode::Timeout));
            {
                let seen = capture.seen();
                let (_, span) = seen.only_span("execute_tool timed_note");
                assert_conventions(span, "timed_note", "telemetry::timed_note");
                assert_eq!(span.field("idem.outcome"), Some("timed_out"));
                assert_eq!(span.field("error.type"), Some("TIMEOUT"));
                assert!(!span.closed, "the body goes on inside the span");
            }
            TIMED_RELEASE.add_permits(1);
            let deadline = Instant::now() + Duration::from_secs(20);
            while !capture.seen().only_span("execute_tool timed_note").1.closed {
                assert!(Instant::now() < deadline, "the body never settled");
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            assert!(matches!(timed_note_status(5).await.unwrap(), Status::Completed(5)));
        })
    });
    let seen = capture.seen();
    let (index, span) = seen.only_span("execute_tool timed_note");
    assert_eq!(span.field("idem.outcome"), Some("timed_out"), "the caller's answer stays the outcome");
    assert_eq!(span.field("idem.late_outcome"), Some("fresh"), "what the body came to after it");
    let went_on = seen.events_saying("the timed note went on").next().expect("the body's event");
    assert_eq!(went_on.span, Some(index), "the body's event is in the call's span after the answer");
}

#[test]
fn an_outer_span_for_the_same_tool_is_reused_and_another_tools_span_is_a_parent() {
    let _keys = keys();
    let (store, capture) = (MemoryStore::new(), Capture::default());
    capture.run(|| {
        let outer = tracing::info_span!(
            target: "my_agent",
            "execute_tool send_note",
            "gen_ai.tool.call.id" = "call_7",
            "idem.outcome" = Empty,
            "idem.key" = Empty,
            "error.type" = Empty,
        );
        outer.in_scope(|| send_note(&store, 6, "hello", false)).unwrap();
    });
    {
        let seen = capture.seen();
        let (index, span) = seen.only_span(SEND_NOTE);
        assert_eq!(span.target, "my_agent", "no second span: the caller's own is the one");
        assert_eq!(span.field("gen_ai.tool.call.id"), Some("call_7"));
        assert_eq!(span.field("idem.outcome"), Some("fresh"), "idem records into the fields it declares");
        assert_eq!(span.field("idem.key"), Some("note:6"));
        assert_eq!(seen.events_saying("writing the note").next().unwrap().span, Some(index));
    }
    let capture = Capture::default();
    capture.run(|| {
        let agent = tracing::info_span!(target: "my_agent", "execute_tool plan_week");
        agent.in_scope(|| send_note(&store, 7, "hello", false)).unwrap();
    });
    let seen = capture.seen();
    let (agent, _) = seen.only_span("execute_tool plan_week");
    let (_, span) = the_note_span(&seen);
    assert_eq!(span.parent, Some(agent), "another tool's span is the parent of idem's");
    assert_eq!(span.field("idem.outcome"), Some("fresh"));
}

#[test]
fn keys_can_be_shown_as_hashes() {
    let _keys = keys();
    let (store, capture) = (MemoryStore::new(), Capture::default());
    set_key_in_telemetry(KeyInTelemetry::Hashed);
    let answer = capture.run(|| send_note(&store, 8, "hello", false));
    set_key_in_telemetry(KeyInTelemetry::Derived);
    answer.unwrap();
    let seen = capture.seen();
    let (_, span) = the_note_span(&seen);
    let hash = key_hash("note:8");
    assert_eq!(span.field("idem.key"), Some(hash.as_str()));
    let event = seen.events_saying("idempotent call").next().unwrap();
    assert_eq!(event.field("key"), Some(hash.as_str()), "the event shows the same hash");
    assert!(!format!("{seen:?}").contains("note:8"), "the key itself appears nowhere");
}
