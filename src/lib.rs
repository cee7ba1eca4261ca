#![doc = include_str!("../README.md")]
//!
//! # Reference
//!
//! What follows is the reference for a tool author: the attribute, keys, what every call
//! answers, slow calls, tenants. Stores, telemetry, the frameworks, the HTTP layer and
//! testing have their own modules (the map above).
//!
//! ## Attribute arguments
//!
//! `#[idempotent(...)]` goes on a function, sync or async, free or a method (`&self`,
//! `self: Arc<Self>`), that returns a `Result<T, E>` (see [Return types](#return-types)).
//!
//! The grammar has three forms. An argument with one value is `name = value`; a feature with
//! settings of its own is a group, `name(setting, ...)`, which holds every setting that means
//! nothing without it (serde's `rename(serialize = "...")` style); a word alone is a flag.
//! After `=` comes either your Rust, evaluated as written (an expression, a function, a
//! path), or a value of a fixed shape (a string, a duration, a list, `keep`), never one that
//! could be both: idem's own words (`always`, `over_budget`) stand only where a name
//! stands, so no word of idem's can be mistaken for a parameter of yours. Hooks are named by
//! their job (`reconcile`, `notify`); `on_<event> = <word>` picks what idem does
//! (`on_error = keep`). Durations are a whole number and a unit, `ms`, `s`, `m`, `h` or `d`
//! (`"500ms"`, `"30s"`, `"5m"`, `"2h"`, `"1d"`); zero, or anything else, does not compile.
//! Spellings of earlier versions (`approval = required`, `approval_text = "..."`, ...) do not
//! compile, with a message that shows this grammar's.
//!
//! | argument | value | meaning | default |
//! | --- | --- | --- | --- |
//! | `key = "invoice:<customer>:<period>"` | a template string | The key template: literal text and placeholders, each a parameter (`<customer>`), a field path (`<req.customer>`), or a name bound by a parameter pattern (`Parameters(Req { customer, .. }): Parameters<Req>`). Checked at compile time; see [Keys](#keys). | required |
//! | `compare = [amount, req.currency]` | a list of fields | Fields that must be equal on a repeat. A difference is a CONFLICT naming each field with its first and its new value, never a silent replay. Fields are named as the model sends them: `amount`, also for `req.amount` where rmcp's `Parameters(req)` binds the arguments (or `args.amount` of an ADK-Rust tool's argument struct `args`), and by their JSON names where serde renames them (see [Field names the model sees](#field-names-the-model-sees)). Their types implement `serde::Serialize`. | none |
//! | `json_names = [args.customer_id = "custId"]` | a list of fields, each `= "name"` | The JSON names of key and compared fields of the arguments the model sends (rmcp's `Parameters<T>`, an ADK-Rust argument struct) that `#[serde(rename = "...")]` renames: the macro cannot see the struct's attributes. Each entry is such a field, or a field on the way to one (`args.customer = "cust"` for `<args.customer.id>`), with the JSON name of its last field. An entry that is none of these does not compile. See [Field names the model sees](#field-names-the-model-sees). | none: names `rename_all` gives are found by themselves |
//! | `store = expr` | an expression | The store, evaluated on every call; it may use `self` or a parameter (`store = self.store`, `store = *STORE` for a `LazyLock`). Any [`store::Store`], for sync and async tools alike, also behind `&`, `Box` or `Arc`, or a [`store::DynStore`] chosen at run time; see [`store`]. | [`store::default_store`]: an SQLite file in the user's data directory, unless `IDEM_DB` or [`store::set_default_store_path`] names one ([`store::default_store_path`]) |
//! | `scope = expr` | an expression | Whose records these are: a tenant or user id from the authenticated request, evaluated on every call like `store`; see [Tenants](#tenants). An empty scope is `INVALID_KEY`. | one scope for all callers |
//! | `unscoped` | a flag | Says that a tool which takes the caller's identity (rmcp's `Extension<T>`, ADK-Rust's `ToolContext`) shares its records across callers on purpose; without it, or `scope`, such a tool compiles with a warning. Contradicts `scope`. | |
//! | `namespace = "billing"` | a string | The record namespace. Moving a tool to another module (or renaming its crate) changes its default namespace, and its earlier records no longer answer its calls: pin it with `namespace = "..."` first. Two methods of one name in two impl blocks of one module would get one default namespace: the second one called then refuses every call with `NAMESPACE_CLASH` (never a replay of the other's result) until one of them names its own. Give two tools one namespace to share keys on purpose. | the function's module path and name (`my_crate::billing::send_invoice`), so two tools never share keys by accident |
//! | `lease = "30s"` | a duration | How long the key of a call whose process died stays blocked before the call counts as abandoned. A running body's lease is renewed every third of it, so it need not outlast the slowest body; see [Slow calls](#slow-calls). | 30 seconds |
//! | `max_hold = "1h"` | a duration | How long a running body's lease is renewed at most. Past it, renewal stops and a body that hangs for good frees its key one lease later. At least one lease: a shorter one does not compile. | 1 hour |
//! | `timeout = "2s"` | a duration | Async tools: the caller gets `TIMEOUT` after this long, while the body goes on and completes the key; see [Slow calls](#slow-calls). Needs the `tokio` feature. For an rmcp tool with `approval` whose client is asked during the call (an elicitation), it is also how long the call waits for the person's answer before it answers `APPROVAL_REQUIRED` ([Approvals in the client](frameworks/rmcp/index.html#approvals-in-the-client)). | none: the caller waits for the body (and an elicitation waits [`ELICITATION_WAIT`](frameworks/rmcp/constant.ELICITATION_WAIT.html), 30 seconds) |
//! | `retain = "7d"` | a duration | How long a settled record is kept before [`store::Store::purge`] (`idem purge`) may remove it. A retry after its record was purged runs the action again: keep records at least as long as any layer may retry (model: seconds; webhooks: hours; dead letters: days). | 7 days |
//! | `on_error = keep` | `keep` or `release` | The body's `Err` is the final answer, stored and replayed (for errors that happen after the side effect, as Stripe does). The error type must serialize and deserialize. | `release`: an `Err` means the action did not happen, so the key is released |
//! | `reconcile = f` | a function (a hook) | What to do with an abandoned call once its lease ended: a function or closure taking an [`Abandoned`] and answering a [`Reconciled`], after asking the provider; async for async tools (`\|a\| async move { ... }`). See [Errors](#errors). | none: an abandoned call is `OUTCOME_UNKNOWN` |
//! | `approval` | a flag, or a group of the settings below | The action needs a person's approval before its first run. `approval` alone is `approval(always)`. The call answers `APPROVAL_REQUIRED` until a person approves; see [Approvals](#approvals-what-a-key-cannot-fix) and [`approval`]. A group names which calls ask (`always`, `when`, `over_budget`, or `when` and `over_budget`). | none |
//! | `approval(always)` | a flag | Every first call of an action asks. Contradicts `when`. | |
//! | `approval(when = amount > 1000.0)` | a `bool` expression | A call asks when the condition holds: an expression over the parameters, evaluated per call before anything is reserved. A parameter named `required` or `always` is read like any other. | |
//! | `approval(over_budget)` | a flag | A call the tool's budget has no room for asks instead of answering `BUDGET_EXCEEDED`; once approved it runs, charged past the limit. Alone, only such a call asks; with `when`, a call asks when either holds; with `always`, every first call asks and an approved one may run past the limit. Needs `budget`. | `BUDGET_EXCEEDED` |
//! | `approval(text = "pay <supplier> <amount> EUR")` | a template string | What the person reads: literal text and `<param>` or `<param.field>` placeholders, written with `Display`. | the tool's first doc sentence, then the key and the compared fields |
//! | `approval(ttl = "4h")` | a duration | How long a request waits for a decision; then it expires (`APPROVAL_EXPIRED`) and a later call asks anew. | [`approval::DEFAULT_APPROVAL_TTL`]: one day |
//! | `approval(notify = notify_approvers)` | a function (a hook) | A `fn(&idem::approval::Request)` called once when a request is made, never for a repeat: one message per action in the approvers' channel. A hook that panics is caught; the request stands. | none |
//! | `budget = REFUNDS` | the path of a `static` | A [`budget::Budget`] `static` (`Budget::count("refunds", 20).per_day()`, or `Budget::sum_of("refunded", "amount", 5_000.0)` over a compared field) that the tool's fresh runs are charged to, per scope, in the same write as the reservation. The store must keep budgets ([`store::BudgetStore`]: every bundled store does); one that does not is a compile error at its `store = ...`. A call without room answers `BUDGET_EXCEEDED`, or asks a person with `approval(over_budget)`; see [Budgets](#budgets-what-a-runaway-agent-cannot-spend) and [`budget`]. | none |
//! | `describe = "..."` or `describe = off` | a string template, or `off` | The paragraph idem adds to the tool's description (see [The description the model reads](#the-description-the-model-reads)): `describe = "..."` replaces it with your text, whose placeholders (`<customer>`, `<req.customer>`) must name a parameter or a field of one (any other does not compile) and become the field's name as the model knows it (its JSON name for the arguments the model sends); `describe = off` adds none. | the generated paragraph |
//! | `crate = "my_idem"` | a string | Where the generated code finds idem when your Cargo.toml renames the dependency (`my_idem = { package = "idem-tools", version = "0.1" }`); without it such a crate fails to compile with "cannot find `idem` in the crate root". A single name must be one of your crate's dependencies as its Cargo.toml names them: any other is one compile error at the string, saying what idem is called there. A path (`crate = "crate::deps::idem"`, for a re-export) is used as written. [`status_tools`] reads it from each tool's attribute, and [`tasks`] takes it the same way. | `::idem` |
//!
//! Settings combine in one group: `approval(when = amount > 1000.0, over_budget, text = "pay
//! <supplier> <amount> EUR", ttl = "4h", notify = notify_approvers)`.
//!
//! ### What it generates
//!
//! The function keeps its exact signature (name, visibility, generics, receiver, parameter
//! patterns, asyncness, return type), so frameworks that read it still do. Beside it:
//!
//! - `<name>_status(...)`, read-only, takes the receiver and the parameters the key (and the
//!   `store` and `scope` expressions) use, and returns `Result<`[`Status<T>`](Status)`,
//!   idem::Error>`; it is async when the tool is. A model that lost track of a call may no
//!   longer have its other arguments, so it needs only the key's fields.
//! - `<name>_record_id(...)`, always sync, takes the key's parameters and what the scope
//!   reads (the receiver only when the scope reads `self`), builds the key without reading
//!   anything, and returns `Result<`[`store::OwnedRecordId`]`, idem::Error>` (the tool's
//!   namespace and the derived key), to read or settle the record through a
//!   [`store::Store`] without spelling the namespace out.
//! - `<name>_description()`, always sync, takes nothing and returns the `String` the tool's
//!   framework shows the model as its description: the tool's own text (its doc comment as
//!   paragraphs, or its framework attribute's `description`), a blank line, and idem's
//!   paragraph. For a tool schema of your own, or a test.
//!
//! On an rmcp tool, [`status_tools`] serves the status function as a read-only tool; on a
//! rig tool, it is a rig tool too; an ADK-Rust tool (`send_invoice`) gets a read-only ADK
//! `Tool` beside it (`SendInvoiceStatus`) (see [`frameworks`]).
//!
//! ### The description the model reads
//!
//! The model reads a tool's description to decide how to call it, and how to call it again:
//! told which status tool to read after a timeout, it reads it instead of calling twice. idem
//! knows every fact that sentence needs, so it writes it: after the tool's own text comes a
//! paragraph made from the attribute, in plain English, that changes when the attribute does:
//!
//! 1. what a repeat gets: "Safe to retry: a repeat for the same customer and period never
//!    runs it twice; it gets the first call's result, or IN_PROGRESS while that call runs."
//!    (the key's fields);
//! 2. with `compare`: "A repeat with a different amount is refused with CONFLICT: ask the
//!    user.";
//! 3. "After a TIMEOUT or IN_PROGRESS, call send_invoice_status with the same customer and
//!    period instead of calling again." (the status tool by its name, `<name>_status`, which
//!    [`status_tools`] serves for rmcp; serve it, or write your own text with `describe`);
//! 4. with `approval(always)`: "A person must approve each new action first: it then
//!    answers APPROVAL_REQUIRED, and send_invoice_status shows the decision."; with
//!    `approval(when = ...)`: "It needs a person's approval when amount > 1000.0: ..." (the
//!    condition as written, fields by the names the model knows);
//! 5. with `budget`: "It is limited by the budget refunds (at most 20 runs per day): a call
//!    without room answers BUDGET_EXCEEDED." (or "... needs a person's approval
//!    (APPROVAL_REQUIRED)" with `approval(over_budget)`).
//!
//! Three sentences for a keyed tool with `compare` (`send_invoice`'s: 337 characters, 57
//! words, about 85 tokens at four characters a token), one more for each of approval and
//! budget. Where each framework puts it:
//!
//! | framework | where | field names | budget |
//! | --- | --- | --- | --- |
//! | rmcp | `#[tool]`'s description (`tools/list`) | JSON names, from the input schema at run time (serde's `rename_all` and `rename` included) | its name, limit and window |
//! | none (a plain function) | `<name>_description()` | the names the model knows (`json_names` gives renamed ones) | its name, limit and window |
//! | rig | `#[rig_tool]`'s description (`ToolDefinition`) | Rust names, or those `json_names` gives | the `static`'s name (rig takes a literal) |
//! | ADK-Rust | one more doc line, which ADK's `#[tool]` joins into `Tool::description()` and its declaration | Rust names, or those `json_names` gives (ADK takes a literal, fixed before serde's `rename_all` is visible: write `json_names` for such a struct; when the agent builds its declarations, the status tool logs a warning, target `idem`, for each name the description gives otherwise than the schema) | the `static`'s name |
//!
//! A doc comment that is not all literals (`#[doc = include_str!("send.md")]`) comes first
//! as its values joined by line breaks (rmcp, plain functions), or as ADK-Rust reads it. rig
//! takes a literal only, so such a rig tool gets no paragraph: give it
//! `#[rig_tool(description = "...")]`. `describe = "..."` replaces the paragraph,
//! `describe = off` leaves it out (the tool's own text alone, as before). A status tool's description is idem's too: read-only, the key's
//! fields it takes, and every state it can answer (the approval states when the tool asks a
//! person).
//!
//! ### What does not compile
//!
//! Keys name the action, not the attempt. These do not compile, each with a message that
//! says why and what to use instead: placeholders named like clock readings (`now`,
//! `timestamp`, `ts`, `created_at`, ...), tool call or attempt IDs (`call_id`,
//! `tool_call_id`, `attempt`, `retry`, ...), random values (`nonce`, `random_*`,
//! `uuid_v4`, ...); parameters of float or clock types (`f64`, `SystemTime`, `Instant`,
//! chrono and time date-times); any key field whose type does not implement [`KeyPart`]
//! (which catches aliases and newtypes); unknown names, empty or unclosed placeholders,
//! templates without a placeholder, placeholders not separated by a character such as `:`
//! or `/`; `compare` entries that name nothing, repeat a key field or appear twice; a
//! `max_hold` shorter than the `lease`; a `scope` that reads what the model fills (an rmcp
//! `Parameters<T>` argument, a rig tool's arguments, an ADK-Rust tool's argument struct); a
//! bare `#[tool]` that is neither rmcp's nor ADK-Rust's by its signature (write its path); an
//! `approval(when = ...)` condition that reads anything but the parameters (a field of
//! `self`, a static, a local) or is not a `bool`; an `approval(...)` group that does not say
//! which calls ask, or says both `always` and `when`; a text placeholder that names no
//! parameter, and a `notify` hook of another signature; a `budget` that is not a
//! [`budget::Budget`], a sum budget whose field is not in `compare` (so a repeat with another amount
//! is a CONFLICT, never a second charge), and `approval(over_budget)` without `budget`. An
//! `event_id` or `request_id` created once before the first attempt is a fine key field.
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
//!
//! ## Keys
//!
//! A key names the business action (`invoice:acme:2026-10`), never the attempt: the same
//! action spelled differently on a retry gives the same key, and different actions never
//! share one.
//!
//! - **Templates.** Literal text and placeholders. A placeholder names a parameter
//!   (`<customer>`), a field of one (`<req.customer>`, `<req.customer.id>`), or a name a
//!   parameter pattern binds. A template needs at least one placeholder, and two
//!   placeholders must be separated by a character such as `:` or `/`.
//! - **Normalization.** Each field's value is trimmed, NFKC-normalized and case-folded, so
//!   `" ACME "` and `"acme"` are one key. `<sku:exact>` takes the value as it is.
//! - **Hashing.** `<email:hash>` stores a hash of the value instead of the value: it keeps
//!   personal data such as e-mail addresses out of keys, stores and logs.
//! - **Escaping.** Then each value is percent-encoded: letters, digits, `-`, `.`, `_`, `~`
//!   and every non-ASCII character stay, every other ASCII character becomes `%` and two
//!   upper-case hex digits. So `invoice:<customer>:<period>` with `" Acme Corp "` and
//!   `"2026/10"` is stored as `invoice:acme%20corp:2026%2F10`, and `("a:b", "c")` never
//!   meets `("a", "b:c")`. The `idem` command shows and takes keys in this form.
//! - **Scopes.** A scoped tool's keys start with 32 hex digits of the scope's SHA-256 and a
//!   `/` ([`store::scope_prefix`]); see [Tenants](#tenants).
//! - **Empty fields.** A key field that is empty after normalization answers `INVALID_KEY`;
//!   the body does not run.
//! - **Key field types** implement [`KeyPart`]: strings, integers, `bool`, `char` (also
//!   through references and smart pointers), and your own identifier types. Floats, clock
//!   readings and per-call random values cannot be key fields.
//!
//! ### Field names the model sees
//!
//! The attribute names fields as Rust does (`<args.customer_id>`, `compare =
//! [args.amount_eur]`); the model sends and reads JSON, whose names serde's `rename_all`
//! and `rename` may have changed. For a field of the arguments the model sends (rmcp's
//! `Parameters<T>`, an ADK-Rust tool's argument struct), everything the model meets names
//! it by its JSON name: a status tool's parameters, what it reads, its description and its
//! errors, and `CONFLICT` (message and `differences`), `INVALID_KEY` and
//! `BUDGET_EXCEEDED`. The macro sees the function, not the struct's attributes, so idem
//! finds each field's JSON name at run time in the JSON schema of the arguments, the one
//! the model is shown (rmcp's input schema of `Parameters<T>`, the parameters of the tool
//! ADK's `#[tool]` makes), field by field for a nested path (`<args.customer.id>`, through
//! the schema's `$ref`s). A field's JSON name is, in this order:
//!
//! 1. the name `json_names = [args.customer_id = "custId"]` gives it;
//! 2. its Rust name, when the schema has a property of that name;
//! 3. the one property that one of serde's `rename_all` rules spells from its Rust name:
//!    for `customer_id`, `CUSTOMER_ID` (`UPPERCASE`, `SCREAMING_SNAKE_CASE`), `CustomerId`
//!    (`PascalCase`), `customerId` (`camelCase`), `customer-id` (`kebab-case`),
//!    `CUSTOMER-ID` (`SCREAMING-KEBAB-CASE`); `lowercase` and `snake_case` leave a field
//!    as it is.
//!
//! So a `rename_all` needs nothing from you, and a `#[serde(rename = "...")]` of a key or
//! compared field needs a `json_names` entry. When no JSON name is found (a `rename` that
//! `json_names` does not name, a given name the schema does not have, two properties that
//! rules could spell from one name), the status tool leaves the field out of its parameters
//! and answers every call `INVALID_KEY`, naming the field, why, and the `json_names` entry
//! to write (and logs it as an error); its declaration and the tool list are built as
//! always, never a panic. The tool itself runs as always, and its answers name such a field
//! by its Rust name (logged once as a warning).
//!
//! Records keep the names they always had, the Rust ones (`amount_eur`), and so do the
//! field names of [`Budget::sum_of`](budget::Budget::sum_of) (the names in `compare`): renaming fields in JSON
//! changes nothing stored. Other tools' fields (plain parameters, rig's arguments) are named
//! as in Rust, which is how the model sends them.
//!
//! ### Stable identifiers
//!
//! A key names the action only if the model names it the same way on every try. Normalization
//! takes care of case and spaces (`" ACME "` is `acme`), not of wording: "October 2026" on one
//! try and "2026-10" on the next are two keys, so two invoices; and an identifier the model
//! made up gets a key of its own and an action on nothing real. Validate identifiers against
//! your data before acting: make the key field a type that parses what the model may write
//! into one canonical form (its `KeyPart` writes that form) and refuses what names nothing:
//!
//! <!-- quoted from tests/support/stable_identifiers.rs -->
//! ```rust
//! use std::fmt;
//! use std::str::FromStr;
//!
//! use serde::{Deserialize, Deserializer};
//!
//! /// A billing period, one month: "2026-10", "October 2026" and "oct 2026" are one period,
//! /// `2026-10` in keys. "Octember 2026" names no month and is refused.
//! #[derive(Clone, Copy, Debug, PartialEq, Eq)]
//! pub struct Period {
//!     year: u16,
//!     month: u8,
//! }
//!
//! const MONTHS: &str = "january february march april may june july august september october november december";
//!
//! impl FromStr for Period {
//!     type Err = String;
//!
//!     fn from_str(text: &str) -> Result<Period, String> {
//!         let lower = text.trim().to_lowercase();
//!         let named = |name: &str| MONTHS.split(' ').position(|month| name.len() >= 3 && month.starts_with(name));
//!         let (year, month) = match lower.split_once(['-', ' ']) {
//!             Some((year, month)) if year.len() == 4 => (year.parse().ok(), month.parse().ok()),
//!             Some((month, year)) => (year.trim().parse().ok(), named(month).map(|index| index as u8 + 1)),
//!             None => (None, None),
//!         };
//!         match (year, month) {
//!             (Some(year @ 1000..=9999), Some(month @ 1..=12)) => Ok(Period { year, month }),
//!             _ => Err(format!("unknown billing period {text:?}: write it as 2026-10 or October 2026")),
//!         }
//!     }
//! }
//!
//! /// Parsed where the arguments are parsed: a period that names no month never reaches the
//! /// tool, so idem reserves nothing for it.
//! impl<'de> Deserialize<'de> for Period {
//!     fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Period, D::Error> {
//!         String::deserialize(deserializer)?.parse().map_err(serde::de::Error::custom)
//!     }
//! }
//!
//! /// The key spells the period one way, however the model wrote it.
//! impl idem::KeyPart for Period {
//!     fn write_key_text(&self, out: &mut String) {
//!         out.push_str(&self.to_string());
//!     }
//! }
//!
//! impl fmt::Display for Period {
//!     fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
//!         write!(f, "{:04}-{:02}", self.year, self.month)
//!     }
//! }
//! ```
//!
//! `Deserialize` runs where the arguments are parsed, before idem reserves anything, so a
//! refused identifier leaves no record and runs no body:
//!
//! - **rmcp.** Give the request type the field (`period: Period`, with
//!   `#[schemars(with = "String")]` for its schema). rmcp answers a call it cannot parse
//!   with a tool result the model reads (`isError: true`, `failed to deserialize parameters:
//!   unknown billing period "Octember 2026": write it as 2026-10 or October 2026`), and the
//!   status tool reads its key fields through the same type (an `INVALID_KEY` naming the
//!   field).
//! - **Plain functions** take a `Period`; whoever turns the model's text into arguments
//!   (`serde_json::from_value`, `"oct 2026".parse()`) meets the refusal there.
//!
//! A retry worded "oct 2026" then replays the first call. Identifiers that live in your data
//! work the same way: a `Customer` whose `FromStr` looks the name up in the customer table
//! your process holds (`Deserialize` cannot query a database; load the table at start or
//! keep a cache) gives "Acme Corp", "acme" and "cus_7" one key and refuses "Globex".
//! The repository's `tests/support/stable_identifiers.rs` has both types, and
//! `tests/edges/stable_identifiers.rs` and `tests/frameworks/rmcp/stable_identifiers.rs`
//! check, for a plain function and through rmcp's client, that four wordings make one
//! invoice and that an unknown customer or period leaves the store empty.
//!
//! ## Outcomes
//!
//! | situation | answer | retryable | suggestion |
//! | --- | --- | --- | --- |
//! | first call | the body runs once; its result is stored before the tool returns | | |
//! | completed earlier, same compared fields | the first result, exactly as stored; marked `"replayed": true` only where a model reads JSON or the type asks ([Return types](#return-types)) | | |
//! | completed earlier or still running, compared fields differ | [`CONFLICT`](ErrorCode::Conflict), naming each field with its stored and requested value | no | ask the user before changing or adding |
//! | first call still running | [`IN_PROGRESS`](ErrorCode::InProgress), with `retry_after_ms`, the call's start (`since_ms`) and the body's last `progress` message | no | call `<fn>_status` in `retry_after_ms` |
//! | first call abandoned (panic, dropped future, crash, or a process paused) and its lease ended | the `reconcile` hook's answer; without a hook [`OUTCOME_UNKNOWN`](ErrorCode::OutcomeUnknown), which says that a paused first call may still record its result | no | call `<fn>_status` later, check with the provider or a person; never re-run blindly |
//! | `timeout` passed before the body finished | [`TIMEOUT`](ErrorCode::Timeout), with `retry_after_ms`; the body goes on and completes the key | no | call `<fn>_status` in `retry_after_ms` |
//! | store unreachable or failing | [`STORE_UNAVAILABLE`](ErrorCode::StoreUnavailable); the body does not run | yes | retry in a moment |
//! | key field empty after normalization (or an empty `scope`) | [`INVALID_KEY`](ErrorCode::InvalidKey), naming the field as the model sent it; the body does not run | no | |
//! | stored result no longer reads as the tool's type | [`RECORD_UNREADABLE`](ErrorCode::RecordUnreadable); never re-run | no | a person must inspect the record |
//! | record in a state this version does not know (a newer idem during a rolling deploy, a hand edit) | `RECORD_UNREADABLE`, naming namespace and key, on calls and `<fn>_status` | no | a person must inspect the record |
//! | the body's result does not read back from its JSON (`f64::NAN`, an infinity: JSON writes `null`) | the caller gets its result; nothing is stored and the key reads as abandoned: the `reconcile` hook's answer, else `OUTCOME_UNKNOWN` | no | check with the provider or a person |
//! | the action needs approval (`approval`) and none was given yet | [`APPROVAL_REQUIRED`](ErrorCode::ApprovalRequired), with the request (`"approval"`: namespace, key, text, compared fields, when it expires); nothing runs. See [Approvals](#approvals-what-a-key-cannot-fix) | no | ask the user to approve; call `<fn>_status` later |
//! | a person declined the action | [`DECLINED`](ErrorCode::Declined), naming who, when and why; every call, until reopened | no | do not call again; tell the user |
//! | the approval request expired without a decision | [`APPROVAL_EXPIRED`](ErrorCode::ApprovalExpired), once; the next call asks anew | no | ask the user whether it is still wanted |
//! | the tool's budget has no room left in this window (`budget = ...`) | [`BUDGET_EXCEEDED`](ErrorCode::BudgetExceeded), with the budget (`"budget"`: name, used, limit, window start, `resets_at_ms`); nothing runs or is reserved, nothing is spent. See [Budgets](#budgets-what-a-runaway-agent-cannot-spend) | no | do not call again before the reset; tell the user |
//! | a sum budget's field is not a number from 0 to 9e12 | [`INVALID_KEY`](ErrorCode::InvalidKey); nothing runs or is spent | no | call again with a number of zero or more |
//! | another tool already uses this tool's default namespace (two methods of one name, one module) | [`NAMESPACE_CLASH`](ErrorCode::NamespaceClash); the body does not run, on every call of the second tool | no | give one of them `namespace = "..."` |
//!
//! `STORE_UNAVAILABLE` is only for failures of the store itself (unreachable, a driver or
//! disk error); a record the store holds but cannot interpret is never reported as an outage
//! that a retry could fix. What each store answers when it fails, and within what time, is in
//! [`store`].
//!
//! ## Errors
//!
//! Answers reach the caller through the tool's own return type: `Result<T, E>` with
//! `E: From<idem::Error>`. Each [`Error`] has a stable [`code`](Error::code), a
//! [`message`](Error::message), a [`retryable`](Error::retryable) flag and a
//! [`suggestion`](Error::suggestion) naming the status function, and serializes as
//! `{"error": {"code", "message", "retryable", "suggestion"}}` (a CONFLICT adds
//! `"differences": [{"field", "stored", "requested"}]`; IN_PROGRESS and TIMEOUT add
//! `"retry_after_ms"` and, when known, `"since_ms"` and `"progress"`, which
//! [`Error::running()`](Error::running) gives in code as an [`error::Running`], and
//! [`Error::retry_after()`](Error::retry_after) as a `Duration`). It also deserializes from
//! that form, so an error enum kept with `on_error = keep` can wrap it. A CONFLICT's
//! [`Error::differences()`](Error::differences) give each field's stored and requested values
//! as `serde_json::Value` ([`error::FieldDifference`]).
//!
//! **The body's errors.** An `Err` from the body releases the key: the action did not happen,
//! so a retry may run it. With `on_error = keep` the `Err` is the final answer instead,
//! stored and replayed to every repeat (and `<fn>_status` reads `failed`), for errors that
//! happen after the side effect; the error type must serialize and deserialize.
//!
//! **Crashes.** A panic, a dropped future (a caller's timeout cancels an async body at its
//! next await) or a killed process leaves the key reserved, because the action may have
//! happened: repeats get `IN_PROGRESS` until the lease ends (nothing renews it any more).
//! Then, for a tool with a `reconcile` hook, one caller takes the reservation over (a new,
//! larger fencing token) and asks the hook. Never a blind re-run: that would turn a crash
//! into a duplicate.
//!
//! **Without a hook nothing takes the key over.** Every caller gets `OUTCOME_UNKNOWN` and
//! `<fn>_status` reads `unknown`, and the reservation stays the first call's. A first call
//! that was not dead but paused (a stopped process, a pause longer than its lease) may
//! still finish: its renewal makes the lease live again and its completion lands, and from
//! then on every call replays its result and `<fn>_status` reads `completed`. The effect did
//! happen, so its result is the truth; that is why `OUTCOME_UNKNOWN` suggests calling
//! `<fn>_status` later. A late completion is refused (fenced and logged, and its own caller
//! still gets what its body returned) only once someone else settled the key: a `reconcile`
//! hook's take-over, or an operator's `idem resolve`. Once a hook has taken the key over,
//! the first call can no longer record anything.
//!
//! **The `reconcile` hook** gets an [`Abandoned`] (the call's key, its stored compared fields
//! and its start) and asks the provider what happened, for instance by looking up the
//! idempotency key it was sent with ([Provider keys](#provider-keys)). Its answer:
//!
//! | the hook answers | the key | the caller gets |
//! | --- | --- | --- |
//! | [`Reconciled::Done(result)`](Reconciled::Done) | completed with `result` | `result`, as a replay |
//! | [`Reconciled::NotDone`] | still held by this caller | the body runs now, under the key |
//! | [`Reconciled::Unknown`] | stays abandoned, to be reconciled again by a later call | `OUTCOME_UNKNOWN` |
//!
//! Only one caller reconciles a key at a time; the others get `IN_PROGRESS` meanwhile. Only
//! a call of the same action takes a key over: a caller whose compared fields differ from
//! the abandoned call's gets `CONFLICT` (that other action may have happened), so a key
//! abandoned by a call with other values stays `OUTCOME_UNKNOWN` until a call with its
//! values comes, or a person decides (`idem resolve`).
//!
//! **What a hook cannot tell: a dead call from a paused one.** A lease ends when its call
//! stops renewing it, and a call that is alive can stop too: its process stopped (`SIGSTOP`,
//! a VM paused, a long stall), or cut off from the store (a network partition, a
//! frozen store server) for longer than the lease. The hook then asks the provider, which
//! has nothing yet, because the paused call has not sent its effect; `NotDone` runs the
//! body again, and when the paused call wakes up it sends too. Its completion is fenced
//! (the key's record keeps the second run's result), but its effect is already out. So
//! `NotDone` is safe in one of two ways:
//!
//! - the provider honours the key you send with [`current_key()`](current_key) (as Stripe
//!   does): the paused call's late send returns the first effect instead of making a second;
//! - or the lease is longer than any pause your deployment can have, so a call past it is
//!   dead.
//!
//! With a provider that does not honour keys and leases that pauses can outlast, answer
//! [`Reconciled::Unknown`] when the provider has nothing, and let a person decide (`idem
//! resolve`). The repository's chaos run (RELIABILITY.md) shows this case. There, 4 worker
//! processes are paused past a 1 s lease 172 times in ten minutes. On a provider that does
//! not honour keys, such a hook let 1-4 actions per store happen twice; where the provider
//! honours the key, the same race happened 0-8 times and no action happened twice.
//!
//! ## Return types
//!
//! A tool returns a [`frameworks::ToolOutput`]: a `Result<T, E>` where `T` implements
//! `Serialize` and `Deserialize` (it is stored and replayed as JSON) and
//! `E: From<idem::Error>`; rmcp's `Result<CallToolResult, ErrorData>`, rig's
//! `Result<T, ToolExecutionError>` and ADK-Rust's `Result<serde_json::Value, AdkError>` are
//! such types ([`frameworks`]).
//!
//! **Where a replay says so.** A replay returns the first result as it was stored.
//! `"replayed": true` is added only where a model reads JSON or the type asks for it: a
//! `serde_json::Value` object (and untagged or internally tagged enums), a struct that
//! declares the field itself (`#[serde(default)] replayed: bool`: `false` on the first call,
//! `true` on every replay), and an rmcp tool's structured content (or a note in its text).
//! A typed map (`HashMap<String, bool>`, `BTreeMap<String, serde_json::Value>`,
//! `serde_json::Map`) and every other type come back exactly as stored; a struct with
//! `#[serde(flatten)]` fields reads like a map and gets no marker ([`frameworks::replay_value`]).
//! Code can always tell with [`telemetry::observe`] (outcome `Replayed`).
//!
//! **A result must read back as what it was.** When the body has run, idem reads the JSON it
//! is about to store back into the tool's type, once (replays never pay for it). A result
//! that does not (an `f64::NAN` or infinity, which JSON writes as `null`) is not stored: the
//! caller still gets it, an error event names the tool and the key, and because the effect
//! happened the key is kept and marked abandoned, so retries get the `reconcile` hook's
//! answer or `OUTCOME_UNKNOWN` and `<fn>_status` says `unknown`; never `RECORD_UNREADABLE`,
//! never a blind re-run. What JSON cannot tell apart replays as JSON reads it: `Some(None)`
//! and `None` are both `null`, so `Some(None)` replays as `None`; `Some(f64::NAN)` in an
//! `Option<f64>` replays as `None`; fields skipped when serializing replay as their
//! defaults. Prefer shapes JSON holds (an enum rather than nested `Option`s).
//!
//! **Status.** `<fn>_status` returns a [`Status`]: `NotFound`, `InProgress` (with its start,
//! lease end, progress message and retry hint), `Completed(result)`, `Failed` (a kept
//! error) or `Unknown` (abandoned: it becomes `Completed` if that call was only paused and
//! finishes); serialized for a model as `{"status": "completed",
//! "result": ...}`, `{"status": "in_progress", ...}`, `{"status": "not_found"}`, ...
//!
//! ## Slow calls
//!
//! A timeout is not a failure: the work often goes on. While a body runs, idem renews its
//! reservation's lease every third of the lease, fenced by the call's token, so a body
//! may run far longer than its lease and every repeat meanwhile gets `IN_PROGRESS`, never a
//! second run and never `OUTCOME_UNKNOWN`. Three durations bound a call:
//!
//! - `lease` (default 30 s): how long a *dead* holder blocks its key. A process that dies
//!   (kill -9, a lost machine) stops renewing; one lease after its last renewal the call
//!   counts as abandoned and is handled as [Errors](#errors) says (one caller takes it over;
//!   the `reconcile` hook, else `OUTCOME_UNKNOWN`).
//! - `max_hold` (default 1 h): how long a *live* holder keeps renewing. A body that hangs
//!   for good frees its key one lease after `max_hold`. A body that finishes late still
//!   records its result if nobody took its key over; if someone did, its completion is
//!   fenced and the new holder's record stands.
//! - `timeout` (async tools, optional): how long the *caller* waits. It bounds no lease:
//!   the body goes on, renewing, and records its outcome.
//!
//! **`timeout`.** The caller gets `TIMEOUT` (not retryable; it suggests `<fn>_status`) after
//! this long, while the body goes on as a tokio task and completes the key (feature `tokio`,
//! on by default). So the body cannot borrow from the caller: no `&self`, no `&T`
//! parameters (a method takes `self: Arc<Self>`), and the store must be `'static` (a
//! `static`, or the default store). rmcp tools are the exception: there [`tasks`] applies the
//! timeout to the whole `tools/call`, which runs on a clone of the server and answers with a
//! task or TIMEOUT, so `&self` and `store = self.store` work
//! ([MCP Tasks](frameworks/rmcp/index.html#mcp-tasks)); without [`tasks`] on the server's
//! `ServerHandler` impl an rmcp tool's timeout does not take effect (the call waits for its
//! body; a warning says so once per tool).
//!
//! ```text
//!  lease = 30s, max_hold = 1h         R = renewal (one store write)
//!  0s      10s     20s     30s                      1h            1h+30s
//!  |-------R-------R-------R-- ... ---R-------R-----|  no renewal  |
//!  body running: repeats get IN_PROGRESS            max_hold       key abandoned:
//!  process killed at 25s: last renewal at 20s, key abandoned at 50s    take-over, reconcile
//! ```
//!
//! Renewal costs a fast call no store write and about 60 ns: one thread per process
//! (started by the first call) sleeps until a renewal is due, renews sync tools' leases
//! itself and wakes async calls to renew on their own task; a body that finishes within a
//! third of its lease is registered and unregistered and never renewed. A failed renewal is
//! logged and tried again sooner; a renewal refused because the key was taken over (the
//! process was frozen past its lease) stops renewal and is logged as an error. An async
//! body that blocks its thread (no `.await` for seconds) also blocks its own renewals: move
//! blocking work to `spawn_blocking`.
//!
//! The body can say how far it got with [`progress`]`("rendering the PDF")`. The message
//! (cut to 256 bytes) is written with a renewal about a second later, at most once a second,
//! and shown by `<fn>_status` and every `IN_PROGRESS` answer. A long body learns that it
//! was asked to stop (an MCP client's `tasks/cancel`) from [`cancel_requested`]`()`,
//! checked between steps: stopping is the body's decision, and nothing is interrupted.
//!
//! **The retry hint.** Every `IN_PROGRESS` and `TIMEOUT` answer carries `retry_after_ms`,
//! as do `Status::InProgress` and an MCP task's `pollIntervalMs`, in whole milliseconds:
//! how long the call has run so far, at least 1 s and at most 30 s; then capped at a third
//! of the lease and, for `IN_PROGRESS`, at 100 ms after the running call's current lease
//! ends; never under 100 ms. The caps win over the 1 s minimum (a lease under 3 s gives a
//! hint under 1 s: 666 ms for a 2 s lease), because the hint exists to bring a caller back
//! before a holder that died could be freed; only the 100 ms floor wins over them (leases
//! under 300 ms). A caller that waits as told polls a quick call within a second, a long
//! export twice a minute, and learns of a dead holder within moments of its key being freed.
//!
//! ## Tenants
//!
//! A remote MCP server or an agent backend serves many users from one process and one store.
//! A record is found by its namespace and key, and the key comes from the tool's arguments,
//! which the model fills: two tenants that invoice a customer of the same id in the same
//! period would share one record (tenant B replays tenant A's invoice, and B's is never
//! sent), and any tenant's status tool would read the other's. Putting the tenant into the
//! key as an argument does not help: the model chooses the arguments.
//!
//! `scope = expr` takes the caller's identity from the authenticated request instead: a
//! tenant or user id, evaluated on every call like `store`, from `self` (`scope =
//! self.tenant`), a parameter of a plain function (its caller is code, not a model), or an
//! rmcp extractor (`scope = principal.tenant` for `Authenticated(principal)` or rmcp's
//! `Extension(principal)`; [`frameworks::rmcp`](frameworks/rmcp/index.html#tenants-authenticated)
//! shows a server whose authentication layer provides it, and which of the two to take).
//! The scope's type is one a key field may have (a string, an integer).
//!
//! ```
//! use std::sync::LazyLock;
//! use idem::{MemoryStore, idempotent};
//!
//! static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);
//!
//! /// One tenant's billing, as the server's authentication established it.
//! struct Billing {
//!     tenant: String,
//! }
//!
//! impl Billing {
//!     #[idempotent(key = "invoice:<customer>:<period>", scope = self.tenant, store = *STORE)]
//!     fn send_invoice(&self, customer: String, period: String) -> Result<String, idem::Error> {
//!         Ok(format!("invoice for {customer}, {period}, billed by {}", self.tenant))
//!     }
//! }
//!
//! let (acme, globex) = (Billing { tenant: "acme".into() }, Billing { tenant: "globex".into() });
//! let a = acme.send_invoice("cus_7".into(), "2026-10".into()).unwrap();
//! let b = globex.send_invoice("cus_7".into(), "2026-10".into()).unwrap();
//! assert_ne!(a, b); // the same business key: one invoice per tenant
//! // Each tenant's status function reads its own records only.
//! let status = acme.send_invoice_status("cus_7".into(), "2026-10".into()).unwrap();
//! assert!(matches!(status, idem::Status::Completed(_)));
//! ```
//!
//! - Every key of the tool starts with 32 hex digits of the scope's SHA-256 and a `/`
//!   ([`store::scope_prefix`]`("acme")`): the scope's text never appears in the store, and no
//!   value (with `:`, `/`, another scope's hash, anything) can reach another scope's
//!   records. Scopes compare exactly: `Acme` and `acme` are two. An empty scope is
//!   `INVALID_KEY`, and the body does not run.
//! - The same business key gives one effect per scope; replays, `IN_PROGRESS` and `CONFLICT`
//!   only ever concern the caller's own scope. The status function (`<fn>_status`) and the
//!   rmcp status tool take the scope the same way (the status tool takes the tool's
//!   extractor too) and read only that scope's records; `<fn>_record_id` takes it as well.
//! - A scope cannot come from the model: on an rmcp tool, a `scope` that reads the
//!   `Parameters<T>` argument does not compile, nor one that reads a rig tool's arguments or
//!   an ADK-Rust tool's argument struct (read ADK's `ToolContext`: `scope = ctx.user_id()`).
//! - An rmcp tool that takes an `Extension<T>` (or the whole `Extensions`), or an ADK-Rust
//!   tool that takes its `ToolContext`, but has neither `scope` nor `unscoped` compiles
//!   with a warning at the extractor that says how to scope
//!   it; `unscoped` says that its records are shared across callers on purpose.
//! - Operators list one scope's records with `idem list --scope acme` (in code,
//!   [`store::Admin::list`] with `key_prefix: Some(&idem::store::scope_prefix("acme"))`).
//!
//! ## Provider keys
//!
//! The body reads the derived key with [`current_key()`](current_key) (`None` outside a
//! tool's body) and sends it to a provider that accepts idempotency keys, as Stripe does; a
//! multi-step tool sends one key per step, [`Key::step`]: `key.step("email")` gives
//! `invoice-email:acme:2026-10` (a template that starts with a placeholder gets `email:` in
//! front). Then even a lost idem record cannot make the provider act twice, nor a call
//! that was paused past its lease and taken over by a `reconcile` hook ([Errors](#errors)).
//!
//! ```
//! use std::sync::LazyLock;
//! use idem::{MemoryStore, idempotent};
//!
//! static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);
//!
//! #[idempotent(key = "invoice:<customer>:<period>", store = *STORE)]
//! fn send_invoice(customer: String, period: String) -> Result<Vec<String>, idem::Error> {
//!     let key = idem::current_key().expect("the body runs under a key");
//!     // One provider call per step, each with its own key.
//!     Ok(vec![key.to_string(), key.step("email")])
//! }
//!
//! let keys = send_invoice("Acme".into(), "2026-10".into()).unwrap();
//! assert_eq!(keys, ["invoice:acme:2026-10", "invoice-email:acme:2026-10"]);
//! ```
//!
//! The repository's `examples/provider_keys.rs` starts a local stand-in provider (an axum
//! service behind idem's own [HTTP layer](http/index.html)) that honours `Idempotency-Key`
//! the way Stripe does, fails the e-mail step once, loses idem's store, and still ends with
//! one invoice and one e-mail:
//!
//! ```sh
//! cargo run -p idem-examples --features http --bin provider_keys
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]

/// Makes a tool function idempotent: its arguments are in the crate docs'
/// [Attribute arguments](crate#attribute-arguments), what each call answers in
/// [Outcomes](crate#outcomes).
pub use idem_macros::idempotent;
/// Serves the status functions of an rmcp server's `#[idempotent]` tools as read-only
/// tools; goes above `#[tool_router]` (feature `rmcp`). See
/// [Status tools](frameworks/rmcp/index.html#status-tools).
pub use idem_macros::status_tools;
/// Serves MCP Tasks (SEP-2663) for an rmcp server's `#[idempotent]` tools, keyed by the
/// business action and read from the store; goes below `#[tool_handler]` (feature
/// `rmcp`). See [MCP Tasks](frameworks/rmcp/index.html#mcp-tasks).
pub use idem_macros::tasks;
pub use idem_runtime::*;
