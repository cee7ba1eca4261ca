//! The driver's error events, seen through a subscriber that keeps them.

use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

use super::{Call, NoReconcile, Release, Tool, Uncharged, run_sync};
use crate::key::{FieldMode, Segment};
use crate::store::MemoryStore;

/// An event's fields, as text.
type EventFields = Vec<(String, String)>;

/// Every event's level and fields.
#[derive(Clone, Default)]
struct Events(Arc<Mutex<Vec<(Level, EventFields)>>>);

struct Fields(Vec<(String, String)>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name().to_owned(), value.to_owned()));
    }
}

impl Subscriber for Events {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields(Vec::new());
        event.record(&mut fields);
        self.0.lock().unwrap().push((*event.metadata().level(), fields.0));
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

pub(crate) static SENSOR: Tool = Tool {
    name: "record_reading",
    namespace: "call-tests::record_reading",
    namespace_given: true,
    site: "call/tests.rs",
    template: &[Segment::Literal("reading:"), Segment::Field("sensor", FieldMode { normalize: true, hash: false })],
    compare: &[],
    compare_written: &[],
    json_names: crate::json_names::JsonNames::none(),
    status_fn: "record_reading_status",
    lease: std::time::Duration::from_secs(60),
    max_hold: std::time::Duration::from_secs(3600),
    retain: std::time::Duration::from_secs(60),
    serving: None,
    approval: None,
    budget: None,
    timeout: None,
    instruments: crate::__idem_instruments!("record_reading"),
    claim: super::Claim::new(),
};

/// The tool the answers' unit tests name: `send_invoice`, keyed `invoice:<customer>`,
/// comparing amount and currency.
pub(crate) static SEND_INVOICE: Tool = Tool {
    name: "send_invoice",
    namespace: "test::send_invoice",
    namespace_given: false,
    site: "src/lib.rs:1:1",
    template: &[Segment::Literal("invoice:"), Segment::Field("customer", FieldMode { normalize: true, hash: false })],
    compare: &["amount", "currency"],
    compare_written: &["amount", "currency"],
    json_names: crate::json_names::JsonNames::none(),
    status_fn: "send_invoice_status",
    lease: std::time::Duration::from_secs(60),
    max_hold: std::time::Duration::from_secs(3600),
    retain: std::time::Duration::from_secs(60),
    serving: None,
    approval: None,
    budget: None,
    timeout: None,
    instruments: crate::__idem_instruments!("send_invoice"),
    claim: super::Claim::new(),
};

#[test]
fn a_result_that_does_not_read_back_is_an_error_event_naming_tool_and_key() {
    let events = Events::default();
    let store = MemoryStore::new();
    let result: Result<f64, crate::error::Error> = tracing::subscriber::with_default(events.clone(), || {
        run_sync(Call::new(&SENSOR, &[&"s1"], []), &store, Uncharged, || Ok(f64::NAN), NoReconcile, Release)
    });
    assert!(result.unwrap().is_nan(), "the caller gets its result");
    let events = events.0.lock().unwrap();
    let field = |fields: &[(String, String)], name: &str| {
        fields.iter().find(|(field, _)| field == name).map(|(_, value)| value.clone())
    };
    let not_recorded: Vec<_> = events
        .iter()
        .filter(|(level, fields)| {
            *level == Level::ERROR && field(fields, "message").is_some_and(|m| m.contains("does not read back"))
        })
        .collect();
    assert_eq!(not_recorded.len(), 1, "one error event says the result was not recorded: {events:?}");
    let fields = &not_recorded[0].1;
    assert_eq!(field(fields, "tool").as_deref(), Some("record_reading"));
    assert_eq!(field(fields, "key").as_deref(), Some("reading:s1"));
    assert!(
        matches!(
            crate::store::block_on(crate::store::Store::read(
                &store,
                crate::store::RecordId { namespace: SENSOR.namespace, key: "reading:s1" }
            )),
            Ok(Some(crate::store::Record {
                state: crate::store::RecordState::InProgress { lease_expired: true, .. },
                ..
            }))
        ),
        "the key is kept, marked abandoned"
    );
}
