//! `idem`: an operator's view of an idem SQLite store.
//!
//! ```text
//! idem [--db PATH] list [--state in_progress|abandoned|completed|failed] [--namespace NS] [--scope SCOPE] [--limit N]
//! idem [--db PATH] show NAMESPACE KEY
//! idem [--db PATH] purge [--limit N]
//! idem [--db PATH] resolve NAMESPACE KEY (--done JSON | --release) [--yes]
//! ```
//!
//! The store is `--db`, else the tools' default store: `IDEM_DB`, else `idem/idem.db` in
//! the user's data directory. `resolve` settles a
//! key left in progress by a crash, after you checked with the provider what happened:
//! `--done` records the provider's result, `--release` lets the next call run the action.
//! It asks for confirmation unless `--yes` is given. `--scope` lists the records of one
//! scope (`scope = expr` tools: a tenant, a user), whose keys start with its hash.

/// Prints a line to stdout, ignoring a closed pipe (`idem list | head`): a reader that
/// stopped listening is not an error.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

mod command;
mod render;

use std::io::{BufRead, Write};
use std::process::ExitCode;

use command::Command;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|arg| arg == "--help" || arg == "-h") {
        say!("{}", command::USAGE);
        return ExitCode::SUCCESS;
    }
    let command = match command::parse(&args) {
        Ok(command) => command,
        Err(message) => {
            eprintln!("idem: {message}\n\n{}", command::USAGE);
            return ExitCode::from(2);
        }
    };
    let stdin = std::io::stdin();
    let mut confirm = |question: &str| {
        print!("{question} [y/N] ");
        let _ = std::io::stdout().flush();
        let mut answer = String::new();
        stdin.lock().read_line(&mut answer).is_ok() && matches!(answer.trim(), "y" | "Y" | "yes")
    };
    match run(command, &mut confirm) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("idem: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command, confirm: &mut dyn FnMut(&str) -> bool) -> Result<(), String> {
    let Command { db, action } = command;
    let store = open_existing(&db)?;
    action.run(&store, confirm)
}

/// The store at `db`, which must exist: a typo must not read as "no stuck keys", and
/// creating a store is what tools do, never this command.
fn open_existing(db: &std::path::Path) -> Result<idem_runtime::SqliteStore, String> {
    let text = db.to_string_lossy();
    if text.starts_with("postgres://") || text.starts_with("postgresql://") {
        return Err(format!(
            "{text}: this command reads SQLite stores only, so far; for a PostgreSQL store, query its \
             idem_records table (see the README's PostgreSQL section)"
        ));
    }
    match std::fs::metadata(db) {
        Ok(meta) if meta.is_dir() => Err(format!("{}: is a directory, not a store file", db.display())),
        Ok(_) => idem_runtime::SqliteStore::open(db).map_err(|e| e.to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
            "no store at {}: this command never creates one (a tool creates its store on first use); \
             check the path, or --db / IDEM_DB",
            db.display()
        )),
        Err(e) => Err(format!("{}: {e}", db.display())),
    }
}
