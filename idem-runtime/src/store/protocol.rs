//! The store protocol: [`Store`], the one trait a store implements, and the same store
//! behind `&`, `Box` and `Arc`.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::{Completion, Record, RecordId, Renew, Reservation, Reserve, StoreError, Token};

/// A store: where a tool's reservations and results live. Async and sync tools use the same
/// store; a sync tool waits for each operation on its own thread
/// ([`block_on`](super::block_on)).
///
/// Implement each operation once, as an `async fn` (a store whose operations answer at once,
/// in memory or on a local file, simply never awaits: its futures are ready when first
/// polled, and a sync tool pays no allocation for them). The futures must be `Send`, so a
/// call of an async tool may move between threads. See *A store of your own* in the
/// [module docs](super#a-store-of-your-own-for-store-authors).
///
/// Implementations must make [`reserve`](Store::reserve) atomic per [`RecordId`]: of any
/// number of concurrent calls for one id, across threads and (for shared stores)
/// processes, at most one gets [`Reservation::Acquired`] while a record exists.
///
/// What not every store can do is a trait of its own beside this one: budgets are
/// [`BudgetStore`](super::budget::BudgetStore), and an operator's operations are
/// [`Admin`](super::Admin).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an idem store",
    label = "`store = ...` must be a store: an `idem::SqliteStore`, an `idem::MemoryStore`, or a type that implements `idem::store::Store`",
    note = "the store may be behind `&`, `Box` or `Arc`; `store = self.store` reads a field of the tool's receiver"
)]
pub trait Store: Send + Sync {
    /// Creates an in-progress record for `request.id` and returns its token, or returns the
    /// record that exists already. An in-progress record whose lease has ended is returned
    /// as it is (with `lease_expired: true`), never taken over silently.
    fn reserve(&self, request: Reserve<'_>) -> impl Future<Output = Result<Reservation, StoreError>> + Send;

    /// Takes over an abandoned reservation to reconcile it: succeeds only while `expired`
    /// still holds the record and its lease has ended by the store's clock, and returns a
    /// new, larger token with a fresh `lease`. [`StoreError::Fenced`] otherwise (another
    /// caller took it over first, or the record changed); then nothing changes. Of any
    /// number of concurrent callers, at most one succeeds.
    fn take_over(
        &self,
        id: RecordId<'_>,
        expired: Token,
        lease: Duration,
    ) -> impl Future<Output = Result<Token, StoreError>> + Send;

    /// Extends the lease of the in-progress record held by `renewal.token` to
    /// `renewal.lease` from now, by the store's clock, and keeps `renewal.progress` with it.
    /// It succeeds while the token holds the record, even after its lease ended, as long as
    /// nobody took it over. [`StoreError::Fenced`] when the token no longer holds it (taken
    /// over, released, completed); then nothing changes and the holder knows its key is
    /// gone. idem calls it while a body runs, every third of the lease.
    fn renew(&self, renewal: Renew<'_>) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Settles the in-progress record held by `token`, to be kept for at least `retain`.
    /// [`StoreError::Fenced`] when `token` no longer holds it; then nothing changes.
    ///
    /// idem writes a completion that failed with [`StoreError::Backend`] up to 3 times,
    /// unless the failure says the store waited its whole deadline for an answer (its error
    /// is, or has as a [`source`](std::error::Error::source), an [`std::io::Error`] of kind
    /// [`TimedOut`](std::io::ErrorKind::TimedOut)): another attempt would make the caller
    /// wait as long again, and what was sent may still land once the store answers.
    fn complete(
        &self,
        id: RecordId<'_>,
        token: Token,
        completion: Completion<'_>,
        retain: Duration,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Deletes the in-progress record held by `token`, so that a retry may run the body.
    /// [`StoreError::Fenced`] when `token` no longer holds it; then nothing changes. A
    /// [`BudgetStore`](super::budget::BudgetStore) refunds the record's charge to the window
    /// it was charged to.
    fn release(&self, id: RecordId<'_>, token: Token) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Ends the lease of the in-progress record held by `token` now, so that it reads as
    /// abandoned: for a reconciliation that could not tell what happened.
    /// [`StoreError::Fenced`] when `token` no longer holds it; then nothing changes.
    fn abandon(&self, id: RecordId<'_>, token: Token) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Reads a record. Never creates or changes one.
    fn read(&self, id: RecordId<'_>) -> impl Future<Output = Result<Option<Record>, StoreError>> + Send;

    /// Deletes at most `limit` settled (completed or failed) records whose retention has
    /// ended by the store's clock, and returns how many it deleted. Never deletes
    /// in-progress records, abandoned or not: their outcome is not known. A
    /// [`BudgetStore`](super::budget::BudgetStore)'s budget windows that ended
    /// [`WINDOWS_KEPT_MS`](super::budget::WINDOWS_KEPT_MS) ago or more go too (not counted).
    fn purge(&self, limit: usize) -> impl Future<Output = Result<usize, StoreError>> + Send;
}

/// Forwards [`Store`] through a pointer type, so that a store behind `&`, `Box` or `Arc` is
/// a store: one spelling for the three, which a new operation cannot leave out of one.
macro_rules! forward_store {
    ($($pointer:ty),+) => {$(
        impl<S: Store + ?Sized> Store for $pointer {
            fn reserve(&self, request: Reserve<'_>) -> impl Future<Output = Result<Reservation, StoreError>> + Send {
                (**self).reserve(request)
            }
            fn take_over(
                &self,
                id: RecordId<'_>,
                expired: Token,
                lease: Duration,
            ) -> impl Future<Output = Result<Token, StoreError>> + Send {
                (**self).take_over(id, expired, lease)
            }
            fn renew(&self, renewal: Renew<'_>) -> impl Future<Output = Result<(), StoreError>> + Send {
                (**self).renew(renewal)
            }
            fn complete(
                &self,
                id: RecordId<'_>,
                token: Token,
                completion: Completion<'_>,
                retain: Duration,
            ) -> impl Future<Output = Result<(), StoreError>> + Send {
                (**self).complete(id, token, completion, retain)
            }
            fn release(&self, id: RecordId<'_>, token: Token) -> impl Future<Output = Result<(), StoreError>> + Send {
                (**self).release(id, token)
            }
            fn abandon(&self, id: RecordId<'_>, token: Token) -> impl Future<Output = Result<(), StoreError>> + Send {
                (**self).abandon(id, token)
            }
            fn read(&self, id: RecordId<'_>) -> impl Future<Output = Result<Option<Record>, StoreError>> + Send {
                (**self).read(id)
            }
            fn purge(&self, limit: usize) -> impl Future<Output = Result<usize, StoreError>> + Send {
                (**self).purge(limit)
            }
        }
    )+};
}

forward_store!(&S, Box<S>, Arc<S>);
