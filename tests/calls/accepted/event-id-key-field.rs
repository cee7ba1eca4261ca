use idem::{MemoryStore, Status, idempotent};
use std::sync::LazyLock;

static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);

/// An `event_id` or `request_id` created once before the first attempt names the action.
#[idempotent(key = "webhook:<event_id>", store = *STORE)]
fn handle_webhook(event_id: String, payload: String) -> Result<usize, idem::Error> {
    Ok(payload.len())
}

#[idempotent(key = "order:<request_id>:<order_id>", store = *STORE)]
fn place_order(request_id: &str, order_id: u64) -> Result<u64, idem::Error> {
    let _ = request_id;
    Ok(order_id)
}

pub fn main() {
    handle_webhook("evt_1".into(), "{}".into()).unwrap();
    let status: Result<Status<usize>, idem::Error> = handle_webhook_status("evt_1".into());
    assert!(matches!(status, Ok(Status::Completed { .. })), "{status:?}");
    place_order("req_1", 9).unwrap();
    let status: Result<Status<u64>, idem::Error> = place_order_status("req_1", 9);
    assert!(matches!(status, Ok(Status::Completed { .. })), "{status:?}");
}
