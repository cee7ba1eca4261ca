//! How records are shown: one line per record for `list`, a block for `show`.

use std::time::{SystemTime, UNIX_EPOCH};

use idem_runtime::store::{ListedRecord, Record, RecordState};

pub fn line(entry: &ListedRecord) -> String {
    let record = &entry.record;
    format!("{:<12} {:<30} {}  (since {})", state(record), entry.namespace, entry.key, age(record.created_at_ms))
}

pub fn detail(namespace: &str, key: &str, record: &Record) -> String {
    let mut out = format!(
        "namespace: {namespace}\nkey:       {key}\nstate:     {}\ntoken:     {}\nrequest:   {}\ncreated:   {}\nupdated:   {}",
        state(record),
        record.token.0,
        record.request,
        age(record.created_at_ms),
        age(record.updated_at_ms),
    );
    match &record.state {
        RecordState::InProgress { lease_until_ms, progress, .. } => {
            out += &format!("\nlease end: {}", age(*lease_until_ms));
            if let Some(progress) = progress {
                out += &format!("\nprogress:  {}", one_line(progress));
            }
        }
        RecordState::Completed { result } => out += &format!("\nresult:    {result}"),
        RecordState::Failed { error } => out += &format!("\nerror:     {error}"),
    }
    if let Some(until) = record.retain_until_ms {
        out += &format!("\nkept until {}", age(until));
    }
    out
}

/// `text` on one line: control characters (a newline in a progress message) are escaped,
/// so a message can never start a line of its own that looks like another field.
fn one_line(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() }).collect()
}

fn state(record: &Record) -> &'static str {
    match record.state {
        RecordState::InProgress { lease_expired: false, .. } => "in_progress",
        RecordState::InProgress { lease_expired: true, .. } => "abandoned",
        RecordState::Completed { .. } => "completed",
        RecordState::Failed { .. } => "failed",
    }
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
