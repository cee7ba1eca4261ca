//! Key names, and records and budget windows read back from their hashes.

use std::collections::HashMap;

use redis::Value;

use crate::store::budget::{Adjusted, BudgetChange, BudgetWindow, change_text};
use crate::store::{Record, RecordId, RecordState, StoreError, Token};

/// The name of a record's hash: `<prefix>:r:<namespace length>:<namespace>:<key>`. The
/// length keeps names unambiguous whatever the namespace holds, and a namespace's records
/// share a name prefix that `SCAN` can match.
pub(super) fn record_key(prefix: &str, id: RecordId<'_>) -> String {
    format!("{}{}", namespace_prefix(prefix, id.namespace), id.key)
}

/// What every record key of `namespace` starts with.
pub(super) fn namespace_prefix(prefix: &str, namespace: &str) -> String {
    format!("{prefix}:r:{}:{namespace}:", namespace.len())
}

/// The store's marker, which a tool's first connection writes and the `idem` command
/// looks for.
pub(super) fn marker_key(prefix: &str) -> String {
    format!("{prefix}:store")
}

/// The index of in-progress records: a sorted set of their names, by reservation time.
pub(super) fn running_index(prefix: &str) -> String {
    format!("{prefix}:running")
}

/// The index of settled records: a sorted set of their names, by the end of their
/// retention. The settling script takes off what Redis expired, so it does not grow
/// without a purge.
pub(super) fn settled_index(prefix: &str) -> String {
    format!("{prefix}:settled")
}

/// The operator's index of budget windows: a set of their names.
pub(super) fn windows_index(prefix: &str) -> String {
    format!("{prefix}:budgets")
}

/// A budget window's hash: `<prefix>:b:<budget length>:<budget>:<scope length>:<scope>:<start>`
/// (`idem:b:7:refunds:0::1767225600000`), text an operator can read and type; the lengths
/// keep names unambiguous whatever a budget or scope holds, as in records' names.
pub(super) fn window_key(prefix: &str, budget: &str, scope: &str, start_ms: i64) -> String {
    format!("{}{start_ms}", window_prefix(prefix, budget, Some(scope)))
}

/// What the names of `budget`'s windows (of `scope`, if given) start with.
pub(super) fn window_prefix(prefix: &str, budget: &str, scope: Option<&str>) -> String {
    match scope {
        Some(scope) => format!("{prefix}:b:{}:{budget}:{}:{scope}:", budget.len(), scope.len()),
        None => format!("{prefix}:b:{}:{budget}:", budget.len()),
    }
}

/// [`window_prefix`] as this store wrote it before its names were readable, with NUL bytes
/// (`<prefix>:b:<budget>\0<scope>\0<start>`): a window an older version created keeps that
/// name until it expires, so the scripts charge, refund and adjust it under it.
pub(super) fn legacy_window_prefix(prefix: &str, budget: &str, scope: Option<&str>) -> String {
    match scope {
        Some(scope) => format!("{prefix}:b:{budget}\0{scope}\0"),
        None => format!("{prefix}:b:{budget}\0"),
    }
}

/// A reply's text items (bulk strings, simple strings, integers), in order.
pub(super) fn texts(value: Value) -> Result<Vec<String>, StoreError> {
    let Value::Array(items) = value else {
        return Err(StoreError::Corrupt(format!("unexpected reply {value:?}")));
    };
    items.into_iter().map(text).collect()
}

/// One text item of a reply.
pub(super) fn text(value: Value) -> Result<String, StoreError> {
    match value {
        Value::BulkString(bytes) => {
            String::from_utf8(bytes).map_err(|e| StoreError::Corrupt(format!("a value that is not UTF-8 text: {e}")))
        }
        Value::SimpleString(text) => Ok(text),
        Value::Int(n) => Ok(n.to_string()),
        other => Err(StoreError::Corrupt(format!("unexpected reply item {other:?}"))),
    }
}

/// A flat `field, value, ...` list as a map.
pub(super) fn hash(flat: impl IntoIterator<Item = String>) -> HashMap<String, String> {
    let mut flat = flat.into_iter();
    let mut fields = HashMap::new();
    while let (Some(field), Some(value)) = (flat.next(), flat.next()) {
        fields.insert(field, value);
    }
    fields
}

/// A decimal number of a hash or reply.
pub(super) fn number(fields: &HashMap<String, String>, field: &str) -> Result<Option<i64>, StoreError> {
    fields
        .get(field)
        .map(|value| value.parse().map_err(|_| StoreError::Corrupt(format!("{field} is not a number: {value:?}"))))
        .transpose()
}

fn required(fields: &HashMap<String, String>, field: &str) -> Result<i64, StoreError> {
    number(fields, field)?.ok_or_else(|| StoreError::Corrupt(format!("no {field}")))
}

/// The record a hash holds, read at `now_ms` by the server's clock; `None` for no hash or a
/// tombstone (a `token` without a `state`).
pub(super) fn record(fields: &HashMap<String, String>, now_ms: i64, id: &str) -> Result<Option<Record>, StoreError> {
    let Some(state) = fields.get("state") else { return Ok(None) };
    let corrupt = |what: String| StoreError::Corrupt(format!("{id}: {what}"));
    let read = || -> Result<Record, StoreError> {
        let lease = number(fields, "lease")?;
        let lease = (lease, lease.map(|until| until <= now_ms));
        let state =
            RecordState::from_columns(state, fields.get("result").cloned(), lease, fields.get("progress").cloned())
                .map_err(StoreError::Corrupt)?;
        let token = required(fields, "token")?;
        Ok(Record {
            request: fields.get("request").cloned().ok_or_else(|| StoreError::Corrupt("no request".to_owned()))?,
            token: Token(u64::try_from(token).map_err(|_| StoreError::Corrupt(format!("token {token}")))?),
            created_at_ms: required(fields, "created")?,
            updated_at_ms: required(fields, "updated")?,
            retain_until_ms: number(fields, "retain")?,
            state,
        })
    };
    read().map(Some).map_err(|error| match error {
        StoreError::Corrupt(what) => corrupt(what),
        other => other,
    })
}

/// The window a hash holds; `start_ms` and `limit` stand in for a window never charged.
pub(super) fn window(
    fields: &HashMap<String, String>,
    (budget, scope): (&str, &str),
    start_ms: i64,
    window_ms: i64,
    limit: i64,
) -> Result<BudgetWindow, StoreError> {
    let adjusted = match (fields.get("adj_by"), fields.get("adj_kind"), fields.get("adj_note")) {
        (Some(by), Some(kind), Some(note)) => {
            let amount = required(fields, "adj_amount")?;
            let change = if kind == "raise" { BudgetChange::Raise(amount) } else { BudgetChange::Reset };
            let change = change_text(change, amount);
            Some(Adjusted { by: by.clone(), at_ms: required(fields, "adj_at")?, change, note: note.clone() })
        }
        _ => None,
    };
    Ok(BudgetWindow::new(
        fields.get("budget").cloned().unwrap_or_else(|| budget.to_owned()),
        fields.get("scope").cloned().unwrap_or_else(|| scope.to_owned()),
        (number(fields, "start")?.unwrap_or(start_ms), number(fields, "window")?.unwrap_or(window_ms)),
        number(fields, "used")?.unwrap_or(0),
        number(fields, "limit")?.unwrap_or(limit),
        number(fields, "raised")?.unwrap_or(0),
        adjusted,
    ))
}
