use idem::{MemoryStore, Status, idempotent};
use std::sync::LazyLock;

static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);

#[idempotent(key = "refund:<order_id>", compare = [cents], store = *STORE, namespace = "billing::refund", lease = "30s")]
async fn refund(order_id: u64, cents: i64) -> Result<String, idem::Error> {
    tokio::task::yield_now().await;
    Ok(format!("refund {order_id} {cents}"))
}

#[tokio::main(flavor = "current_thread")]
pub async fn main() {
    assert_eq!(refund(42, 500).await.unwrap(), "refund 42 500");
    let status: Result<Status<String>, idem::Error> = refund_status(42).await;
    assert!(matches!(status, Ok(Status::Completed { .. })), "{status:?}");
}
