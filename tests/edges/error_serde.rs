//! `idem::Error` round-trips through serde, so an error type that `on_error = keep`
//! stores and replays (it must serialize and deserialize) can wrap it.

use std::sync::atomic::{AtomicUsize, Ordering};

use idem::telemetry::Outcome;
use idem::{ErrorCode, MemoryStore, idempotent};
use serde::{Deserialize, Serialize};

#[derive(Debug, PartialEq, Serialize, Deserialize)]
enum PayError {
    Declined { reason: String },
    Idem(idem::Error),
}

impl From<idem::Error> for PayError {
    fn from(error: idem::Error) -> Self {
        PayError::Idem(error)
    }
}

static CHARGES: AtomicUsize = AtomicUsize::new(0);

#[idempotent(key = "charge:<order>", compare = [amount], on_error = keep, store = store)]
fn charge(store: &MemoryStore, order: u32, amount: u32) -> Result<u32, PayError> {
    CHARGES.fetch_add(1, Ordering::SeqCst);
    Err(PayError::Declined { reason: "insufficient funds".into() })
}

#[test]
fn an_error_enum_that_wraps_idem_error_can_be_kept() {
    let store = MemoryStore::new();
    let declined = PayError::Declined { reason: "insufficient funds".into() };
    assert_eq!(charge(&store, 1, 10), Err(declined));
    let (again, calls) = idem::telemetry::observe(|| charge(&store, 1, 10));
    assert_eq!(calls[0].outcome, Outcome::Replayed);
    assert!(matches!(again, Err(PayError::Declined { .. })));
    // idem's own answers reach the caller through the same enum.
    let Err(PayError::Idem(conflict)) = charge(&store, 1, 20) else { panic!("expected CONFLICT") };
    assert_eq!(conflict.code(), ErrorCode::Conflict);
    assert_eq!(CHARGES.load(Ordering::SeqCst), 1);

    // And it round-trips, differences included, as the enum's variant.
    let wrapped = PayError::Idem(conflict);
    let json = serde_json::to_string(&wrapped).unwrap();
    assert_eq!(serde_json::from_str::<PayError>(&json).unwrap(), wrapped);
    let PayError::Idem(read) = serde_json::from_str::<PayError>(&json).unwrap() else { unreachable!() };
    assert_eq!(read.differences()[0].field, "amount");
    assert_eq!(read.differences()[0].stored, serde_json::json!(10));
}

#[test]
fn the_documented_json_form_deserializes() {
    let error: idem::Error = serde_json::from_str(
        r#"{"error": {"code": "IN_PROGRESS", "message": "charge: charge:1 is still in progress",
            "retryable": false, "suggestion": "call charge_status in a few seconds"}}"#,
    )
    .unwrap();
    assert_eq!(error.code(), ErrorCode::InProgress);
    assert_eq!(error.suggestion(), Some("call charge_status in a few seconds"));
    assert_eq!(serde_json::from_value::<idem::Error>(error.to_json()).unwrap(), error);
}
