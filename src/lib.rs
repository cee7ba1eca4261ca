//! Make the tools AI agents call safe to retry.
//!
//! Agent stacks retry at many layers: people press send twice, webhooks are redelivered,
//! runtimes retry whole turns, the model calls a tool again after a timeout. A timeout is
//! not a failure: the work often finishes. `#[idempotent]` gives a tool a key derived from
//! the business action, reserves it in a store before the body runs, and answers every
//! repeat from the store: one effect per action, however often and however concurrently
//! the tool is called.
//!
//! The package is `idem-tools` (the name `idem` on crates.io belongs to another crate);
//! its library is `idem`, so code writes `use idem::idempotent`:
//!
//! ```toml
//! [dependencies]
//! idem-tools = "0.1"    # features: "tokio" (default), "postgres", "rmcp", "rig", "metrics", "http", "testing"
//! ```
//!
//! # Example
//!
//! ```
//! use std::sync::LazyLock;
//! use idem::{idempotent, SqliteStore, Status};
//! use serde::{Deserialize, Serialize};
//!
//! static STORE: LazyLock<SqliteStore> = LazyLock::new(|| {
//!     SqliteStore::open(std::env::temp_dir().join("idem-doc-example.db")).unwrap()
//! });
//!
//! #[derive(Serialize, Deserialize)]
//! struct Invoice { id: String, amount: f64, #[serde(default)] replayed: bool }
//!
//! #[derive(Debug)]
//! enum ToolError { Idem(idem::Error) }
//! impl From<idem::Error> for ToolError {
//!     fn from(error: idem::Error) -> Self { ToolError::Idem(error) }
//! }
//!
//! /// Create and send the invoice for one customer and billing period.
//! /// Safe to retry: a second call for the same customer and period never sends a second invoice.
//! #[idempotent(key = "invoice:<customer>:<period>", compare = [amount], store = *STORE)]
//! fn send_invoice(customer: String, period: String, amount: f64, memo: String)
//!     -> Result<Invoice, ToolError>
//! {
//!     // `idem::current_key()` is the key to hand to a provider that takes idempotency keys.
//!     let key = idem::current_key().unwrap();
//!     Ok(Invoice { id: format!("inv for {key}"), amount, replayed: false })
//! }
//!
//! # let period = format!("doc-{}", std::process::id());
//! let first = send_invoice("acme".into(), period.clone(), 120.0, "October support".into()).unwrap();
//! // The model retries with a reworded memo: the first invoice comes back, marked as a replay.
//! let again = send_invoice("ACME".into(), period.clone(), 120.0, "Support, October".into()).unwrap();
//! assert!(!first.replayed && again.replayed && first.id == again.id);
//! // Another amount for the same invoice is a CONFLICT, never a silent replay.
//! let Err(ToolError::Idem(conflict)) = send_invoice("acme".into(), period.clone(), 150.0, "".into())
//!     else { panic!() };
//! assert_eq!(conflict.code(), idem::ErrorCode::Conflict);
//! // The generated read-only status function takes only the key's fields.
//! assert!(matches!(send_invoice_status("acme".into(), period).unwrap(), Status::Completed(_)));
//! ```
//!
//! # Attributes
//!
//! - `key = "invoice:<customer>:<period>"` (required): the key template. Placeholders name
//!   parameters (`<customer>`), fields of parameters (`<req.customer>`) or names bound by
//!   parameter patterns (`Parameters(Req { customer, .. }): Parameters<Req>`). Values are
//!   trimmed, NFKC-normalized and case-folded (`<sku:exact>` opts out) and escaped, so
//!   different values never give the same key; `<email:hash>` stores a hash instead of the
//!   value. Two placeholders must be separated by a character such as `:` or `/`. Key
//!   fields implement [`KeyPart`]: strings, integers, `bool`, `char`, or your identifier
//!   types, which can also parse the model's wording into one form and refuse an unknown
//!   identifier before anything is reserved (see [`KeyPart`]). Timestamps, call or
//!   attempt IDs, random values and floats do not compile.
//! - `compare = [amount, req.currency]`: fields that must be equal on a repeat. A
//!   difference is a CONFLICT naming each field with its first and its new value. They
//!   must implement `serde::Serialize`.
//! - `store = expr`: the store, evaluated on every call (it may use `self` or a
//!   parameter). Any [`store::Store`] (sync tools) or [`store::AsyncStore`] (async tools), also behind
//!   `&`, `Box` or `Arc`. Default: [`default_store`], an SQLite file in the user's data
//!   directory unless `IDEM_DB` or [`set_default_store_path`] names one (see
//!   [`default_store_path`]).
//! - `scope = expr`: whose records these are (a tenant, a user), from the authenticated
//!   request, evaluated on every call like `store`: `self`, a parameter of a plain
//!   function, or an rmcp extractor such as `Extension<T>`; never an rmcp `Parameters` or
//!   a rig tool argument, which the model fills (those do not compile). Every key starts
//!   with the scope's hash ([`scope_prefix`]), so each scope has its own records, and the
//!   status function takes the scope the same way. `unscoped` says that a tool taking
//!   `Extension<T>` shares its records across callers on purpose (else a warning).
//! - `namespace = "billing.invoices"`: the record namespace. Default: the function's
//!   module path and name (`my_crate::billing::send_invoice`), so two tools never share
//!   keys by accident. Moving a tool to another module changes its default namespace (its
//!   earlier records then no longer answer it): pin it with `namespace = "..."`. Methods
//!   of one name in two impl blocks of one module would share a default namespace: the
//!   second one called refuses every call with [`ErrorCode::NamespaceClash`] until one
//!   names its own. Give two tools the same namespace to share keys on purpose.
//! - `lease = "30s"`: how long the key of a call whose process died stays blocked before
//!   the call counts as abandoned (`"500ms"`, `"30s"`, `"5m"`, `"2h"`, `"1d"`). Default
//!   30 seconds. While a body runs, its lease is renewed every third of the lease (by one
//!   shared thread; a body that finishes sooner writes nothing), so the lease need not
//!   outlast the slowest body. The body may report how far it got with [`progress`];
//!   IN_PROGRESS answers and the status function show it, with a poll hint
//!   ([`Error::retry_after`], [`error::Running`]).
//! - `max_hold = "1h"`: how long a running body's lease is renewed at most; a body that
//!   hangs for good frees its key one lease later. Default 1 hour; at least one lease.
//! - `reconcile = expr`: asks the provider what happened to an abandoned call once its
//!   lease ended: a function or closure taking an [`Abandoned`] and returning a
//!   [`Reconciled`] (a future of one, for async tools). `Done(result)` completes the key
//!   and replays the result, `NotDone` runs the body now, `Unknown` answers
//!   OUTCOME_UNKNOWN. Only one caller reconciles a key at a time.
//! - `on_error = keep`: the body's `Err` is the final answer, stored and replayed, for
//!   errors that happen after the side effect. Default `release`.
//! - `timeout = "2s"` (async tools, `tokio` feature, on by default): the caller gets
//!   TIMEOUT in time while the body goes on as a task and completes the key. The body
//!   must not borrow from the caller (`Send + 'static`: no `&self`, no `&T` parameters;
//!   a method takes `self: Arc<Self>`), and the store must be `'static` (a `static`, or
//!   the default store). rmcp tools are the exception: there [`tasks`] applies the
//!   timeout to the whole `tools/call`, which runs on a clone of the server, so `&self`
//!   and `store = self.store` work (see [MCP Tasks](#mcp-tasks)); without [`tasks`] on
//!   the server's `ServerHandler` impl an rmcp tool's timeout does not take effect (the
//!   call waits for its body; a warning says so once per tool).
//! - `retain = "7d"`: how long a settled record is kept before [`store::Store::purge`] may remove
//!   it. A retry after that runs the action again; keep records as long as any layer may
//!   retry.
//! - `crate = "my_idem"`: where the generated code finds idem, for a crate whose
//!   Cargo.toml renames the dependency (`my_idem = { package = "idem-tools", version =
//!   "0.1" }`). Default `::idem`. Without it such a crate fails to compile with "cannot
//!   find `idem` in the crate root". `#[status_tools]` reads it from each tool's attribute.
//!   A single name must be one of the crate's dependencies as its Cargo.toml names them:
//!   any other is one compile error at the string, saying what idem is called there. A
//!   path (`crate = "crate::deps::idem"`, a re-export) is used as written.
//!
//! The function keeps its exact signature. It must return a [`frameworks::ToolOutput`]: a
//! `Result<T, E>` where `T` serializes and deserializes (it is stored and replayed) and
//! `E: From<idem::Error>`. Beside it, `<name>_status` takes the receiver and the
//! parameters the key (and the store expression) use, and returns
//! `Result<Status<T>, idem::Error>`; it is async when the tool is. And
//! `<name>_record_id` takes the key's parameters only and returns the record's
//! [`store::OwnedRecordId`] (the tool's namespace and the derived key), to read or settle
//! the record through a [`store::Store`] without spelling the namespace out.
//!
//! # Outcomes
//!
//! | situation | answer | retryable |
//! | --- | --- | --- |
//! | first call | the body runs once; its result is stored | |
//! | completed earlier, same compared fields | the stored result, as stored; `"replayed": true` in a `serde_json::Value` object or a struct with a `replayed` field, never in a typed map (see [`frameworks::replay_value`]) | |
//! | completed earlier or running, compared fields differ | [`ErrorCode::Conflict`] naming each field | no |
//! | first call still running | [`ErrorCode::InProgress`], suggesting `<name>_status` | no |
//! | first call abandoned (panic, dropped future, crash) past its lease | the `reconcile` hook decides; without one [`ErrorCode::OutcomeUnknown`] | no |
//! | `timeout` passed before the body finished | [`ErrorCode::Timeout`]; the body goes on and completes the key | no |
//! | store unreachable or failing | [`ErrorCode::StoreUnavailable`]; the body does not run | yes |
//! | key field empty after normalization | [`ErrorCode::InvalidKey`]; the body does not run | no |
//! | stored result no longer reads as the tool's type | [`ErrorCode::RecordUnreadable`]; never re-run | no |
//! | another tool uses this one's default namespace | [`ErrorCode::NamespaceClash`]; the body does not run | no |
//! | the record is in a state this version does not know (a newer idem, a hand edit) | [`ErrorCode::RecordUnreadable`], naming namespace and key; a person must inspect it | no |
//! | the body's result does not read back from its JSON (`f64::NAN` is `null`) | the caller gets the result; it is not stored and the key reads as abandoned: the `reconcile` hook, or [`ErrorCode::OutcomeUnknown`] (see [`frameworks::ToolOutput`]) | no |
//!
//! An `Err` from the body releases the key: the action did not happen and a retry may run
//! it. A panic or a dropped future leaves the key reserved, because the action may have
//! happened. Every answer that is not a result is an [`Error`] with a stable code, a
//! message, a retryable flag and a suggestion, serialized as
//! `{"error": {"code", "message", "retryable", "suggestion"}}`. To see in code how a call
//! was answered, wrap it in [`telemetry::observe`] (or [`telemetry::observe_async`]); [`telemetry::metrics()`] counts every
//! tool's outcomes.
//!
//! # Telemetry
//!
//! Each call runs in a `tracing` span named `execute_tool <tool>` with OpenTelemetry's
//! GenAI attributes (`gen_ai.operation.name`, `gen_ai.tool.name`, `gen_ai.tool.type`,
//! `error.type`) and idem's own (`idem.outcome`, `idem.namespace`, `idem.key`,
//! `idem.lease_token`, the phases' microseconds); the body's spans and events nest inside
//! it, and an outer `execute_tool <tool>` span of the caller's is reused instead. The
//! `metrics` feature records a call counter and the `gen_ai.execute_tool.duration`
//! histogram through the `metrics` facade. [`telemetry::add_observer`] tells code of
//! replays, conflicts, fenced completions, abandoned and taken-over calls and
//! reconciliations. The names are in [`telemetry::conventions`].
//!
//! # Stores
//!
//! - [`SqliteStore`]: the embedded default. A file created on first use, WAL, a busy
//!   timeout, full durability; safe across threads and across processes that open the
//!   same file.
//! - [`MemoryStore`]: one process, nothing on disk; for tests.
//! - `PgStore` (feature `postgres`): PostgreSQL, for many workers on many machines
//!   sharing one database; leases judged by the server's clock. See `store::postgres`
//!   for its schema, pool and transactional mode.
//!
//! Every bundled store also implements [`store::Admin`], an operator's operations beside a
//! store's own `read` and `purge` (list, count, resolve, reopen), which the `idem` command
//! (crate `idem-cli`) runs.
//!
//! # Agent frameworks
//!
//! `#[idempotent]` goes on the tool a framework already has, ABOVE the framework's
//! attribute, and nothing else changes (see the [`frameworks`] module and the README):
//!
//! - **rmcp** (feature `rmcp`): above `#[tool]`. The tool's annotations get
//!   `idempotent_hint = true`; a tool returning `Result<CallToolResult, ErrorData>` gets
//!   idem's answers as `Ok(CallToolResult::structured_error(..))`, a tool result the model
//!   sees with `isError: true`. [`status_tools`] above `#[tool_router]` serves each
//!   `<tool>_status` as a read-only tool that takes only the key's fields (the request's
//!   properties the key reads). Below `#[tool]`, `#[idempotent]` does not compile.
//!   [`tasks`] below `#[tool_handler]` serves MCP Tasks: see [MCP Tasks](#mcp-tasks).
//! - **rig** (feature `rig`): above `#[rig_tool]` (below works too, without the status
//!   tool). Return `Result<T, ToolExecutionError>`: idem's answers arrive with their code,
//!   retryable flag and structured error as the model's feedback, and `<tool>_status` is a
//!   rig tool too.
//!
//! # MCP Tasks
//!
//! With [`tasks`] on an rmcp `ServerHandler` impl (below `#[tool_handler]`), a `tools/call`
//! from a client that declared the Tasks extension (SEP-2663) answers with a task instead
//! of TIMEOUT when its body outlives the tool's `timeout`, and instead of IN_PROGRESS when
//! it finds the action running. A task stands for one run of the action: one task however
//! often the model retries while it runs, a new one for a new run after a failure. Its id
//! is opaque (an HMAC under a secret the store keeps), and `tasks/get` reads the store, so
//! it answers after a restart and on every worker that shares the store; an ended task
//! stays ended. `tasks/cancel` is recorded in the store and reaches the body through
//! [`cancel_requested`]. Clients without the extension get TIMEOUT and the status tools,
//! as before. The README's rmcp section has the whole table.
//!
//! # HTTP services
//!
//! The provider side (feature `http`): `idem::http::IdempotencyLayer` is a `tower` layer, for
//! axum routes or any `tower` service, that honours the `Idempotency-Key` request header
//! as the IETF draft says, on the same stores, leases and telemetry as tools: the first
//! request runs, a repeat gets its stored response (`Idempotent-Replayed: true`), a repeat
//! while it runs a `409` with `Retry-After`, the key with another request a `422`, a bad
//! key a `400`. The module `idem::http` says what it answers in every situation.
//!
//! # Where things are
//!
//! - The crate root: what a tool author uses daily. The attributes, [`Error`] and
//!   [`ErrorCode`], [`Status`], the stores, [`current_key`], [`progress`] and
//!   [`cancel_requested`] for a running body, [`Key`] and [`KeyPart`], the reconcile
//!   hook's [`Abandoned`] and [`Reconciled`], the default store's functions and
//!   [`scope_prefix`].
//! - [`error`]: what an [`Error`] carries ([`error::Running`], [`error::FieldDifference`]).
//! - [`store`]: the store protocol, for store authors ([`store::Store`],
//!   [`store::AsyncStore`] and their types), the operator's [`store::Admin`], each store's
//!   options, and the defaults (`DEFAULT_LEASE`, `DEFAULT_RETAIN`, ...).
//! - [`telemetry`]: [`telemetry::observe`], [`telemetry::metrics()`], span and metric
//!   names, lifecycle events.
//! - [`frameworks`]: how answers reach a model ([`frameworks::ToolOutput`],
//!   [`frameworks::replay_value`]), rmcp and rig.
//! - `http` (feature `http`): the tower layer for `Idempotency-Key`.
//! - `testing` (feature `testing`, for your tests; not covered by semver): the store
//!   conformance suite and the retry matrix.
//!
//! # Misuse does not compile
//!
//! ```compile_fail
//! // A key built from a clock reading would change on every retry.
//! #[idem::idempotent(key = "report:<now>")]
//! fn send_report(now: u64) -> Result<(), idem::Error> { Ok(()) }
//! ```
//!
//! ```compile_fail
//! // A float cannot be a key field: put it in `compare` instead.
//! #[idem::idempotent(key = "pay:<amount>")]
//! fn pay(amount: f64) -> Result<(), idem::Error> { Ok(()) }
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]

/// Makes a tool function idempotent; see the [crate documentation](crate).
pub use idem_macros::idempotent;
/// Serves the status functions of an rmcp server's `#[idempotent]` tools as read-only
/// tools; goes above `#[tool_router]`. See [agent frameworks](crate#agent-frameworks).
pub use idem_macros::status_tools;
/// Serves MCP Tasks (SEP-2663) for an rmcp server's `#[idempotent]` tools, keyed by the
/// business action and read from the store; goes below `#[tool_handler]`. See
/// [MCP Tasks](crate#mcp-tasks).
pub use idem_macros::tasks;
pub use idem_runtime::*;
