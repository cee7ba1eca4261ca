//! Tools in a crate that renamed its dependency on idem (`my_idem = { package =
//! "idem-tools", ... }`): `crate = "my_idem"` points the generated code at it. Every kind
//! of expansion is here (sync, async, method, timeout, reconcile, kept errors), so a path
//! that ignored the override would not compile.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use my_idem::{Abandoned, MemoryStore, Reconciled, idempotent};
use serde::{Deserialize, Serialize};

pub static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);
pub static SENT: AtomicUsize = AtomicUsize::new(0);

#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub enum ToolError {
    Idem(String),
    Provider(String),
}

impl From<my_idem::Error> for ToolError {
    fn from(error: my_idem::Error) -> Self {
        ToolError::Idem(error.code().as_str().to_owned())
    }
}

#[idempotent(crate = "my_idem", key = "invoice:<customer>:<period>", compare = [amount], store = *STORE)]
pub fn send_invoice(customer: String, period: String, amount: u64) -> Result<String, ToolError> {
    SENT.fetch_add(1, Ordering::SeqCst);
    Ok(format!("inv {customer} {period} {amount}"))
}

#[idempotent(crate = "my_idem", key = "refund:<order>", store = *STORE, timeout = "5s", lease = "30s")]
pub async fn refund(order: u64) -> Result<u64, ToolError> {
    SENT.fetch_add(1, Ordering::SeqCst);
    Ok(order)
}

fn ask_provider(_: Abandoned) -> Reconciled<String> {
    Reconciled::Unknown
}

#[idempotent(crate = "my_idem", key = "charge:<card>", store = *STORE, on_error = keep, reconcile = ask_provider)]
pub fn charge(card: String) -> Result<String, ToolError> {
    Err(ToolError::Provider(format!("{card} declined")))
}

pub struct Mailer {
    pub store: MemoryStore,
}

impl Mailer {
    #[idempotent(crate = "my_idem", key = "mail:<to:hash>", store = self.store)]
    pub async fn send(&self, to: String) -> Result<usize, ToolError> {
        Ok(to.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use my_idem::Status;

    #[test]
    fn a_renamed_facade_runs_every_kind_of_tool() {
        let first = send_invoice("acme".into(), "renamed".into(), 120).unwrap();
        assert_eq!(send_invoice("ACME".into(), "renamed".into(), 120).unwrap(), first);
        assert_eq!(send_invoice("acme".into(), "renamed".into(), 150), Err(ToolError::Idem("CONFLICT".into())));
        assert!(matches!(send_invoice_status("acme".into(), "renamed".into()), Ok(Status::Completed(_))));

        let declined = Err(ToolError::Provider("visa declined".into()));
        assert_eq!(charge("visa".into()), declined);
        assert_eq!(charge("visa".into()), declined, "a kept error replays");
        assert!(matches!(charge_status("visa".into()), Ok(Status::Failed(_))));

        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        runtime.block_on(async {
            assert_eq!(refund(7).await, Ok(7));
            assert_eq!(refund(7).await, Ok(7));
            assert!(matches!(refund_status(7).await, Ok(Status::Completed(7))));
            let mailer = Mailer { store: MemoryStore::new() };
            assert_eq!(mailer.send("ann@example.com".into()).await, Ok(15));
            assert!(matches!(mailer.send_status("ann@example.com".into()).await, Ok(Status::Completed(15))));
        });
        assert_eq!(SENT.load(Ordering::SeqCst), 2, "one invoice, one refund");
    }
}
