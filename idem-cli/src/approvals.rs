//! `idem approvals`, `idem approve`, `idem decline`, and `idem reopen` of a declined
//! approval: a person's decisions on the requests of tools with `approval`.

use idem_runtime::approval::{self, DecideError, Request, State};
use idem_runtime::store::{Admin, RecordId, rfc3339};
use serde_json::json;

use crate::keys;
use crate::render::when;

/// `idem approvals`: the requests waiting for a person, oldest first.
pub(crate) fn list(store: &dyn Admin, namespace: Option<&str>, scope: Option<&str>, json: bool) -> Result<(), String> {
    let prefix = scope.map(idem_runtime::store::scope_prefix);
    let waiting = approval::pending(store, namespace, prefix.as_deref()).map_err(|e| e.to_string())?;
    for request in &waiting {
        if json {
            say!("{}", json_line(request));
        } else {
            say!(
                "{:<30} {}  {}  (asked {}, expires {})",
                request.namespace,
                request.key,
                request.text,
                when(request.asked_at_ms),
                when(request.expires_at_ms)
            );
        }
    }
    eprintln!("{} approval request(s) waiting in {}", waiting.len(), store.describe());
    Ok(())
}

fn json_line(request: &Request) -> serde_json::Value {
    let fields = serde_json::from_str::<serde_json::Value>(&request.request).unwrap_or(json!(request.request));
    json!({
        "namespace": request.namespace,
        "key": request.key,
        "text": request.text,
        "request": fields,
        "asked_at": rfc3339(request.asked_at_ms),
        "expires_at": rfc3339(request.expires_at_ms),
    })
}

/// What a decision is about, printed before it is asked for.
fn shown(request: &Request) {
    say!(
        "namespace: {}\nkey:       {}\ntext:      {}\nrequest:   {}\nasked:     {}\nexpires:   {}",
        request.namespace,
        request.key,
        request.text,
        request.request,
        when(request.asked_at_ms),
        when(request.expires_at_ms)
    );
}

/// Where the approval of `namespace`'s action typed as `key` stands, found as records are
/// (see [`keys::search`]): the key it is stored under, and its state.
pub(crate) fn find(store: &dyn Admin, namespace: &str, key: &str) -> Result<Option<(String, State)>, String> {
    keys::search(namespace, key, "approval request", |key| {
        approval::blocking::state(store.as_dyn_store(), RecordId { namespace, key }).map_err(|e| e.to_string())
    })
}

/// `idem approve` (`approved`) or `idem decline`.
pub(crate) fn decide(
    store: &dyn Admin,
    (namespace, key): (&str, &str),
    (approved, by, note): (bool, &str, Option<&str>),
    yes: bool,
    confirm: &mut dyn FnMut(&str) -> bool,
) -> Result<(), String> {
    let (stored, state) = match find(store, namespace, key)? {
        Some((stored, state)) => (stored, Some(state)),
        None => (key.to_owned(), None),
    };
    let (key, id) = (stored.as_str(), RecordId { namespace, key: &stored });
    let request = match state {
        Some(State::Pending(request)) => request,
        other => return Err(not_waiting(namespace, key, other)),
    };
    shown(&request);
    let question = if approved {
        format!("Approve {key} as {by}? The next call of the tool runs it.")
    } else {
        format!("Decline {key} as {by}? Every call of it answers DECLINED until it is reopened.")
    };
    if !yes && !confirm(&question) {
        return Err("nothing changed".into());
    }
    let decided = if approved {
        approval::blocking::approve(store.as_dyn_store(), id, by, note)
    } else {
        approval::blocking::decline(store.as_dyn_store(), id, by, note)
    };
    match decided {
        Ok(_) => {
            say!("{} by {by}", if approved { "approved" } else { "declined" });
            Ok(())
        }
        Err(error) => Err(refused(key, &error)),
    }
}

/// `idem reopen` of an action with no record, whose approval stands as `state` under `key`
/// (as stored): a declined approval is reopened.
pub(crate) fn reopen(
    store: &dyn Admin,
    (namespace, key, state): (&str, &str, State),
    (by, note): (Option<&str>, Option<&str>),
    yes: bool,
    confirm: &mut dyn FnMut(&str) -> bool,
) -> Result<(), String> {
    let id = RecordId { namespace, key };
    let (request, decision) = match state {
        State::Declined(request, decision) => (request, decision),
        other => {
            return Err(format!("no record for {namespace} {key}, and {}", not_waiting(namespace, key, Some(other))));
        }
    };
    let Some(by) = by else {
        return Err(format!(
            "{key}'s approval was declined by {}: reopening it asks a person anew on the next call; say who \
             reopens it with --by NAME; nothing changed",
            decision.by
        ));
    };
    shown(&request);
    say!(
        "declined:  by {} {}{}",
        decision.by,
        when(decision.at_ms),
        decision.note.as_deref().map_or_else(String::new, |note| format!(": {note}"))
    );
    let question = format!("Reopen {key}'s declined approval as {by}? The next call asks a person anew.");
    if !yes && !confirm(&question) {
        return Err("nothing changed".into());
    }
    match approval::blocking::reopen(store.as_dyn_store(), id, by, note) {
        Ok(_) => {
            say!("reopened: the next call of {key} asks for approval anew");
            Ok(())
        }
        Err(error) => Err(refused(key, &error)),
    }
}

/// Why there is nothing to decide for `key`, given where its approval stands.
fn not_waiting(namespace: &str, key: &str, state: Option<State>) -> String {
    match state {
        None => format!(
            "no approval request is waiting for {namespace} {key} (`idem approvals` lists those that are); nothing changed"
        ),
        Some(State::Approved(_, decision)) => {
            format!("{key} was approved already, by {} {}; nothing changed", decision.by, when(decision.at_ms))
        }
        Some(State::Declined(_, decision)) => format!(
            "{key} was declined already, by {} {} (`idem reopen` asks anew); nothing changed",
            decision.by,
            when(decision.at_ms)
        ),
        Some(State::Expired(request)) => format!(
            "{key}'s approval request expired {} without a decision: the next call asks anew; nothing changed",
            when(request.expires_at_ms)
        ),
        Some(_) => format!("{key}'s approval is in a state this command does not know; nothing changed"),
    }
}

fn refused(key: &str, error: &DecideError) -> String {
    format!("{key}: {error}; nothing changed")
}
