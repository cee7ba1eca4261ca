//! Duplicate calls at the same moment: 8 threads released together by a barrier call the
//! same key, over 500 trials with a fresh key each. Exactly one runs the body; every other
//! caller is told IN_PROGRESS or gets the replay.

use crate::support;

use std::sync::{Arc, Barrier};
use std::thread;

use idem::ErrorCode;
use idem::store::Store;
use support::{Billing, ToolError};

const TRIALS: usize = 500;
const THREADS: usize = 8;

fn race<S: Store + 'static>(billing: Arc<Billing<S>>, is_async: bool) {
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let handle = runtime.handle().clone();
    let mut fresh_total = 0;
    for trial in 0..TRIALS {
        let period = format!("trial-{trial}");
        let barrier = Arc::new(Barrier::new(THREADS));
        let callers: Vec<_> = (0..THREADS)
            .map(|_| {
                let (billing, barrier, period, handle) =
                    (Arc::clone(&billing), Arc::clone(&barrier), period.clone(), handle.clone());
                thread::spawn(move || {
                    barrier.wait();
                    let (customer, memo) = ("acme".to_owned(), "race".to_owned());
                    if is_async {
                        handle.block_on(billing.send_invoice_async(customer, period, 10.0, memo))
                    } else {
                        billing.send_invoice(customer, period, 10.0, memo)
                    }
                })
            })
            .collect();
        let mut fresh = 0;
        for caller in callers {
            match caller.join().expect("a caller panicked") {
                Ok(invoice) if !invoice.replayed => fresh += 1,
                Ok(_replayed) => {}
                Err(ToolError::Idem(e)) if e.code() == ErrorCode::InProgress => {}
                Err(other) => panic!("trial {trial}: unexpected answer {other}"),
            }
        }
        assert_eq!(fresh, 1, "trial {trial}: {fresh} callers ran the body");
        assert_eq!(billing.effects("acme", &period), 1, "trial {trial}");
        fresh_total += fresh;
    }
    assert_eq!(fresh_total, TRIALS);
    assert_eq!(billing.total_effects(), TRIALS, "exactly one effect per key over all trials");
}

#[test]
fn memory_store_sync() {
    race(Arc::new(Billing::new(idem::MemoryStore::new())), false);
}

#[test]
fn memory_store_async() {
    race(Arc::new(Billing::new(idem::MemoryStore::new())), true);
}

#[test]
fn sqlite_store_sync() {
    let (store, _dir) = support::sqlite_store();
    race(Arc::new(Billing::new(store)), false);
}

#[test]
fn sqlite_store_async() {
    let (store, _dir) = support::sqlite_store();
    race(Arc::new(Billing::new(store)), true);
}
