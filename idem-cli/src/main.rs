//! `idem`: an operator's view of an idem store, SQLite, PostgreSQL or Redis.
//!
//! ```text
//! idem [--db PATH|URL] [--json] list [--state in_progress|abandoned|completed|failed] [--namespace NS] [--scope SCOPE] [--older-than AGE] [--limit N]
//! idem [--db PATH|URL] [--json] count
//! idem [--db PATH|URL] [--json] show NAMESPACE KEY
//! idem [--db PATH|URL] [--json] purge [--batch N]
//! idem [--db PATH|URL] resolve NAMESPACE KEY (--done JSON|-|@FILE [--rmcp] | --release) [--force] [--yes]
//! idem [--db PATH|URL] reopen NAMESPACE KEY [--by NAME [--note TEXT]] [--yes]
//! idem [--db PATH|URL] [--json] approvals [--namespace NS] [--scope SCOPE]
//! idem [--db PATH|URL] approve NAMESPACE KEY --by NAME [--note TEXT] [--yes]
//! idem [--db PATH|URL] decline NAMESPACE KEY --by NAME [--note TEXT] [--yes]
//! idem [--db PATH|URL] [--json] budgets [--budget NAME] [--scope SCOPE] [--current]
//! idem [--db PATH|URL] raise BUDGET AMOUNT [--scope SCOPE] [--window START] --by NAME --note TEXT [--yes]
//! idem [--db PATH|URL] reset BUDGET [--scope SCOPE] [--window START] --by NAME --note TEXT [--yes]
//! ```
//!
//! The store is `--db` (anywhere on the line: an SQLite path, a `postgres://` URL, with
//! `--schema`, or, with `--prefix`, a Redis server's `redis://[user:password@]host[:port][/db]`
//! URL or a Redis Cluster's `redis+cluster://[user:password@]host:port[,host:port...]`, which
//! has no database number and needs one node, several in case one is down), else `IDEM_DB`,
//! else the tools' default store, `idem/idem.db` in the
//! user's data directory. It must already be an idem store of this version: anything else
//! is refused in one line and left as it was. `resolve` settles a key left in progress by
//! a crash, after you checked with the provider what happened: `--done` records the
//! provider's result, `--release` lets the next call run the action. It prints the record
//! first, asks for confirmation unless `--yes` is given, and refuses a key whose lease is
//! live unless `--force`. `approvals` lists the requests of tools with `approval` that
//! wait for a person; `approve` and `decline` decide one, as NAME. `budgets` shows what
//! the budgets of tools with `budget = ...` used per scope and window; `raise` and `reset`
//! change one window, recorded with who and why. `idem --help` and `idem help <command>`
//! say exactly what each does.

#![warn(unreachable_pub)] // library code only: tests and benches keep their `pub` items

/// Prints a line to stdout, ignoring a closed pipe (`idem list | head`): a reader that
/// stopped listening is not an error.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

mod approvals;
mod args;
mod budgets;
mod command;
mod keys;
mod render;

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use idem_runtime::store::{Admin, PgStore, RedisStore, SqliteStore, StoreError};

fn main() -> ExitCode {
    // Usage mistakes exit with 2 and clap's message; failures with 1 and one line.
    let cli = args::Cli::parse();
    let changes = match cli.command {
        args::Command::Resolve { .. } => Some("resolve"),
        args::Command::Reopen { .. } => Some("reopen"),
        args::Command::Approve { .. } => Some("approve"),
        args::Command::Decline { .. } => Some("decline"),
        args::Command::Raise { .. } => Some("raise"),
        args::Command::Reset { .. } => Some("reset"),
        _ => None,
    };
    if cli.json
        && let Some(name) = changes
    {
        args::Cli::command()
            .error(
                clap::error::ErrorKind::ArgumentConflict,
                format!(
                    "--json does not apply to {name}: it prints what it changes as text and asks before \
                     changing it. --json applies to list, count, show, purge, approvals and budgets"
                ),
            )
            .exit();
    }
    let stdin = std::io::stdin();
    let mut confirm = |question: &str| {
        print!("{question} [y/N] ");
        let _ = std::io::stdout().flush();
        let mut answer = String::new();
        stdin.lock().read_line(&mut answer).is_ok() && matches!(answer.trim(), "y" | "Y" | "yes")
    };
    let db = match cli.db {
        Some(db) => Ok(db),
        // The file the tools' default store uses, resolved the same way.
        None => idem_runtime::store::default_store_path().map_err(|error| error.to_string()),
    };
    let store = db.and_then(|db| open_existing(&db, &cli.schema, &cli.prefix));
    let ran = store.and_then(|store| command::run(&*store, cli.command, cli.json, &mut confirm));
    match ran {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("idem: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The store at `db`, which must already be one: a typo must not read as "no stuck keys",
/// and creating a store, or changing a file that is not one, is never this command's doing.
fn open_existing(db: &Path, schema: &str, prefix: &str) -> Result<Box<dyn Admin>, String> {
    let text = db.to_string_lossy();
    let redis = ["redis://", "rediss://", "valkey://", "redis+cluster://"];
    if redis.iter().any(|scheme| text.starts_with(scheme)) {
        return Ok(Box::new(RedisStore::builder(&text).prefix(prefix).open_existing().map_err(said)?));
    }
    if text.starts_with("postgres://") || text.starts_with("postgresql://") {
        let store = PgStore::builder(&text).schema(schema).build().map_err(said)?;
        store.check_existing_blocking().map_err(said)?;
        return Ok(Box::new(store));
    }
    match std::fs::metadata(db) {
        Ok(meta) if meta.is_dir() => Err(format!("{}: is a directory, not a store file", db.display())),
        Ok(_) => Ok(Box::new(SqliteStore::builder(db).open_existing().map_err(said)?)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
            "no store at {}: this command never creates one (a tool creates its store on first use); \
             check the path, or --db / IDEM_DB",
            db.display()
        )),
        Err(e) => Err(format!("{}: {e}", db.display())),
    }
}

/// A store's error as one line, without "store failed: ": opening it did not fail, it was
/// refused.
fn said(error: StoreError) -> String {
    match error {
        StoreError::Backend(cause) => cause.to_string(),
        other => other.to_string(),
    }
}
