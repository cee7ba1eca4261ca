//! What each command does, on an open store.

use idem_runtime::store::DEFAULT_RETAIN;
use idem_runtime::store::{
    Admin, ListQuery, ListedRecord, Record, RecordId, RecordState, StateFilter, Store, StoreError, block_on,
};

use crate::args::{Command, Done, State};
use crate::{approvals, budgets, keys, render};

pub(crate) fn run(
    store: &dyn Admin,
    command: Command,
    json: bool,
    confirm: &mut dyn FnMut(&str) -> bool,
) -> Result<(), String> {
    match command {
        Command::List { state, namespace, scope, older_than, limit } => {
            let filter = match state {
                None => StateFilter::All,
                // `in_progress` means running: an abandoned record (lease ended) has its own state.
                Some(State::InProgress) => StateFilter::Running,
                Some(State::Abandoned) => StateFilter::Abandoned,
                Some(State::Completed) => StateFilter::Completed,
                Some(State::Failed) => StateFilter::Failed,
            };
            let prefix = scope.as_deref().map(idem_runtime::store::scope_prefix);
            let query = ListQuery {
                state: filter,
                namespace: namespace.as_deref(),
                key_prefix: prefix.as_deref(),
                older_than,
                limit,
            };
            let shown = store.list(&query).map_err(|e| e.to_string())?;
            for entry in &shown {
                say!("{}", if json { render::json_line(entry) } else { render::line(entry) });
            }
            // Only a listing that filled its limit may have left records out.
            let matching = if shown.len() == limit {
                store.count_matching(&query).map_err(|e| e.to_string())?.max(limit as u64)
            } else {
                shown.len() as u64
            };
            match matching - shown.len() as u64 {
                0 => eprintln!("{} record(s) in {}", shown.len(), store.describe()),
                more => eprintln!(
                    "the oldest {limit} of {matching} record(s) in {}: stopped at --limit {limit}, {more} more \
                     match (raise --limit to see them)",
                    store.describe()
                ),
            }
            Ok(())
        }
        Command::Count => {
            let counts = store.count().map_err(|e| e.to_string())?;
            for count in &counts {
                say!("{}", if json { render::json_count(count) } else { render::count(count) });
            }
            let total: u64 = counts.iter().map(|count| count.records).sum();
            eprintln!("{total} record(s) in {}", store.describe());
            Ok(())
        }
        Command::Show { namespace, key } => {
            let (key, record) = keys::find(store, &namespace, &key)?;
            let entry = ListedRecord::new(namespace, key, record);
            say!("{}", if json { render::json_line(&entry) } else { render::detail(&entry) });
            Ok(())
        }
        Command::Purge { batch } => {
            let batch = batch as usize;
            // Until a batch comes back short: everything due is removed, each batch one
            // short write, so that the tools' own writes get their turns in between.
            let (mut purged, mut batches) = (0, 0);
            loop {
                let removed = block_on(store.as_dyn_store().purge(batch))
                    .map_err(|e| format!("{e} (after purging {purged} record(s))"))?;
                (purged, batches) = (purged + removed, batches + 1);
                if removed < batch {
                    break;
                }
            }
            if json {
                say!("{}", serde_json::json!({ "purged": purged, "batches": batches }));
            } else {
                say!("purged {purged} record(s) past their retention, in {batches} batch(es) of at most {batch}");
            }
            Ok(())
        }
        Command::Reopen { namespace, key, by, note, yes } => {
            let read = |key: &str| {
                block_on(store.as_dyn_store().read(RecordId { namespace: &namespace, key })).map_err(|e| e.to_string())
            };
            if let Some((stored, record)) = keys::search(&namespace, &key, "record", read)? {
                return reopen(store, (&namespace, stored, record), yes, confirm);
            }
            // An action that never ran has no record: a declined approval may be what to reopen.
            match approvals::find(store, &namespace, &key)? {
                Some((stored, state)) => approvals::reopen(
                    store,
                    (&namespace, &stored, state),
                    (by.as_deref(), note.as_deref()),
                    yes,
                    confirm,
                ),
                None => Err(format!(
                    "no record and no approval request for {namespace} {key} ({}); nothing changed",
                    keys::looked_for(&key)
                )),
            }
        }
        Command::Approvals { namespace, scope } => approvals::list(store, namespace.as_deref(), scope.as_deref(), json),
        Command::Approve { namespace, key, by, note, yes } => {
            approvals::decide(store, (&namespace, &key), (true, &by, note.as_deref()), yes, confirm)
        }
        Command::Decline { namespace, key, by, note, yes } => {
            approvals::decide(store, (&namespace, &key), (false, &by, note.as_deref()), yes, confirm)
        }
        Command::Budgets { budget, scope, current } => {
            budgets::list(store, &budgets::Filter { budget, scope }, current, json)
        }
        Command::Raise { amount, change } => budgets::adjust(store, &change, Some(amount), confirm),
        Command::Reset { change } => budgets::adjust(store, &change, None, confirm),
        Command::Resolve { namespace, key, done, rmcp, release: _, force, yes } => {
            // Read before anything is shown or asked: a file that is not there changes nothing.
            let done = done.map(Done::read).transpose()?;
            let done = done.map(|value| if rmcp { tool_result(value) } else { value.to_string() });
            resolve(store, (&namespace, &key), done, (rmcp, force, yes), confirm)
        }
    }
}

fn resolve(
    store: &dyn Admin,
    (namespace, key): (&str, &str),
    done: Option<String>,
    (rmcp, force, yes): (bool, bool, bool),
    confirm: &mut dyn FnMut(&str) -> bool,
) -> Result<(), String> {
    let (key, record) = shown(store, namespace, key)?;
    let (key, id) = (key.as_str(), RecordId { namespace, key: &key });
    if let RecordState::InProgress { lease_expired: false, .. } = record.state
        && !force
    {
        return Err(format!(
            "{key}'s lease is live: its call may still be running. Releasing it lets a retry run the action a \
             second time; recording it done hides the running call's own result. Wait until the lease ends \
             (idem show), or pass --force if you know that call is gone; nothing changed"
        ));
    }
    if let Some(json) = &done {
        check_shape(store, namespace, json, rmcp)?;
    }
    let question = match &done {
        Some(json) => format!("Record {key} as done with result {json}? Retries will get this result."),
        None => format!("Release {key}? The next call will run the action again."),
    };
    if !yes && !confirm(&question) {
        return Err("nothing changed".into());
    }
    let result = match &done {
        // The tool's own retention is not stored with an unsettled record: keep the default.
        Some(json) => store.resolve_done(id, json, DEFAULT_RETAIN),
        None => store.resolve_release(id),
    };
    match result {
        Ok(()) => {
            say!("{}", if done.is_some() { "recorded as done" } else { "released" });
            Ok(())
        }
        Err(StoreError::Fenced) => Err(format!("{key} is no longer in progress; nothing changed")),
        Err(error) => Err(error.to_string()),
    }
}

/// Finds the record (see [`keys::find`]) and prints it as it is before a change, so that a
/// mistake can be put back by hand: its key as stored, and the record.
fn shown(store: &dyn Admin, namespace: &str, key: &str) -> Result<(String, Record), String> {
    let (key, record) = keys::find(store, namespace, key)?;
    let entry = ListedRecord::new(namespace, key, record);
    say!("{}", render::detail(&entry));
    Ok((entry.key, entry.record))
}

fn reopen(
    store: &dyn Admin,
    (namespace, key, record): (&str, String, Record),
    yes: bool,
    confirm: &mut dyn FnMut(&str) -> bool,
) -> Result<(), String> {
    let entry = ListedRecord::new(namespace, key, record);
    say!("{}", render::detail(&entry));
    let (key, id) = (entry.key.as_str(), RecordId { namespace, key: &entry.key });
    let question = format!(
        "Reopen {key}? Its result above is dropped, and the next call runs the tool's reconcile hook or answers \
         OUTCOME_UNKNOWN."
    );
    if !yes && !confirm(&question) {
        return Err("nothing changed".into());
    }
    match store.reopen(id) {
        Ok(()) => {
            say!("reopened: {key} reads as abandoned");
            Ok(())
        }
        Err(StoreError::Fenced) => {
            Err(format!("{key} is not settled (only a completed or failed record reopens); nothing changed"))
        }
        Err(error) => Err(error.to_string()),
    }
}

/// Refuses a result another completed record of the namespace says the tool cannot read:
/// a plain value where the tool (an rmcp tool) stores MCP tool results, or where an HTTP
/// layer stores responses, and a value wrapped by `--rmcp` where the tool stores plain
/// values.
fn check_shape(store: &dyn Admin, namespace: &str, json: &str, rmcp: bool) -> Result<(), String> {
    let query =
        ListQuery { state: StateFilter::Completed, namespace: Some(namespace), limit: 1, ..ListQuery::default() };
    let sibling = store.list(&query).map_err(|e| e.to_string())?;
    let Some(RecordState::Completed { result }) = sibling.first().map(|listed| &listed.record.state) else {
        return Ok(()); // nothing to compare with
    };
    let is_tool_result = |text: &str| {
        serde_json::from_str::<serde_json::Value>(text)
            .is_ok_and(|value| value.get("content").is_some_and(|c| c.is_array()))
    };
    if is_http_response(result) && !is_http_response(json) {
        return Err(format!(
            "{namespace} stores HTTP responses (an idem::http layer's), which {json} is not: give the response \
             to replay, {{\"status\": 201, \"headers\": [[\"content-type\", \"application/json\"]], \"body\": \"...\"}}, \
             without --rmcp; nothing changed"
        ));
    }
    if is_tool_result(result) && !is_tool_result(json) {
        return Err(format!(
            "{namespace} stores MCP tool results (a CallToolResult with \"content\"), which {json} is not: its \
             tool could not read it back. Add --rmcp to wrap the value the way the tool does; nothing changed"
        ));
    }
    if rmcp && !is_tool_result(result) {
        return Err(format!(
            "{namespace} stores plain values, not MCP tool results (its completed records have no \"content\"): \
             with --rmcp its tool would read back a CallToolResult instead of its value. Drop --rmcp; nothing \
             changed"
        ));
    }
    Ok(())
}

/// Whether a result has the shape an `idem::http` layer stores: a status code, headers as
/// `[name, value]` pairs, and a text or base64 body (or none).
fn is_http_response(text: &str) -> bool {
    let Ok(serde_json::Value::Object(response)) = serde_json::from_str::<serde_json::Value>(text) else {
        return false;
    };
    let status = response.get("status").and_then(|status| status.as_u64()).is_some_and(|s| (100..=999).contains(&s));
    let headers = response.get("headers").is_none_or(|headers| {
        headers.as_array().is_some_and(|headers| {
            headers
                .iter()
                .all(|pair| pair.as_array().is_some_and(|pair| pair.len() == 2 && pair.iter().all(|v| v.is_string())))
        })
    });
    let known = response.keys().all(|field| matches!(field.as_str(), "status" | "headers" | "body" | "body_base64"));
    status && headers && known
}

/// A plain JSON value as an rmcp tool stores its structured result (`CallToolResult::structured`).
fn tool_result(value: serde_json::Value) -> String {
    let text = value.to_string();
    serde_json::json!({ "content": [{ "type": "text", "text": text }], "structuredContent": value, "isError": false })
        .to_string()
}
