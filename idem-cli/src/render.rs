//! How records are shown: one line per record for `list`, a block for `show`, and one JSON
//! object per line with `--json`. Times are RFC 3339 (UTC) with how long ago they were.

use std::time::{SystemTime, UNIX_EPOCH};

use idem_runtime::store::{ListedRecord, RecordState, StateCount, rfc3339};
use serde_json::{Value, json};

pub(crate) fn line(entry: &ListedRecord) -> String {
    let record = &entry.record;
    format!(
        "{:<12} {:<30} {}  (since {})",
        state(&record.state),
        entry.namespace,
        entry.key,
        when(record.created_at_ms)
    )
}

pub(crate) fn detail(entry: &ListedRecord) -> String {
    let (namespace, key, record) = (&entry.namespace, &entry.key, &entry.record);
    let mut out = format!(
        "namespace: {namespace}\nkey:       {key}\nstate:     {}\ntoken:     {}\nrequest:   {}\ncreated:   {}\nupdated:   {}",
        state(&record.state),
        record.token.0,
        record.request,
        when(record.created_at_ms),
        when(record.updated_at_ms),
    );
    match &record.state {
        RecordState::InProgress { lease_until_ms, progress, .. } => {
            out += &format!("\nlease end: {}", when(*lease_until_ms));
            if let Some(progress) = progress {
                out += &format!("\nprogress:  {}", one_line(progress));
            }
        }
        RecordState::Completed { result } => out += &format!("\nresult:    {result}"),
        RecordState::Failed { error } => out += &format!("\nerror:     {error}"),
        // A state of a newer runtime: the command pins its runtime (`=x.y.z`), so it knows
        // every state the runtime reads; the line above says which.
        _ => {}
    }
    if let Some(until) = record.retain_until_ms {
        out += &format!("\nkept until {}", when(until));
    }
    out
}

/// A record as one JSON object: stored JSON (request, result, error) as JSON, times as
/// RFC 3339.
pub(crate) fn json_line(entry: &ListedRecord) -> String {
    let record = &entry.record;
    let stored = |text: &str| serde_json::from_str::<Value>(text).unwrap_or_else(|_| Value::String(text.into()));
    let mut object = json!({
        "namespace": entry.namespace,
        "key": entry.key,
        "state": state(&record.state),
        "token": record.token.0,
        "request": stored(&record.request),
        "created_at": rfc3339(record.created_at_ms),
        "updated_at": rfc3339(record.updated_at_ms),
    });
    match &record.state {
        RecordState::InProgress { lease_until_ms, progress, .. } => {
            object["lease_until"] = json!(rfc3339(*lease_until_ms));
            object["progress"] = json!(progress);
        }
        RecordState::Completed { result } => object["result"] = stored(result),
        RecordState::Failed { error } => object["error"] = stored(error),
        _ => {}
    }
    if let Some(until) = record.retain_until_ms {
        object["retain_until"] = json!(rfc3339(until));
    }
    object.to_string()
}

pub(crate) fn count(count: &StateCount) -> String {
    format!("{:<12} {:<30} {:>8}  (oldest {})", count.state, count.namespace, count.records, when(count.oldest_ms))
}

pub(crate) fn json_count(count: &StateCount) -> String {
    json!({
        "namespace": count.namespace,
        "state": count.state,
        "records": count.records,
        "oldest": rfc3339(count.oldest_ms),
    })
    .to_string()
}

/// `text` on one line: control characters (a newline in a progress message) are escaped,
/// so a message can never start a line of its own that looks like another field.
fn one_line(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() }).collect()
}

fn state(state: &RecordState) -> &'static str {
    match state {
        RecordState::InProgress { lease_expired: false, .. } => "in_progress",
        RecordState::InProgress { lease_expired: true, .. } => "abandoned",
        RecordState::Completed { .. } => "completed",
        RecordState::Failed { .. } => "failed",
        // RecordState is non-exhaustive; the command pins its runtime, so this is never shown.
        _ => "unknown",
    }
}

/// A store time as RFC 3339 and relative to now: `2026-12-01T14:03:05.120Z (12s ago)`.
pub(crate) fn when(at_ms: i64) -> String {
    format!("{} ({})", rfc3339(at_ms), age(at_ms))
}

/// A store time relative to now, e.g. `12s ago` or `in 4m`.
fn age(at_ms: i64) -> String {
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
    let (delta, future) = if at_ms > now_ms { (at_ms - now_ms, true) } else { (now_ms - at_ms, false) };
    let seconds = delta / 1000;
    let text = match seconds {
        0..60 => format!("{seconds}s"),
        60..3600 => format!("{}m", seconds / 60),
        3600..86400 => format!("{}h", seconds / 3600),
        _ => format!("{}d", seconds / 86400),
    };
    if future { format!("in {text}") } else { format!("{text} ago") }
}
