//! The read-only status of a key, behind every generated `<tool>_status` function.

use std::future::Future;

use serde::de::DeserializeOwned;
use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::approval::State;
use crate::call::Tool;
use crate::call::answers::{running, store_failed};
use crate::error::{Error, ErrorCode};
use crate::key::{Key, KeyPart};
use crate::store::{Record, RecordId, RecordState, Store, StoreError};

/// Where a tool's action for one key stands, as `<tool>_status` reports it.
///
/// It serializes for a model as `{"status": "completed", "result": ...}`,
/// `{"status": "in_progress", "since_ms": ..., "lease_until_ms": ..., "retry_after_ms": ...,
/// "progress": ...}` (`progress` left out when the body reported none),
/// `{"status": "unknown", "since_ms": ...}`, `{"status": "failed", "error": ...}`,
/// `{"status": "not_found"}`, and for tools with `approval`:
/// `{"status": "awaiting_approval", "since_ms", "expires_at_ms", "text"}`,
/// `{"status": "approved", "by", "at_ms"}`, `{"status": "declined", "by", "at_ms", "note"}`
/// (`note` left out when none was given) and `{"status": "approval_expired", "since_ms",
/// "expired_at_ms"}`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Status<T> {
    /// No call with this key is recorded: it never ran, it failed and was released, or
    /// its record was purged after retention.
    NotFound,
    /// A call is running.
    InProgress {
        /// When it started, in milliseconds since the Unix epoch, by the store's clock.
        since_ms: i64,
        /// When its lease ends, by the store's clock. A running body's lease is renewed
        /// every third of it, so it moves on while the call runs.
        lease_until_ms: i64,
        /// The last progress message the body reported (`idem::progress`), if any.
        progress: Option<String>,
        /// How long to wait before checking again, in milliseconds: see
        /// [`Running::retry_after`](crate::error::Running::retry_after).
        retry_after_ms: u64,
    },
    /// The action happened; its result.
    Completed(T),
    /// The action failed with an error that the tool keeps as final (`on_error = keep`).
    Failed(serde_json::Value),
    /// A call started and stopped renewing its lease before it finished (a crash, a panic,
    /// a cancellation, or a process paused past its lease): whether the action happened is
    /// unknown. Check with the provider or a person, and read the status again later: a
    /// call that was only paused may still finish, and the status then reads `Completed`.
    Unknown {
        /// When the abandoned call started.
        since_ms: i64,
    },
    /// The action waits for a person's approval (`approval`); nothing ran.
    AwaitingApproval {
        /// When approval was asked for, by the store's clock.
        since_ms: i64,
        /// When the request expires without a decision.
        expires_at_ms: i64,
        /// What the person is asked to approve.
        text: String,
    },
    /// A person approved the action; the next call runs it.
    Approved {
        /// Who approved.
        by: String,
        /// When, by the store's clock.
        at_ms: i64,
    },
    /// A person declined the action; nothing ran, and calls answer DECLINED.
    Declined {
        /// Who declined.
        by: String,
        /// When, by the store's clock.
        at_ms: i64,
        /// Why, if they said.
        note: Option<String>,
    },
    /// The action's approval request expired without a decision; nothing ran. The next
    /// call asks anew.
    ApprovalExpired {
        /// When approval was asked for.
        since_ms: i64,
        /// When the request expired.
        expired_at_ms: i64,
    },
}

impl<T: Serialize> Serialize for Status<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        match self {
            Status::NotFound => map.serialize_entry("status", "not_found")?,
            Status::InProgress { since_ms, lease_until_ms, progress, retry_after_ms } => {
                map.serialize_entry("status", "in_progress")?;
                map.serialize_entry("since_ms", since_ms)?;
                map.serialize_entry("lease_until_ms", lease_until_ms)?;
                map.serialize_entry("retry_after_ms", retry_after_ms)?;
                if let Some(progress) = progress {
                    map.serialize_entry("progress", progress)?;
                }
            }
            Status::Completed(result) => {
                map.serialize_entry("status", "completed")?;
                map.serialize_entry("result", result)?;
            }
            Status::Failed(error) => {
                map.serialize_entry("status", "failed")?;
                map.serialize_entry("error", error)?;
            }
            Status::Unknown { since_ms } => {
                map.serialize_entry("status", "unknown")?;
                map.serialize_entry("since_ms", since_ms)?;
            }
            Status::AwaitingApproval { since_ms, expires_at_ms, text } => {
                map.serialize_entry("status", "awaiting_approval")?;
                map.serialize_entry("since_ms", since_ms)?;
                map.serialize_entry("expires_at_ms", expires_at_ms)?;
                map.serialize_entry("text", text)?;
            }
            Status::Approved { by, at_ms } => {
                map.serialize_entry("status", "approved")?;
                map.serialize_entry("by", by)?;
                map.serialize_entry("at_ms", at_ms)?;
            }
            Status::Declined { by, at_ms, note } => {
                map.serialize_entry("status", "declined")?;
                map.serialize_entry("by", by)?;
                map.serialize_entry("at_ms", at_ms)?;
                if let Some(note) = note {
                    map.serialize_entry("note", note)?;
                }
            }
            Status::ApprovalExpired { since_ms, expired_at_ms } => {
                map.serialize_entry("status", "approval_expired")?;
                map.serialize_entry("since_ms", since_ms)?;
                map.serialize_entry("expired_at_ms", expired_at_ms)?;
            }
        }
        map.end()
    }
}

/// Reads the status of a sync tool's key, waiting for the store on this thread. Never
/// reserves.
#[doc(hidden)]
pub fn status_sync<S, T>(tool: &'static Tool, store: &S, key_parts: &[&dyn KeyPart]) -> Result<Status<T>, Error>
where
    S: Store + ?Sized,
    T: DeserializeOwned,
{
    crate::call::claim(tool)?;
    let key = tool.key(tool.status_fn, key_parts)?;
    crate::store::block_on(read_status(tool, &key, store))
}

/// The record id of a tool's key, for `<tool>_record_id`.
#[doc(hidden)]
pub fn record_id(tool: &'static Tool, key_parts: &[&dyn KeyPart]) -> Result<crate::store::OwnedRecordId, Error> {
    crate::call::claim(tool)?;
    let key = tool.key(tool.name, key_parts)?;
    Ok(crate::store::OwnedRecordId { namespace: tool.namespace, key })
}

/// Reads the status of an async tool's key. Never reserves. The key is built before the
/// returned future starts, so the future holds no key part and is `Send` when the store is.
#[doc(hidden)]
pub fn status_async<'s, S, T>(
    tool: &'static Tool,
    store: &'s S,
    key_parts: &[&dyn KeyPart],
) -> impl Future<Output = Result<Status<T>, Error>> + Send + 's
where
    S: Store + ?Sized,
    T: DeserializeOwned,
{
    let key = crate::call::claim(tool).and_then(|()| tool.key(tool.status_fn, key_parts));
    async move { read_status(tool, &key?, store).await }
}

/// The status of `tool`'s record under `key`; for a tool with approvals whose action has
/// no record, where its approval stands.
async fn read_status<S, T>(tool: &Tool, key: &Key, store: &S) -> Result<Status<T>, Error>
where
    S: Store + ?Sized,
    T: DeserializeOwned,
{
    let id = RecordId { namespace: tool.namespace, key: key.as_str() };
    let read = store.read(id).await;
    if tool.approval.is_none() || !matches!(read, Ok(None)) {
        return status_of(tool, key, read);
    }
    let state = crate::approval::state(store, id).await.map_err(|error| store_failed(tool, key, &error).1)?;
    Ok(match state {
        None => Status::NotFound,
        Some(State::Pending(request)) => Status::AwaitingApproval {
            since_ms: request.asked_at_ms,
            expires_at_ms: request.expires_at_ms,
            text: request.text,
        },
        Some(State::Approved(_, decision)) => Status::Approved { by: decision.by, at_ms: decision.at_ms },
        Some(State::Declined(_, decision)) => {
            Status::Declined { by: decision.by, at_ms: decision.at_ms, note: decision.note }
        }
        Some(State::Expired(request)) => {
            Status::ApprovalExpired { since_ms: request.asked_at_ms, expired_at_ms: request.expires_at_ms }
        }
    })
}

fn status_of<T: DeserializeOwned>(
    tool: &Tool,
    key: &Key,
    read: Result<Option<Record>, StoreError>,
) -> Result<Status<T>, Error> {
    let record = match read {
        Ok(Some(record)) => record,
        Ok(None) => return Ok(Status::NotFound),
        Err(error) => return Err(store_failed(tool, key, &error).1),
    };
    let unreadable = |error: serde_json::Error| {
        Error::new(
            ErrorCode::RecordUnreadable,
            format!("{}: the record for {key} does not read as this tool's result ({error})", tool.status_fn),
        )
        .with_suggestion(format!("a person must inspect the record for {key}"))
    };
    Ok(match record.state {
        RecordState::InProgress { lease_expired: false, lease_until_ms, progress } => {
            let running = running(tool, record.created_at_ms, lease_until_ms, progress);
            let retry_after_ms = u64::try_from(running.retry_after.as_millis()).unwrap_or(u64::MAX);
            Status::InProgress {
                since_ms: record.created_at_ms,
                lease_until_ms,
                progress: running.progress,
                retry_after_ms,
            }
        }
        RecordState::InProgress { lease_expired: true, .. } => Status::Unknown { since_ms: record.created_at_ms },
        RecordState::Completed { result } => Status::Completed(serde_json::from_str(&result).map_err(unreadable)?),
        RecordState::Failed { error } => Status::Failed(serde_json::from_str(&error).map_err(unreadable)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_for_a_model() {
        let completed: Status<u32> = Status::Completed(0);
        assert_eq!(serde_json::to_string(&completed).unwrap(), r#"{"status":"completed","result":0}"#);
        let running: Status<u32> =
            Status::InProgress { since_ms: 1, lease_until_ms: 2, progress: None, retry_after_ms: 1000 };
        assert_eq!(
            serde_json::to_string(&running).unwrap(),
            r#"{"status":"in_progress","since_ms":1,"lease_until_ms":2,"retry_after_ms":1000}"#
        );
        let reporting: Status<u32> = Status::InProgress {
            since_ms: 1,
            lease_until_ms: 2,
            progress: Some("page 3 of 9".into()),
            retry_after_ms: 1000,
        };
        assert_eq!(
            serde_json::to_string(&reporting).unwrap(),
            r#"{"status":"in_progress","since_ms":1,"lease_until_ms":2,"retry_after_ms":1000,"progress":"page 3 of 9"}"#
        );
        assert_eq!(serde_json::to_string(&Status::<u32>::NotFound).unwrap(), r#"{"status":"not_found"}"#);
    }
}
