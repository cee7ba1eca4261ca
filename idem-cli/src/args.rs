//! The command line: what `idem --help` and `idem help <command>` say.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// An operator's view of an idem store.
///
/// Which keys are stuck, what a record holds, and settling a stuck key by hand once you
/// know what happened.
#[derive(Debug, Parser)]
#[command(name = "idem", version, propagate_version = true, after_long_help = AFTER_HELP)]
pub(crate) struct Cli {
    /// The store: an SQLite file, a PostgreSQL URL (postgres://user@host/db), a Redis URL
    /// (redis://[user:password@]host[:port][/db]) or a Redis Cluster URL
    /// (redis+cluster://[user:password@]host:port[,host:port...]: no database number; one
    /// node is enough, several in case one is down). Default:
    /// $IDEM_DB, else the tools' default store (idem/idem.db in the user's data directory).
    /// It must already be an idem store of this idem's schema version: anything else is
    /// refused and left exactly as it was (see Stores in `idem --help`).
    #[arg(long, global = true, value_name = "PATH|URL", env = "IDEM_DB")]
    pub db: Option<PathBuf>,

    /// The PostgreSQL schema that holds idem's tables (`PgStoreBuilder::schema`).
    #[arg(long, global = true, value_name = "NAME", default_value = "idem")]
    pub schema: String,

    /// The prefix of a Redis store's keys (`RedisStoreBuilder::prefix`).
    #[arg(long, global = true, value_name = "PREFIX", default_value = "idem")]
    pub prefix: String,

    /// Print JSON instead of text: one object per record (list, show), count (count),
    /// approval request (approvals) or budget window (budgets) per line, and {"purged": N,
    /// "batches": B} (purge). resolve, reopen, approve, decline, raise and reset refuse it
    /// (a usage error): they show what they change as text and ask before changing it.
    #[arg(long, global = true)]
    pub json: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// List records, oldest first.
    ///
    /// Look here for keys whose calls were abandoned (`--state abandoned`). Prints one
    /// record per line on stdout, then one line on stderr: `N record(s) in STORE`, or, when
    /// it stopped at --limit with more records matching, `the oldest N of M record(s) in
    /// STORE: stopped at --limit N, K more match`.
    List {
        /// Only records in this state.
        #[arg(long, value_enum)]
        state: Option<State>,
        /// Only records of this namespace (a tool's, e.g. billing::send_invoice).
        #[arg(long, value_name = "NS")]
        namespace: Option<String>,
        /// Only records of this scope (tools with `scope = ...`: a tenant, a user).
        #[arg(long)]
        scope: Option<String>,
        /// Only records reserved at least this long ago: 30s, 5m, 2h, 7d.
        #[arg(long, value_name = "AGE", value_parser = age)]
        older_than: Option<std::time::Duration>,
        /// At most this many records, the oldest.
        #[arg(long, default_value_t = 100, value_name = "N")]
        limit: usize,
    },
    /// Records per namespace and state, with the oldest of each.
    ///
    /// What to look at first: how many calls were abandoned, and since when.
    Count,
    /// Show one record whole.
    ///
    /// Its state, compared fields, result or lease, progress, and times.
    Show {
        /// The tool's namespace, as `list` shows it.
        namespace: String,
        /// The record's key, as `list` shows it (typed with reserved characters not encoded,
        /// it finds the one record an encoding names: see Keys in `idem --help`).
        key: String,
    },
    /// Remove every settled record past its retention.
    ///
    /// Never an in-progress one. It goes on, batch after batch, until none is due, so that
    /// a periodic run keeps up however many records came due since the last one; each batch
    /// is one short write, and the tools' own writes take their turns in between. Prints
    /// how many it removed (`--json`: {"purged": N, "batches": B}). Run it periodically.
    /// On a Redis Cluster it also settles the budget charges that calls left between their
    /// steps (a crash, a timeout): until a purge, such a charge still counts in its window.
    Purge {
        /// How many records each batch removes at most.
        #[arg(long, default_value_t = 1000, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        batch: u32,
    },
    /// Settle a key left in progress by hand.
    ///
    /// For a key whose call crashed, after you checked with the provider what happened:
    /// --done records the provider's result (kept for the default retention, 7 days),
    /// --release lets the next call run the action again. Prints the record as it was
    /// first, asks before changing it, and refuses a key whose lease is live (its call may
    /// still be running) unless --force.
    ///
    /// --done must have the shape of the namespace's other completed records: where they
    /// are MCP tool results (an rmcp tool's), a plain value is refused (--rmcp wraps one as
    /// the tool does); where they are plain values, --rmcp is refused; where they are an
    /// HTTP layer's stored responses, anything but a response is. A namespace without a
    /// completed record has nothing to compare with: the value is recorded as given.
    #[command(after_help = "Example, for an rmcp tool (which stores MCP tool results):\n  \
        idem resolve billing::send_invoice invoice:acme:2026-10 --done '{\"invoice\":\"inv_9\"}' --rmcp")]
    Resolve {
        /// The tool's namespace, as `list` shows it.
        namespace: String,
        /// The record's key, as `list` shows it (typed with reserved characters not encoded,
        /// it finds the one record an encoding names: see Keys in `idem --help`).
        key: String,
        /// The result to record, as JSON: what the tool would have returned. `-` reads it from
        /// standard input (then --yes is needed: there is nobody to ask), `@FILE` from a file;
        /// for results too large for an argument, such as stored HTTP responses (up to 1 MiB).
        #[arg(
            long,
            value_name = "JSON|-|@FILE",
            value_parser = done,
            conflicts_with = "release",
            required_unless_present = "release",
            requires_if("-", "yes")
        )]
        done: Option<Done>,
        /// Wrap --done's value as an rmcp tool stores its result (a CallToolResult with the
        /// value as structured content and as text).
        #[arg(long, conflicts_with = "release")]
        rmcp: bool,
        /// Delete the reservation: the next call runs the action.
        #[arg(long)]
        release: bool,
        /// Settle it even though its lease is live, i.e. its call may still be running.
        #[arg(long)]
        force: bool,
        /// Do not ask for confirmation.
        #[arg(long, short)]
        yes: bool,
    },
    /// Put a settled record back in progress, to undo a wrong `resolve --done`; or reopen a
    /// declined approval.
    ///
    /// The record then reads as abandoned: the next call runs the tool's reconcile hook or
    /// answers OUTCOME_UNKNOWN, never the action blindly. Its stored result is dropped; it is
    /// printed first, so that it can be put back with `resolve --done`.
    ///
    /// For an action that never ran because its approval was declined (it has no record,
    /// see `approvals`), it reopens the approval instead, with --by: the next call of the
    /// action asks a person anew.
    Reopen {
        /// The tool's namespace, as `list` shows it.
        namespace: String,
        /// The record's key, as `list` shows it (typed with reserved characters not encoded,
        /// it finds the one record an encoding names: see Keys in `idem --help`).
        key: String,
        /// Who reopens a declined approval (required for one; recorded with it).
        #[arg(long, value_name = "NAME", value_parser = named)]
        by: Option<String>,
        /// Why, recorded with the reopened approval.
        #[arg(long, value_name = "TEXT")]
        note: Option<String>,
        /// Do not ask for confirmation.
        #[arg(long, short)]
        yes: bool,
    },
    /// List the approval requests waiting for a person, oldest first.
    ///
    /// The requests of tools with `approval` that nobody approved or declined yet and
    /// that have not expired: namespace, key, the text the person is asked, when it was
    /// asked and when it expires (`--json`: one object per line, with the compared fields
    /// as `request`). Then one line on stderr: `N approval request(s) waiting in STORE`.
    Approvals {
        /// Only requests of this namespace (a tool's).
        #[arg(long, value_name = "NS")]
        namespace: Option<String>,
        /// Only requests of this scope (tools with `scope = ...`: a tenant, a user).
        #[arg(long)]
        scope: Option<String>,
    },
    /// Approve the request waiting for an action: the next call of the tool runs it, once.
    ///
    /// Prints the request first and asks (unless --yes). Refused, with nothing changed,
    /// when no request waits for that key (never asked, already decided, or expired).
    Approve {
        /// The tool's namespace, as `approvals` shows it.
        namespace: String,
        /// The action's key, as `approvals` shows it.
        key: String,
        /// Who approves (recorded, and shown in the tool's status).
        #[arg(long, value_name = "NAME", value_parser = named)]
        by: String,
        /// Why, recorded with the decision.
        #[arg(long, value_name = "TEXT")]
        note: Option<String>,
        /// Do not ask for confirmation.
        #[arg(long, short)]
        yes: bool,
    },
    /// Decline the request waiting for an action: every call of it answers DECLINED, naming
    /// who declined and why, until it is reopened (`reopen --by`).
    ///
    /// Prints the request first and asks (unless --yes). Refused, with nothing changed,
    /// when no request waits for that key.
    Decline {
        /// The tool's namespace, as `approvals` shows it.
        namespace: String,
        /// The action's key, as `approvals` shows it.
        key: String,
        /// Who declines (recorded, and shown to the model in every DECLINED answer).
        #[arg(long, value_name = "NAME", value_parser = named)]
        by: String,
        /// Why (shown to the model in every DECLINED answer).
        #[arg(long, value_name = "TEXT")]
        note: Option<String>,
        /// Do not ask for confirmation.
        #[arg(long, short)]
        yes: bool,
    },
    /// List budget windows: how much each budget used, per scope and window, newest first.
    ///
    /// The budgets of tools with `budget = ...`: the budget's name, the scope (the 32 hex
    /// digits and / that start a scoped tool's keys; `(unscoped)` for unscoped tools), the
    /// window's start and end (UTC), what it used of what it allows, and the last
    /// operator's change. Amounts are runs for a count budget, the summed field's units for
    /// a sum. Then one line on stderr: `N budget window(s) in STORE`. Windows are kept for 7
    /// days after they end.
    Budgets {
        /// Only this budget's windows (its name, as in Budget::count("refunds", 20)).
        #[arg(long, value_name = "NAME")]
        budget: Option<String>,
        /// Only windows of this scope (tools with `scope = ...`: a tenant, a user).
        #[arg(long)]
        scope: Option<String>,
        /// Only windows that have not ended.
        #[arg(long)]
        current: bool,
    },
    /// Raise one window's limit: its calls may use AMOUNT more until the window ends.
    ///
    /// The budget's current window for --scope (or for unscoped tools), or the one --window
    /// names. Prints the window first and asks (unless --yes); records who, when, the change
    /// and the note with the window (`budgets` shows them). The next window starts at the
    /// limit in the code again. Refused, with nothing changed, when no such window exists,
    /// or when the window's raises would pass 9223372036854.775807, the most a window counts.
    Raise {
        /// How much more the window may use: runs for a count budget, units of the summed
        /// field for a sum (above zero).
        #[arg(index = 2, value_parser = raise_amount)]
        amount: f64,
        #[command(flatten)]
        change: WindowChange,
    },
    /// Reset one window's use to zero: its calls may use its whole limit again until it ends.
    ///
    /// As `raise`: the current window unless --window, printed first, asked (unless --yes),
    /// recorded with who, when, what it had used and the note.
    Reset {
        #[command(flatten)]
        change: WindowChange,
    },
}

/// Which budget window `raise` or `reset` changes, who changes it and why.
#[derive(Debug, clap::Args)]
pub(crate) struct WindowChange {
    /// The budget's name, as `budgets` shows it.
    #[arg(index = 1)]
    pub(crate) budget: String,
    /// The scope whose window it is (a tenant, a user), as the tool's `scope = ...` gives it.
    #[arg(long)]
    pub(crate) scope: Option<String>,
    /// The window's start, as `budgets` prints it (2026-12-02T00:00:00.000Z), or in
    /// milliseconds since the Unix epoch; default: the window in use now.
    #[arg(long, value_name = "START")]
    pub(crate) window: Option<String>,
    /// Who changes it (recorded).
    #[arg(long, value_name = "NAME", value_parser = named)]
    pub(crate) by: String,
    /// Why (recorded; required).
    #[arg(long, value_name = "TEXT", value_parser = noted)]
    pub(crate) note: String,
    /// Do not ask for confirmation.
    #[arg(long, short)]
    pub(crate) yes: bool,
}

/// A note that must say something: not empty, not only spaces.
fn noted(text: &str) -> Result<String, String> {
    match text.trim() {
        "" => Err("say why: --note takes a reason, e.g. --note \"refund run approved by finance\"".to_owned()),
        note => Ok(note.to_owned()),
    }
}

/// A raise's amount: a number above zero, at most 9e12, at least a millionth.
fn raise_amount(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(amount) if (0.000_001..=9.0e12).contains(&amount) => Ok(amount),
        _ => Err(format!("{text:?} is not an amount to raise by: write a number above zero, e.g. 5 or 250.50")),
    }
}

/// A name given with --by: not empty, not only spaces.
fn named(text: &str) -> Result<String, String> {
    match text.trim() {
        "" => Err("say who decides: --by takes a name, e.g. --by alice".to_owned()),
        name => Ok(name.to_owned()),
    }
}

const AFTER_HELP: &str = "\
Stores:
  The command never creates a store, never migrates one, and changes nothing but an idem
  store's records and budget windows. It first reads the SQLite file read-only (leaving no -wal or -shm file
  behind), or the PostgreSQL schema, and refuses with one line that says what it found
  (exit 1), the file or schema left exactly as it was: a missing path, a directory, an
  empty file, a file that is not an SQLite database, another application's database (its
  tables named), a table idem_records that idem did not write, an idem store of an older
  schema version (the command would have to migrate it, and the older tools could no
  longer open it: use the idem command of the tools' version) or of a newer one; for
  PostgreSQL a missing schema, a schema without idem's tables (its tables named), or
  another version; for Redis a server, or a cluster's node, that does not answer, or no
  store under --prefix (no key PREFIX:store, on a cluster PREFIX:{0}:store, which a tool's
  first connection writes) or another version. Redis is only read until a command changes
  a record.

Keys:
  A tool's key is its template's text with each field's value trimmed, NFKC-normalized
  and case-folded (not for <field:exact>), then percent-encoded: letters, digits, - . _ ~
  and non-ASCII characters stay, every other ASCII character becomes % and two upper-case
  hex digits. So invoice:<customer>:<period> with \"Acme Corp\" and \"2026/10\" is stored as
  invoice:acme%20corp:2026%2F10. A scoped tool's keys start with 32 hex digits of the
  scope's SHA-256 and a /. An HTTP layer's key (namespace http unless the layer names
  one) is the Idempotency-Key as sent, not normalized, percent-encoded the same way: inv:1
  is stored as inv%3A1.
  show, resolve, reopen, approve and decline take a key as list (or approvals) shows it.
  Given one that names no record (or approval request), they try it with some or all of its
  reserved characters percent-encoded (every choice, up to 10 such characters; beyond that
  only all of them encoded). One found is used, and a line on stderr names its key; two or
  more are named and nothing is used; none found says where it was looked for. Case and
  normalization are not guessed: type a value as it is stored.

Exit codes:
  0  done.
  1  refused or failed: one line on stderr, starting with \"idem: \"; nothing changed
     unless the line says so.
  2  a usage mistake (an unknown command or flag, a bad value, --json where it does not
     apply), with the usage on stderr; nothing was read or changed.";

/// A record's state as `list --state` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum State {
    /// Reserved, its lease live: the call is running (or its process died moments ago).
    #[value(name = "in_progress")]
    InProgress,
    /// Reserved, its lease ended: its call stopped and its outcome is unknown.
    Abandoned,
    /// Completed with a result.
    Completed,
    /// Settled with a kept error.
    Failed,
}

/// Where `resolve --done` takes its result from.
#[derive(Clone, Debug)]
pub(crate) enum Done {
    /// Given on the command line.
    Json(serde_json::Value),
    /// `-`: standard input, to its end.
    Stdin,
    /// `@FILE`.
    File(PathBuf),
}

impl Done {
    /// The result, read and parsed: from stdin or the file, or as given.
    pub(crate) fn read(self) -> Result<serde_json::Value, String> {
        let (text, from) = match self {
            Done::Json(value) => return Ok(value),
            Done::Stdin => {
                let mut text = String::new();
                std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                    .map_err(|e| format!("--done -: cannot read standard input: {e}; nothing changed"))?;
                (text, "-".to_owned())
            }
            Done::File(path) => {
                let read = std::fs::read_to_string(&path);
                let text = read.map_err(|e| format!("--done @{}: {e}; nothing changed", path.display()))?;
                (text, format!("@{}", path.display()))
            }
        };
        serde_json::from_str(&text).map_err(|e| format!("--done {from}: not JSON ({e}); nothing changed"))
    }
}

/// `--done`'s argument: JSON is checked now (a usage error), `-` and `@FILE` are read when
/// the command runs.
fn done(text: &str) -> Result<Done, String> {
    match text {
        "-" => Ok(Done::Stdin),
        _ if text.starts_with('@') => Ok(Done::File(PathBuf::from(&text[1..]))),
        _ => serde_json::from_str(text).map(Done::Json).map_err(|e| {
            format!("not JSON ({e}); give the result as JSON, e.g. '{{\"id\":\"ch_1\"}}', or - or @FILE to read it")
        }),
    }
}

/// `30s`, `5m`, `2h`, `7d` (or `500ms`): a whole number and a unit.
fn age(text: &str) -> Result<std::time::Duration, String> {
    let digits = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let number: u64 = number.parse().map_err(|_| format!("{text:?} is not an age: write e.g. 30s, 5m, 2h or 7d"))?;
    let ms = match unit {
        "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(format!("{text:?} has no unit: write e.g. 30s, 5m, 2h or 7d")),
    };
    Ok(std::time::Duration::from_millis(number.saturating_mul(ms)))
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// clap checks the definitions (clashing positions, names) only when a command is
    /// parsed; this checks every subcommand's at once.
    #[test]
    fn the_command_line_is_well_formed() {
        super::Cli::command().debug_assert();
    }
}
