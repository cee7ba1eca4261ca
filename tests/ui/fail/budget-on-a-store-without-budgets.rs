use std::time::Duration;

use idem::store::{Completion, Record, RecordId, Renew, Reservation, Reserve, Store, StoreError, Token};
use idem::budget::Budget;
use idem::{idempotent};

/// A store of one's own that keeps no budgets: it implements `Store` only.
struct Ledger;

impl Store for Ledger {
    async fn reserve(&self, _: Reserve<'_>) -> Result<Reservation, StoreError> {
        unimplemented!()
    }
    async fn take_over(&self, _: RecordId<'_>, _: Token, _: Duration) -> Result<Token, StoreError> {
        unimplemented!()
    }
    async fn renew(&self, _: Renew<'_>) -> Result<(), StoreError> {
        unimplemented!()
    }
    async fn complete(&self, _: RecordId<'_>, _: Token, _: Completion<'_>, _: Duration) -> Result<(), StoreError> {
        unimplemented!()
    }
    async fn release(&self, _: RecordId<'_>, _: Token) -> Result<(), StoreError> {
        unimplemented!()
    }
    async fn abandon(&self, _: RecordId<'_>, _: Token) -> Result<(), StoreError> {
        unimplemented!()
    }
    async fn read(&self, _: RecordId<'_>) -> Result<Option<Record>, StoreError> {
        unimplemented!()
    }
    async fn purge(&self, _: usize) -> Result<usize, StoreError> {
        unimplemented!()
    }
}

static LEDGER: Ledger = Ledger;
static REFUNDS: Budget = Budget::count("refunds", 20).per_day();

#[idempotent(key = "refund:<order>", budget = REFUNDS, store = LEDGER)]
fn refund(order: String) -> Result<(), idem::Error> {
    let _ = order;
    Ok(())
}

fn main() {}
