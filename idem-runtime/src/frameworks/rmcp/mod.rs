//! rmcp, the official MCP SDK: `#[idempotent]` on the tools an rmcp server already has,
//! their status as read-only tools, MCP Tasks for slow calls, and remote servers with many
//! tenants and many workers (feature `rmcp`).
//!
//! An MCP client passes a tool result (`CallToolResult`) to the model, with `isError: true`
//! for a failure; an `Err(ErrorData)` is a JSON-RPC protocol error that the client handles
//! and the model never sees. So every idem answer that is not a result (IN_PROGRESS,
//! CONFLICT, ...) becomes `Ok(CallToolResult::structured_error({"error": {...}}))`.
//!
//! # A server
//!
//! Add `#[idempotent(...)]` to the tool you already have, **on the line above `#[tool]`**,
//! and `#[idem::status_tools]` **on the line above `#[tool_router]`**; `#[idem::tasks]` below
//! `#[tool_handler]` serves [MCP Tasks](#mcp-tasks). The repository's `examples/mcp_server.rs`
//! is a whole server, with these dependencies:
//!
//! ```toml
//! [dependencies]
//! idem-tools = { version = "0.1", features = ["rmcp"] }
//! rmcp = { version = "3.11", features = ["transport-io"] }    # and its defaults: server, macros
//! serde = { version = "1", features = ["derive"] }
//! serde_json = "1"
//! tokio = { version = "1", features = ["macros", "rt-multi-thread"] }
//! ```
//!
//! Its server part reads as below (quoted from the file, which `cargo test` builds; `// ...`
//! marks a second, slow tool left out here). The file goes on with `main`, a `#[tokio::main]`
//! that calls `serve()`, and a `--demo` that plays a model's retries through rmcp's client.
//!
//! <!-- quoted from examples/mcp_server.rs -->
//! ```rust,ignore
//! use std::path::{Path, PathBuf};
//! use std::sync::{Arc, Mutex};
//!
//! use idem::{SqliteStore, idempotent};
//! use rmcp::handler::server::wrapper::Parameters;
//! use rmcp::model::CallToolResult;
//! use rmcp::{ErrorData, ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};
//! use serde::Deserialize;
//! use serde_json::json;
//!
//! /// The arguments of `send_invoice`: rmcp reads them from the call's JSON (`Deserialize`)
//! /// and shows the model their JSON schema (`JsonSchema`, through rmcp's own schemars, so
//! /// no `schemars` dependency of your own).
//! #[derive(Deserialize, schemars::JsonSchema)]
//! #[schemars(crate = "rmcp::schemars")]
//! struct SendInvoice {
//!     /// The customer to bill, e.g. "acme".
//!     customer: String,
//!     /// The billing period, e.g. "2026-10".
//!     period: String,
//!     /// The amount to bill, in euros.
//!     amount: f64,
//!     /// A note printed on the invoice.
//!     memo: String,
//! }
//!
//! // ...
//!
//! /// The billing service: a store for idempotency keys, the invoices it sent and the
//! /// ledger exports it made.
//! #[derive(Clone)]
//! struct Billing {
//!     store: Arc<SqliteStore>,
//!     sent: Arc<Mutex<Vec<String>>>,
//!     exports: Arc<Mutex<Vec<String>>>,
//! }
//!
//! #[idem::status_tools]
//! #[tool_router]
//! impl Billing {
//!     /// Create and send the invoice for one customer and billing period.
//!     #[idempotent(key = "invoice:<req.customer>:<req.period>", compare = [req.amount], store = self.store)]
//!     #[tool(annotations(title = "Send invoice", destructive_hint = false))]
//!     async fn send_invoice(&self, Parameters(req): Parameters<SendInvoice>) -> Result<CallToolResult, ErrorData> {
//!         // The key to hand to a billing provider that accepts idempotency keys (as Stripe does).
//!         let key = idem::current_key().expect("the body runs under a key");
//!         let id = {
//!             let mut sent = self.sent.lock().expect("the ledger is not poisoned");
//!             sent.push(key.to_string());
//!             format!("inv_{}", sent.len())
//!         };
//!         eprintln!("[billing] sent {id} to {} for {:.2} ({}), provider key {key}", req.customer, req.amount, req.memo);
//!         Ok(CallToolResult::structured(json!({
//!             "invoice": id,
//!             "customer": req.customer,
//!             "period": req.period,
//!             "amount": req.amount,
//!             "memo": req.memo,
//!         })))
//!     }
//!
//!     // ...
//! }
//!
//! // `name` is what clients show for this server (`serverInfo`; its version is this crate's,
//! // or `version = "..."`). Without it rmcp reports itself: "rmcp" and rmcp's version.
//! #[tool_handler(
//!     name = "idem-billing",
//!     instructions = "Billing tools: invoices and ledger exports. Each tool's description says what a retry does."
//! )]
//! #[idem::tasks]
//! impl ServerHandler for Billing {}
//!
//! impl Billing {
//!     fn open(path: &Path) -> Result<Billing, String> {
//!         let store = SqliteStore::open(path).map_err(|error| format!("cannot open the key store (IDEM_DB): {error}"))?;
//!         Ok(Billing { store: Arc::new(store), sent: Arc::default(), exports: Arc::default() })
//!     }
//! }
//!
//! /// Serves MCP on stdin and stdout, with its keys in `IDEM_DB`, else the default store's file.
//! async fn serve() -> Result<(), Box<dyn std::error::Error>> {
//!     let path = match std::env::var_os("IDEM_DB") {
//!         Some(path) => PathBuf::from(path),
//!         None => idem::store::default_store_path()?,
//!     };
//!     let billing = Billing::open(&path)?;
//!     eprintln!(
//!         "[billing] MCP server on stdio, keys in {}; connect an MCP client (see the example's docs)",
//!         path.display()
//!     );
//!     let server = billing.serve(rmcp::transport::stdio()).await?;
//!     server.waiting().await?;
//!     Ok(())
//! }
//! ```
//!
//! ```sh
//! cargo run -p idem-examples --features rmcp --bin mcp_server             # speaks MCP on stdin/stdout
//! cargo run -p idem-examples --features rmcp --bin mcp_server -- --demo   # a model's retries through rmcp's client
//! ```
//!
//! It is an MCP server over stdio with `send_invoice` and `send_invoice_status`, for any MCP
//! client; its docs show how to connect one.
//!
//! - **Attribute order.** rmcp's `#[tool_router]` expands first and registers the methods
//!   that carry `#[tool]` at that moment. `#[idempotent]` above `#[tool]` sees the `async fn`
//!   as written and re-emits `#[tool(...)]` with `idempotent_hint = true` added to its
//!   annotations (a hint you set yourself stays). Below `#[tool]` it would see the boxed
//!   future rmcp made of the function, with the annotations already fixed: that does not
//!   compile, and the message says to move it. `#[idem::status_tools]` must be above
//!   `#[tool_router]` for the same reason (below it, it does not compile either).
//! - **What the model sees.** A tool returning `Result<CallToolResult, ErrorData>` gets every
//!   idem answer (CONFLICT, IN_PROGRESS, ...) as `Ok(CallToolResult::structured_error(..))`:
//!   a tool result with `isError: true` and `{"error": {"code", "message", "retryable",
//!   "suggestion"}}` as structured content and as text. Never `Err(ErrorData)`, a protocol
//!   error that the client handles and the model never sees. A replay is the first result
//!   with `"replayed": true` in its structured content (or a note in its text). Other
//!   return types work through their error type: `Result<String, idem::Error>` (rmcp shows
//!   the error as a tool error), or `Result<T, E>` with `E: From<idem::Error>`. `Json<T>`
//!   cannot be stored and replayed: return `CallToolResult::structured(...)` instead, or for
//!   text `CallToolResult::success(vec![ContentBlock::text("...")])` (rmcp 3.11's
//!   `rmcp::model::ContentBlock`).
//! - **Failures of the body.** A result with `isError: true` and an `Err(ErrorData)` release
//!   the key, like any `Err`. `on_error = keep` keeps `Err(ErrorData)` only.
//! - **Descriptions.** rmcp builds a tool's description from its doc comment with the source's
//!   line breaks. `#[idempotent]` gives a `#[tool]` without `description = ...` its doc
//!   comment as paragraphs: a paragraph's lines joined with spaces, blank lines kept, line
//!   breaks kept before list items and inside code fences (a `#[doc = include_str!(..)]` is
//!   left to rmcp). After that text, or a `description = ...` of your own, comes idem's
//!   paragraph (what a repeat gets, what is refused, which status tool to call), joined
//!   when the tool list is built so that fields have their JSON names: see [The
//!   description the model reads](https://docs.rs/idem-tools/latest/idem/index.html#the-description-the-model-reads).
//!
//! # Status tools
//!
//! `#[idem::status_tools]`, above `#[tool_router]`, adds for each `#[idempotent]` `#[tool]`
//! method the tool `send_invoice_status` (`readOnlyHint: true`, `destructiveHint: false`),
//! served by the method `send_invoice_status_tool`. It takes **the key's fields only**,
//! `{"customer": "acme", "period": "2026-10"}`: a model that lost track of a call may no
//! longer have its memo.
//!
//! - **Its input.** The input schema is the request type's, cut down to those properties
//!   (their types, doc-comment descriptions and `required` as the tool has them), and its
//!   description names them. A field is the top-level argument a placeholder starts from:
//!   `<req.customer>` with `Parameters(req)`, or `<p>` with
//!   `Parameters(SendInvoice { period: p, .. })` (`period`); for `<req.customer.id>` the
//!   model passes `customer` whole. Other arguments are ignored; a missing or ill-typed key
//!   field is an `INVALID_KEY` tool result naming it.
//! - **Its answer.** The key is derived exactly as the tool derives it (same
//!   normalization), and the status tool answers `{"status": "completed", "result": ...}`,
//!   `{"status": "in_progress", ...}`, `{"status": "not_found"}`, ... (the [`Status`]
//!   of the tool's `<fn>_status`, as [`status_result`] shows it).
//! - **Renamed fields.** Each field is taken, described and named in errors by its JSON
//!   name, the one the tool's own input schema shows: with
//!   `#[serde(rename_all = "camelCase")]` on `SendInvoice`, `<req.customer_id>` is
//!   `customerId` (any of serde's `rename_all` rules is found by itself); a field
//!   `#[serde(rename = "custId")]` renames is named in the attribute,
//!   `json_names = [req.customer_id = "custId"]`. A field whose JSON name is not found is
//!   left out of the input schema, and every call of the status tool answers `INVALID_KEY`
//!   saying which field and what to write; the tool list still builds. CONFLICT and the
//!   tool's other answers name fields by those JSON names too. The rule:
//!   [Field names the model sees](https://docs.rs/idem-tools/latest/idem/index.html#field-names-the-model-sees).
//! - **Key fields from elsewhere.** When the key's fields do not all come from the
//!   `Parameters<T>` argument (a key field from another argument, the whole request as the
//!   key, a `store` read from the request), the status tool takes the arguments
//!   `send_invoice_status` takes, as they are.
//! - **A router built by hand.** Without a `#[tool_router]`, add
//!   `.with_route((Self::send_invoice_status_tool_tool_attr(), Self::send_invoice_status_tool))`.
//! - **Conditional tools.** An `#[idempotent]` inside `#[cfg_attr(...)]` does not compile in
//!   an impl with `#[idem::status_tools]`: rmcp's `#[tool_router]` serves every `#[tool]`
//!   whatever its `cfg`, so the status tool could not follow the condition. Keep such a
//!   tool in an impl block of its own, without `#[idem::status_tools]` (its calls are still
//!   idempotent when the condition holds; it has no status tool).
//!
//! # Tenants: `Authenticated`
//!
//! A tool with `scope = ...` keeps each caller's records apart (the crate docs'
//! [Tenants](../../index.html#tenants) say what a scope does). On an rmcp server the
//! caller's identity comes from the authenticated request, as `tests/frameworks/rmcp/tenants.rs` has it (it serves the tool
//! through a transport that puts each connection's principal on its requests):
//!
//! <!-- quoted from tests/frameworks/rmcp/tenants.rs -->
//! ```rust,ignore
//! use idem::frameworks::rmcp::Authenticated;
//! // ...
//!
//! /// Who the request comes from, as the server's authentication established it.
//! #[derive(Clone)]
//! struct Principal {
//!     tenant: String,
//! }
//!
//! // ...
//!
//! #[idem::status_tools]
//! #[tool_router]
//! impl TenantBilling {
//!     #[idempotent(key = "invoice:<req.customer>:<req.period>", compare = [req.amount], scope = principal.tenant, store = *self.store)]
//!     #[tool(description = "Send an invoice")]
//!     async fn send_invoice(
//!         &self,
//!         Authenticated(principal): Authenticated<Principal>,
//!         Parameters(req): Parameters<SendInvoice>,
//!     ) -> Result<CallToolResult, ErrorData> {
//!         let key = (principal.tenant.clone(), req.customer.clone(), req.period.clone());
//!         *self.sent.lock().unwrap().entry(key).or_default() += 1;
//!         let invoice = json!({ "invoice": format!("inv-{}-{}", principal.tenant, req.customer), "amount": req.amount });
//!         Ok(CallToolResult::structured(invoice))
//!     }
//! }
//! ```
//!
//! - Take the principal as [`Authenticated<T>`](Authenticated): it reads the `T` your
//!   authentication layer put in the HTTP request's extensions (over streamable HTTP, rmcp
//!   hands the tool the request's `http::request::Parts`, and the principal is inside them),
//!   or the request context's own extensions (another transport, or a `call_tool` of your
//!   own). A request that carries no `T` is refused with the JSON-RPC error `-32600`
//!   (invalid request) before the tool runs: nothing is reserved. rmcp's own `Extension<T>`
//!   reads the context's extensions only, so over streamable HTTP it never finds a
//!   middleware's principal (the call fails with `-32602 missing extension`). The scope's
//!   type is one a key field may have (a string, an integer).
//! - The status tool takes the tool's extractor too, and reads only that scope's records.
//! - A `scope` that reads the `Parameters<T>` argument does not compile: the model fills it.
//! - A tool that takes an `Extension<T>` (or the whole `Extensions`) but has neither `scope`
//!   nor `unscoped` compiles with a warning at the extractor that says how to scope it.
//! - A scoped tool serves MCP Tasks like any other: `tasks/get`, `tasks/cancel` and
//!   `tasks/update` extract the scope's parameters from their own request as rmcp extracts
//!   them for a call (an `Authenticated<T>`, an `Extension<T>`), and a task of another scope,
//!   or a request without a principal, gets the answer for an unknown id (`-32602`).
//!   [Remote MCP servers](#remote-mcp-servers) shows the whole deployment.
//!
//! # MCP Tasks
//!
//! MCP has no protocol-level idempotency key: the business key in the arguments is what
//! tells a retried `tools/call` from a new one. For slow tools MCP has the Tasks extension
//! (SEP-2663, `io.modelcontextprotocol/tasks`): the server answers a `tools/call` with a task
//! handle and the client polls `tasks/get`. idem's tasks are views of the tool's record:
//! **a task stands for one run of one action**, the same for every retry while that run
//! holds the key, readable after a restart and from every worker sharing the store.
//! One line on the handler, **below `#[tool_handler]`**, as in the example:
//!
//! <!-- quoted from examples/mcp_server.rs -->
//! ```rust,ignore
//! #[tool_handler(
//!     name = "idem-billing",
//!     instructions = "Billing tools: invoices and ledger exports. Each tool's description says what a retry does."
//! )]
//! #[idem::tasks]
//! impl ServerHandler for Billing {}
//! ```
//!
//! It declares the extension in the server's capabilities, adds `get_task`, `cancel_task` and
//! `update_task`, and runs each `tools/call` on a clone of the server as a tokio task of its
//! own (so the server must be `Clone + Send + Sync + 'static`, as rmcp servers usually are;
//! state in `Arc`s). What a model's client then sees:
//!
//! | the call | client declared tasks | client did not |
//! | --- | --- | --- |
//! | finishes within the tool's `timeout` (or the tool has none) | the result | the result |
//! | still runs when its `timeout` passes (counted from the call's start) | `CreateTaskResult`, status `working`; the body goes on | `TIMEOUT`, as without tasks; the body goes on |
//! | a retry finds the action running | the same task (`working`) | `IN_PROGRESS` |
//! | a retry after it finished | the recorded result, `"replayed": true` | the same |
//! | a call after the task failed or was cancelled (the key was released) | a new run: a new task | a new run |
//!
//! **Task ids** are opaque: `idem2.` and 22 characters, an HMAC-SHA256 of the run (namespace,
//! key and fencing token) under a random secret the store keeps (created on first use, in
//! the record `idem.tasks`/`secret`). An id reveals nothing of the key and cannot be made up:
//! a client can ask only about tasks it was given. Every worker sharing the store derives
//! the same id for the same run, so ids survive restarts and load balancers. A task handed
//! out is in the store first (a record of namespace `idem.tasks`, kept as long as the task):
//! `tasks/get` for it always answers.
//!
//! **`tasks/get`** reads the record:
//!
//! | the run's record | the task |
//! | --- | --- |
//! | in progress, lease live (also while a take-over reconciles it) | `working`, with the body's `idem::progress` message as `statusMessage` and the retry hint as `pollIntervalMs` |
//! | completed | `completed`, with the recorded result as a replay shows it (`"replayed": true`) |
//! | failed with a kept error (`on_error = keep`) | `failed`, with that error |
//! | abandoned (its process stopped: whether it happened is unknown) | `failed`, with idem's `OUTCOME_UNKNOWN` error as `data` |
//! | gone or a later run's, after a `tasks/cancel` | `cancelled` |
//! | gone or a later run's, no `tasks/cancel` | `failed`: the call failed, which releases the key, so calling the tool again runs it (as a new task) |
//!
//! `createdAt` is the reservation's time on every read, `lastUpdatedAt` the record's last
//! change (a renewal, the completion), `ttlMs` how long the task is kept from `createdAt`
//! (the tool's `max_hold` plus `retain`; for a completed task, until its record's retention
//! ends). A `failed` or `cancelled` answer is written to the store the first time it is
//! given, so it never changes afterwards, whatever happens to the key (a reconciliation, an
//! operator's `resolve`, a new run). An id this server never gave out is `-32602` (invalid
//! params) for `tasks/get`, `tasks/cancel` and `tasks/update`; a store that cannot be read is
//! an internal error (the task is not failed: ask again).
//!
//! **`tasks/cancel`** is acknowledged for every task of the server. For a `working` task it is
//! recorded in the store and asks the body to stop: the body sees it through
//! `idem::cancel_requested()` (between steps of a long body) and decides. In the process that
//! received the `tasks/cancel` at once; on another worker sharing the store at the body's next
//! lease renewal (every third of the tool's `lease`, and about a second after the body
//! reports `idem::progress`). Nothing is interrupted and the key is never released for it: a
//! body that returns an error releases it (unless `on_error = keep`) and the task reads
//! `cancelled`; a body that finishes anyway completes it (`completed`). A task that ended
//! stays as it ended. **`tasks/update`** is acknowledged for a known task; only a task waiting
//! for approval asks for input (see *Approvals in the client*), and for any other the
//! responses change nothing. An answer under [`APPROVAL_INPUT`] that does not read as an
//! elicitation's result is refused with `-32602`, whatever the task's state.
//!
//! Without `#[idem::tasks]`, an rmcp tool's `timeout` does not take effect (the call waits for
//! its body, and a warning is logged once per tool), `tasks/*` are not served, and clients
//! keep TIMEOUT (for other tools) and the status tools. A tool's task state comes from
//! `#[idem::status_tools]`, which must be on the impl holding the tools (one such impl per
//! server type); sync tools never answer with a task.
//!
//! **Task records.** Records of the namespace `idem.tasks` are what MCP Tasks keep beside the
//! tools' records: `secret` (the store's key for task ids and for the `requestState` of
//! approval questions: keep it, or every task id given out stops answering and every
//! question asked is asked again), and per task `<id>`, `<id>/cancel` and `<id>/end`. They
//! are settled records with a retention, so `idem purge` removes them with the rest;
//! `secret` is kept for a century.
//!
//! # Approvals in the client
//!
//! A tool with `approval` (see `idem::approval`) served through `#[idem::tasks]` asks
//! the model's user in band, the way the client declared it can:
//!
//! | the client | the call that needs approval |
//! | --- | --- |
//! | declared the tasks extension | answers at once with a task in `input_required`, whose `inputRequests` hold the question under [`APPROVAL_INPUT`]; `tasks/update` with the answer under that key decides, `tasks/cancel` declines, and a decision made elsewhere (an operator, another worker) counts too. The task then follows the call: `working` while the approved action runs, `completed` with its result, or `completed` with the `DECLINED` or `APPROVAL_EXPIRED` answer. A retry while it waits is the same task, on any worker |
//! | speaks MCP 2026-07-28 and declared form elicitation | answers with an `InputRequiredResult` holding the question under [`APPROVAL_INPUT`] and a `requestState`; the client asks its user and calls again with the answer and that state (rmcp's `call_tool` does both rounds), which decides, and that call runs the action or answers `DECLINED` (`APPROVAL_EXPIRED` once the request expired) |
//! | an earlier MCP, declared form elicitation | sends `elicitation/create` during the call and waits for the answer, then runs the action or answers `DECLINED`. It waits the tool's `timeout`, else [`ELICITATION_WAIT`] (30 seconds), and never past the request's expiry; a decision made meanwhile elsewhere (an operator, another client, another worker) ends the wait with that decision. When it stops waiting it withdraws the question (`notifications/cancelled` for its `elicitation/create`) and answers from what stands: `APPROVAL_REQUIRED` with the request still waiting (the model tells the user and checks `<fn>_status` later), `APPROVAL_EXPIRED`, or the decision |
//! | none of these | `APPROVAL_REQUIRED`; a person decides out of band (`idem approve`, `idem::approval::approve`) and the model calls again |
//!
//! The user sees the tool, the request's text and exactly what will be approved (the
//! compared fields and the key). Accept approves; decline and cancel decline. The decision
//! is recorded as made by [`DECIDED_IN_THE_CLIENT`], like any other, so every later call, on
//! any worker, follows it; a request nobody decides expires after the tool's approval `ttl`,
//! and an answer that arrives after that is refused (the call answers `APPROVAL_EXPIRED`). A
//! task waiting for approval whose worker stopped after the approval but before the run
//! reads `failed` one `lease` after the decision, saying that calling the tool again runs
//! the approved action (it does, once). `examples/remote_mcp`'s `refund` asks above 500
//! EUR, and `tests/remote_mcp.rs` answers its task through another worker.
//!
//! **An answer counts only as the answer to a question idem asked**, for the request it was
//! asked about, in the scope it was asked in. What a client sends is input, never
//! authority:
//!
//! - `inputResponses` with a `tools/call` (MCP 2026-07-28) count only with the
//!   `requestState` idem sent with the question: opaque (`idem2.approval.` and 22
//!   characters), an HMAC-SHA256 under the store's secret (the one task ids use) of the
//!   tool's namespace, the key (which carries a scoped tool's scope), the request's round and
//!   time, and its compared fields. It cannot be made up, and it is the same for every call
//!   of that request, on every worker. Answers without it, or with the state of another
//!   request (an expired or reopened one), another action or another tenant, change
//!   nothing: the call is asked the question again (a client that declared no elicitation
//!   gets `APPROVAL_REQUIRED`), and nothing runs.
//! - `tasks/update` and `tasks/cancel` decide only the request their task waits for (the
//!   task id names it, and a scoped tool's task is its tenant's only).
//! - Every decision in band is written for that request alone: one made after the request
//!   expired, or was reopened and asked anew, decides nothing.
//! - An answer that does not read as an elicitation's result (`{"action": "accept"}`,
//!   `{"action": "decline"}` or `{"action": "cancel"}`, other fields ignored), such as
//!   `"yes"` or `{"action": 42}`, is refused with `-32602` (invalid params) naming that
//!   shape, in a `tools/call` and in `tasks/update`; the request keeps waiting.
//!
//! What the state proves is that the answer is to the question idem asked; it does not prove
//! who answered it. In band, the client is trusted to put the question to its user, as MCP
//! elicitation is; a client that declares no elicitation is never asked, and its calls wait
//! for a decision out of band.
//!
//! # Remote MCP servers
//!
//! Most MCP servers that change the outside world run remotely: rmcp's streamable HTTP
//! transport (rmcp features `server` and `transport-streamable-http-server`) mounted in axum,
//! behind an authentication layer, several worker processes behind one address, one store
//! they share. The repository's `examples/remote_mcp` is such a server, whole:
//!
//! ```sh
//! cargo run -p idem-examples --features rmcp --bin remote_mcp     # two workers, one address, two tenants, a task
//! cargo run -p idem-examples --features rmcp,postgres --bin remote_mcp -- --db postgres://user@host/db
//! ```
//!
//! The authentication layer puts the principal in the HTTP request's extensions, and the
//! tools read it with [`Authenticated<T>`](Authenticated) ([Tenants](#tenants-authenticated)):
//!
//! <!-- quoted from examples/remote_mcp/billing.rs -->
//! ```rust,ignore
//! /// The authentication layer: a request with a known bearer token gets its `Principal` in
//! /// its extensions, where `Authenticated<Principal>` finds it; any other is 401.
//! pub async fn authenticate(mut request: Request, next: Next) -> Response {
//!     let token = request.headers().get(header::AUTHORIZATION).and_then(|value| value.to_str().ok());
//!     let tenant = token
//!         .and_then(|value| value.strip_prefix("Bearer "))
//!         .and_then(|token| TOKENS.iter().find(|(known, _)| *known == token))
//!         .map(|(_, tenant)| tenant.to_string());
//!     match tenant {
//!         Some(tenant) => {
//!             request.extensions_mut().insert(Principal { tenant });
//!             next.run(request).await
//!         }
//!         None => (StatusCode::UNAUTHORIZED, "a bearer token is required").into_response(),
//!     }
//! }
//! // ...
//!     #[idempotent(key = "export:<req.month>", scope = principal.tenant, timeout = "1s", lease = "3s", store = *self.store)]
//!     #[tool]
//!     async fn export_ledger(
//!         &self,
//!         Authenticated(principal): Authenticated<Principal>,
//!         Parameters(req): Parameters<ExportLedger>,
//!     ) -> Result<CallToolResult, ErrorData> {
//!         for page in 1..=3 {
//!             if idem::cancel_requested() {
//!                 return Err(ErrorData::internal_error("the export was cancelled before it finished", None));
//!             }
//!             idem::progress(format!("exporting page {page} of 3"));
//!             tokio::time::sleep(self.page).await;
//!         }
//!         let export = format!("export-{}-{}", principal.tenant, req.month);
//!         self.effects.happened(&format!("export {export} by worker {}", std::process::id()));
//!         Ok(CallToolResult::structured(json!({"export": export, "rows": 3})))
//!     }
//! // ...
//! #[tool_handler(name = "idem-remote-billing")]
//! #[idem::tasks]
//! impl ServerHandler for Billing {}
//!
//! /// The MCP endpoint: rmcp's streamable HTTP service in stateless mode (every request
//! /// stands alone, so any worker serves any request), behind the authentication layer.
//! pub fn app(billing: Billing) -> axum::Router {
//!     let config = StreamableHttpServerConfig::default().with_legacy_session_mode(false).disable_allowed_hosts();
//!     let mcp = StreamableHttpService::new(move || Ok(billing.clone()), Arc::new(NeverSessionManager::default()), config);
//!     axum::Router::new().route_service("/mcp", mcp).layer(axum::middleware::from_fn(authenticate))
//! }
//! ```
//!
//! **Many workers, one address.** Run the workers **stateless** (`with_legacy_session_mode(false)`,
//! `NeverSessionManager`), not with sticky sessions: rmcp keeps a session in the process that
//! opened it, so without affinity a load balancer sends a session's next request to a worker
//! that answers 404, and with affinity a worker's restart loses its sessions. idem keeps
//! nothing in a worker that a request needs: replays, IN_PROGRESS, CONFLICT, status and tasks
//! all come from the store, so any worker answers any request (`tests/remote_mcp.rs` runs two
//! worker processes behind a round-robin proxy). Whether a client takes MCP tasks is read from
//! each request: clients of MCP 2026-07-28 (`server/discover`; in rmcp,
//! `serve_with_lifecycle(transport, ClientLifecycleMode::Discover { .. })`) send their
//! capabilities with every request, so a stateless worker knows; a client of the older
//! `initialize` handshake declared them once, in a session a stateless worker does not keep,
//! and gets TIMEOUT and the status tools instead of tasks (to give such clients tasks, run
//! rmcp's legacy session mode with sticky sessions).
//!
//! **Tasks across workers.** A task handed out by one worker is read, cancelled and finished on
//! any other (its id is derived under the store's secret, its records are in the store). A
//! `tasks/cancel` that reaches another worker than the one running the body is recorded in
//! the store; the body's worker sees it at the body's next lease renewal (every third of the
//! tool's `lease`: give a tool that should stop quickly a short lease). A worker that dies
//! mid-call leaves its reservation: after the lease, the task reads `failed` with
//! `OUTCOME_UNKNOWN`, and the next call runs the `reconcile` hook or answers
//! `OUTCOME_UNKNOWN`, never the action again blindly.
//!
//! **PostgreSQL for many workers.** Every worker may call `PgStore::migrate()` at start, and
//! each has its own pool: the module `idem::store::postgres` (*Many workers*) says how to
//! size the pools against the server's `max_connections`. The example's workers keep 8
//! connections each.

mod authenticated;
pub(crate) mod tasks;

pub use authenticated::Authenticated;
pub use tasks::{APPROVAL_INPUT, DECIDED_IN_THE_CLIENT, ELICITATION_WAIT};

use std::any::Any;

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock, IntoContents};
use serde::Serialize;
use serde_json::Value;

use super::status_tool::{Rmcp, StatusTool};
use crate::error::{Error, ErrorCode};
use crate::output::{REPLAYED_FIELD, ToolOutput};
use crate::status::Status;

pub(crate) mod status_input;

/// The text added to a replayed result whose content does not show the structured
/// result's `"replayed": true`, so a model that reads only the text sees the replay too.
pub const REPLAY_NOTE: &str =
    "replayed: an earlier call with the same key already did this; this is its recorded result, nothing was done again";

/// rmcp's usual tool return type. A result with `is_error: true` and an `Err(ErrorData)`
/// are the body's failures: the key is released (unless `on_error = keep`, which keeps
/// `Err(ErrorData)` only). Every idem answer is `Ok(CallToolResult::structured_error(..))`.
// Not listed in "the trait is implemented for" hints: they would differ with the feature.
#[diagnostic::do_not_recommend]
impl ToolOutput for Result<CallToolResult, ErrorData> {
    type Value = CallToolResult;

    fn success(&self) -> Option<&CallToolResult> {
        self.as_ref().ok().filter(|result| result.is_error != Some(true))
    }

    fn from_value(mut value: CallToolResult) -> Self {
        mark_replayed(&mut value);
        Ok(value)
    }

    fn from_error(error: Error) -> Self {
        Ok(error_result(&error))
    }
}

/// Status tools answer with a tool result, whatever their tool returns.
impl StatusTool for Rmcp {
    type Answer = Result<CallToolResult, ErrorData>;

    fn answer<T: Serialize + 'static>(status: Result<Status<T>, Error>) -> Self::Answer {
        Ok(status_result(status))
    }
}

/// An idem error as the tool result a model sees: `isError: true`, the structured error
/// `{"error": {"code", "message", "retryable", "suggestion"}}` as structured content and,
/// for clients that read only text, as a text block.
pub fn error_result(error: &Error) -> CallToolResult {
    CallToolResult::structured_error(error.to_json())
}

/// A status read as the tool result a model sees: the status as structured content
/// (`{"status": "completed", "result": ...}`, `{"status": "in_progress", ...}`, ...), or
/// the error that prevented the read as [`error_result`]. A completed `CallToolResult` is
/// shown by its structured content, else by its text.
pub fn status_result<T: Serialize + 'static>(status: Result<Status<T>, Error>) -> CallToolResult {
    let status = match status {
        Ok(status) => status,
        Err(error) => return error_result(&error),
    };
    let json = match &status {
        Status::Completed(value) => match (value as &dyn Any).downcast_ref::<CallToolResult>() {
            Some(result) => Ok(serde_json::json!({"status": "completed", "result": result_json(result)})),
            None => serde_json::to_value(&status),
        },
        _ => serde_json::to_value(&status),
    };
    match json {
        Ok(json) => CallToolResult::structured(json),
        Err(error) => error_result(&Error::new(
            ErrorCode::RecordUnreadable,
            format!("the recorded result cannot be shown as JSON ({error})"),
        )),
    }
}

/// What a model reads of a tool result: its structured content, else its text.
fn result_json(result: &CallToolResult) -> Value {
    if let Some(structured) = &result.structured_content {
        return structured.clone();
    }
    let texts: Vec<&str> = result.content.iter().filter_map(|block| block.as_text()).map(|t| t.text.as_str()).collect();
    Value::String(texts.join("\n"))
}

/// Marks a replayed result: `"replayed": true` in its structured content when that is a
/// JSON object (and in the text block that mirrors it), else a [`REPLAY_NOTE`] text block.
fn mark_replayed(result: &mut CallToolResult) {
    let mut shown = false;
    if let Some(Value::Object(map)) = &mut result.structured_content {
        let before = Value::Object(map.clone()).to_string();
        map.insert(REPLAYED_FIELD.to_owned(), Value::Bool(true));
        let after = Value::Object(map.clone()).to_string();
        for block in &mut result.content {
            if let ContentBlock::Text(text) = block
                && text.text == before
            {
                text.text.clone_from(&after);
                shown = true;
            }
        }
    }
    if !shown {
        result.content.push(ContentBlock::text(REPLAY_NOTE));
    }
}

/// An `idem::Error` as rmcp content: the structured error as JSON text. With it,
/// `Result<String, idem::Error>` is an rmcp tool return type, and rmcp marks the error
/// result `isError: true`.
impl IntoContents for Error {
    fn into_contents(self) -> Vec<ContentBlock> {
        vec![ContentBlock::text(self.to_json().to_string())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn idem_errors_are_tool_results_the_model_sees() {
        let error = Error::new(ErrorCode::Conflict, "amount differs").with_suggestion("ask the user");
        let Ok(result) = <Result<CallToolResult, ErrorData>>::from_error(error) else { panic!("a protocol error") };
        assert_eq!(result.is_error, Some(true));
        let structured = result.structured_content.unwrap();
        assert_eq!(structured["error"]["code"], "CONFLICT");
        assert_eq!(structured["error"]["retryable"], false);
        assert_eq!(structured["error"]["suggestion"], "ask the user");
        assert_eq!(result.content[0].as_text().unwrap().text, structured.to_string());
    }

    #[test]
    fn failed_results_are_not_stored() {
        let failed: Result<CallToolResult, ErrorData> = Ok(CallToolResult::error(vec![ContentBlock::text("no")]));
        assert!(failed.success().is_none());
        let fine: Result<CallToolResult, ErrorData> = Ok(CallToolResult::success(vec![ContentBlock::text("ok")]));
        assert!(fine.success().is_some());
    }

    #[test]
    fn replays_are_marked_in_structured_content_and_its_text() {
        let Ok(replayed) =
            <Result<CallToolResult, ErrorData>>::from_value(CallToolResult::structured(json!({"id": 1})))
        else {
            panic!()
        };
        assert_eq!(replayed.structured_content, Some(json!({"id": 1, "replayed": true})));
        assert_eq!(replayed.content.len(), 1);
        assert_eq!(replayed.content[0].as_text().unwrap().text, r#"{"id":1,"replayed":true}"#);
    }

    #[test]
    fn text_replays_get_a_note() {
        let Ok(replayed) =
            <Result<CallToolResult, ErrorData>>::from_value(CallToolResult::success(vec![ContentBlock::text("sent")]))
        else {
            panic!()
        };
        assert_eq!(replayed.content[1].as_text().unwrap().text, REPLAY_NOTE);
    }

    #[test]
    fn status_reads_show_the_result_the_model_saw() {
        let completed = status_result(Ok(Status::Completed(CallToolResult::structured(json!({"id": 1})))));
        assert_eq!(completed.is_error, Some(false));
        assert_eq!(completed.structured_content, Some(json!({"status": "completed", "result": {"id": 1}})));
        let missing = status_result::<CallToolResult>(Ok(Status::NotFound));
        assert_eq!(missing.structured_content, Some(json!({"status": "not_found"})));
        let failed = status_result::<u8>(Err(Error::new(ErrorCode::StoreUnavailable, "down")));
        assert_eq!(failed.is_error, Some(true));
    }
}
