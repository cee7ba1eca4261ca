//! Helpers for testing tools and stores built on idem (feature `testing`): the retry
//! matrix, the store conformance suite, and ADK's tool context for one call.
//!
//! Enable it where your tests build, as a dev-dependency:
//!
//! ```toml
//! [dev-dependencies]
//! idem-tools = { version = "0.1", features = ["testing"] }
//! ```
//!
//! Not covered by semver: the conformance suite gains checks as the stores promise more,
//! so a store that passed may fail a newer suite. Production builds without the feature do
//! not compile this module, and no bundled store implements its traits there.
//!
//! | to test | use | what it checks |
//! | --- | --- | --- |
//! | a tool of yours against the ways agents retry | [`matrix::RetryMatrix`], then [`MatrixReport::check`](matrix::MatrixReport::check) | the article's five retry scenarios (the first call times out while its work goes on, a retry at once, a retry later with reworded free text, another amount, two calls at once): each answer, and exactly one effect per action |
//! | a store of your own | [`conformance::check_store`]`(make_store)` | every promise the tool runtime relies on: atomic reservation, fencing, byte-exact replay, lease renewal, retention (each operation waited for as a sync tool waits, [`block_on`](crate::store::block_on)) |
//! | its operator operations | [`conformance::check_admin`]`(make_store)` | [`Admin`](crate::store::Admin): list, count, resolve, reopen, purge |
//! | approvals on it | [`conformance::check_approvals`]`(make_store)` | one request per action under a race of 16, one decision that stands under a race of 16 deciders, the pending listing, expiry, reopen |
//! | budgets on it | [`conformance::check_budgets`]`(make_store)` | [`BudgetStore::reserve_charged`](crate::store::BudgetStore::reserve_charged): exactly 5 of 32 racing first calls acquire against a budget of 5 (in several trials), a replay or a refusal charges nothing, release and `resolve_release` refund, settling keeps the charge, exact sums, separate windows per budget and scope, the listing, operators' adjustments |
//! | reservations racing across handles | [`conformance::check_exclusive_reserve`]`(&stores)` | exactly one of 8 racing threads acquires each of 200 keys |
//! | an ADK-Rust tool as ADK's agent calls it | [`adk::ToolCall`] (feature `adk` too) | nothing by itself: the `ToolContext` of one function call, with the user and call id you give, for your tool's `execute` |
//! | a record in a state this version does not know | [`conformance::check_unknown_state`] (with [`conformance::PlantRecord`]) | it reads as corrupt, never as an outage or a free key |
//!
//! The memory, SQLite, PostgreSQL and Redis stores run that one suite in their own tests.
//!
//! The retry matrix, for a tool whose arguments are `Args` and whose effects your ledger
//! counts (its module has a whole example):
//!
//! ```ignore
//! let report = RetryMatrix { first, reworded, changed, other, patience: Duration::from_secs(2) }
//!     .run(|args| send_invoice(args), |args| ledger.count(args));
//! report.check().unwrap();
//! ```

#[cfg(feature = "adk")]
#[cfg_attr(docsrs, doc(cfg(feature = "adk")))]
pub mod adk;
pub mod conformance;
pub mod matrix;
