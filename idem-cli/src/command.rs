//! The command line, parsed by hand: four subcommands and a few flags do not need a
//! parser library.

use std::path::PathBuf;

use idem_runtime::store::{RecordId, RecordState, StateFilter, StoreError};
use idem_runtime::{DEFAULT_RETAIN, SqliteStore};

use crate::render;

pub const USAGE: &str = "usage:
  idem [--db PATH] list [--state in_progress|abandoned|completed|failed] [--namespace NS] [--scope SCOPE] [--limit N]
  idem [--db PATH] show NAMESPACE KEY
  idem [--db PATH] purge [--limit N]
  idem [--db PATH] resolve NAMESPACE KEY (--done JSON [--rmcp] | --release) [--force] [--yes]

The store is --db, else $IDEM_DB, else the tools' default store (idem/idem.db in the
user's data directory, e.g. ~/.local/share/idem/idem.db); it must exist: the command
never creates one.

resolve settles a key left in progress after you checked with the provider what
happened: --done JSON records the provider's result as the tool would have stored it,
--release lets the next call run the action again. A key whose lease is still live may
belong to a call that is still running: resolving it needs --force. A tool served over
MCP (rmcp) stores MCP tool results: --rmcp wraps a plain JSON value the way it does, e.g.
  idem resolve billing::send_invoice invoice:acme:2026-10 --done '{\"invoice\":\"inv_9\"}' --rmcp";

pub struct Command {
    pub db: PathBuf,
    pub action: Action,
}

pub enum Action {
    List { filter: StateFilter, namespace: Option<String>, scope: Option<String>, limit: usize },
    Show { namespace: String, key: String },
    Purge { limit: usize },
    Resolve { namespace: String, key: String, done: Option<String>, rmcp: bool, force: bool, yes: bool },
}

pub fn parse(args: &[String]) -> Result<Command, String> {
    let mut args = args.iter().map(String::as_str).peekable();
    let mut db = None;
    if args.peek() == Some(&"--db") {
        args.next();
        db = Some(PathBuf::from(args.next().ok_or("--db needs a path")?));
    }
    // Without --db, the file the tools' default store uses ($IDEM_DB, else the user's data
    // directory), resolved the same way.
    let db = match db {
        Some(db) => db,
        None => idem_runtime::default_store_path().map_err(|error| error.to_string())?,
    };
    let subcommand = args.next().ok_or("missing a command")?;
    let mut positional = Vec::new();
    let mut flags: Vec<(&str, Option<&str>)> = Vec::new();
    while let Some(arg) = args.next() {
        match arg {
            "--yes" | "--release" | "--force" | "--rmcp" => flags.push((arg, None)),
            "--state" | "--namespace" | "--scope" | "--limit" | "--done" => {
                flags.push((arg, Some(args.next().ok_or_else(|| format!("{arg} needs a value"))?)));
            }
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}")),
            value => positional.push(value.to_owned()),
        }
    }
    let flag = |name: &str| flags.iter().find(|(f, _)| *f == name).map(|(_, v)| *v);
    let limit = match flag("--limit") {
        Some(Some(text)) => text.parse().map_err(|_| format!("--limit takes a whole number, not {text:?}"))?,
        _ => 100,
    };
    let action = match (subcommand, positional.as_slice()) {
        ("list", []) => {
            let filter = match flag("--state").flatten() {
                None => StateFilter::All,
                Some("in_progress") => StateFilter::InProgress,
                Some("abandoned") => StateFilter::Abandoned,
                Some("completed") => StateFilter::Completed,
                Some("failed") => StateFilter::Failed,
                Some(other) => {
                    return Err(format!("unknown --state {other}: in_progress, abandoned, completed or failed"));
                }
            };
            let (namespace, scope) = (flag("--namespace").flatten(), flag("--scope").flatten());
            Action::List { filter, namespace: namespace.map(str::to_owned), scope: scope.map(str::to_owned), limit }
        }
        ("show", [namespace, key]) => Action::Show { namespace: namespace.clone(), key: key.clone() },
        ("purge", []) => Action::Purge { limit },
        ("resolve", [namespace, key]) => {
            let done = flag("--done").flatten().map(str::to_owned);
            if done.is_some() == flag("--release").is_some() {
                return Err("resolve takes exactly one of --done JSON and --release".into());
            }
            let rmcp = flag("--rmcp").is_some();
            let done = match done {
                Some(json) => {
                    let value = serde_json::from_str::<serde_json::Value>(&json)
                        .map_err(|e| format!("--done takes the provider's result as JSON: {e}"))?;
                    Some(if rmcp { tool_result(value) } else { json })
                }
                None if rmcp => return Err("--rmcp wraps the JSON of --done; it has nothing to wrap".into()),
                None => None,
            };
            let (force, yes) = (flag("--force").is_some(), flag("--yes").is_some());
            Action::Resolve { namespace: namespace.clone(), key: key.clone(), done, rmcp, force, yes }
        }
        ("list" | "show" | "purge" | "resolve", _) => return Err(format!("wrong arguments for {subcommand}")),
        (other, _) => return Err(format!("unknown command {other}")),
    };
    Ok(Command { db, action })
}

impl Action {
    pub fn run(self, store: &SqliteStore, confirm: &mut dyn FnMut(&str) -> bool) -> Result<(), String> {
        match self {
            Action::List { filter, namespace, scope, limit } => {
                let listed = store.list_in_scope(filter, namespace.as_deref(), scope.as_deref(), limit);
                let listed = listed.map_err(|e| e.to_string())?;
                for entry in &listed {
                    say!("{}", render::line(entry));
                }
                eprintln!("{} record(s) in {}", listed.len(), store.path().display());
                Ok(())
            }
            Action::Show { namespace, key } => {
                let id = RecordId { namespace: &namespace, key: &key };
                match store.read(id).map_err(|e| e.to_string())? {
                    Some(record) => {
                        say!("{}", render::detail(&namespace, &key, &record));
                        Ok(())
                    }
                    None => Err(format!("no record for {namespace} {key}")),
                }
            }
            Action::Purge { limit } => {
                let purged = store.purge(limit).map_err(|e| e.to_string())?;
                say!("purged {purged} record(s) past their retention");
                Ok(())
            }
            Action::Resolve { namespace, key, done, rmcp, force, yes } => {
                resolve(store, (&namespace, &key), done, (rmcp, force, yes), confirm)
            }
        }
    }
}

fn resolve(
    store: &SqliteStore,
    (namespace, key): (&str, &str),
    done: Option<String>,
    (rmcp, force, yes): (bool, bool, bool),
    confirm: &mut dyn FnMut(&str) -> bool,
) -> Result<(), String> {
    let id = RecordId { namespace, key };
    let record =
        store.read(id).map_err(|e| e.to_string())?.ok_or_else(|| format!("no record for {namespace} {key}"))?;
    // What was there, so that a mistake can be put back by hand.
    say!("{}", render::detail(namespace, key, &record));
    if let RecordState::InProgress { lease_expired: false, .. } = record.state
        && !force
    {
        return Err(format!(
            "{key}'s lease is live: its call may still be running. Releasing it lets a retry run the action a \
             second time; recording it done hides the running call's own result. Wait until the lease ends \
             (idem show), or pass --force if you know that call is gone; nothing changed"
        ));
    }
    if let Some(json) = &done
        && !rmcp
    {
        check_shape(store, namespace, json)?;
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

/// Refuses a result another completed record of the namespace says the tool cannot read:
/// a plain value where the tool (an rmcp tool) stores MCP tool results.
fn check_shape(store: &SqliteStore, namespace: &str, json: &str) -> Result<(), String> {
    let sibling = store.list(StateFilter::Completed, Some(namespace), 1).map_err(|e| e.to_string())?;
    let Some(RecordState::Completed { result }) = sibling.first().map(|listed| &listed.record.state) else {
        return Ok(()); // nothing to compare with
    };
    let is_tool_result = |text: &str| {
        serde_json::from_str::<serde_json::Value>(text)
            .is_ok_and(|value| value.get("content").is_some_and(|c| c.is_array()))
    };
    if is_tool_result(result) && !is_tool_result(json) {
        return Err(format!(
            "{namespace} stores MCP tool results (a CallToolResult with \"content\"), which {json} is not: its \
             tool could not read it back. Add --rmcp to wrap the value the way the tool does; nothing changed"
        ));
    }
    Ok(())
}

/// A plain JSON value as an rmcp tool stores its structured result (`CallToolResult::structured`).
fn tool_result(value: serde_json::Value) -> String {
    let text = value.to_string();
    serde_json::json!({ "content": [{ "type": "text", "text": text }], "structuredContent": value, "isError": false })
        .to_string()
}
