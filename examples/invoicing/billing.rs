//! A stand-in for a billing provider, like the article's billing.py: slow, with optional
//! idempotency keys that work like Stripe's Idempotency-Key header. The ledger is a
//! SQLite file.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OptionalExtension, params};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Invoice {
    pub id: String,
    pub customer: String,
    pub amount: f64,
    pub memo: String,
    /// Set on a repeat that returned the first result and did nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replayed: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum BillingError {
    /// Another request with the same key is still running (HTTP 409).
    #[error("request {0} is still being processed")]
    Conflict(String),
    #[error("ledger: {0}")]
    Ledger(#[from] rusqlite::Error),
}

pub struct Billing {
    path: PathBuf,
    delay: Duration,
    invoices: AtomicU64,
}

impl Billing {
    pub fn open(path: PathBuf, delay: Duration) -> Result<Billing, BillingError> {
        let billing = Billing { path, delay, invoices: AtomicU64::new(0) };
        billing.db()?.execute_batch(
            "CREATE TABLE IF NOT EXISTS invoices (id TEXT PRIMARY KEY, customer TEXT,
             amount REAL, memo TEXT, status TEXT, idempotency_key TEXT UNIQUE)",
        )?;
        Ok(billing)
    }

    /// One connection per request, as separate API requests would have.
    fn db(&self) -> rusqlite::Result<Connection> {
        let conn = Connection::open(&self.path)?;
        conn.busy_timeout(Duration::from_secs(10))?;
        Ok(conn)
    }

    /// `inv_` and 8 hex digits, from a counter scrambled by Fibonacci hashing.
    fn next_id(&self) -> String {
        let n = self.invoices.fetch_add(1, Ordering::SeqCst) + 1;
        format!("inv_{:08x}", n.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32)
    }

    /// Creates and sends an invoice. Takes `delay`.
    pub fn create_invoice(
        &self,
        customer: &str,
        amount: f64,
        memo: &str,
        idempotency_key: Option<&str>,
    ) -> Result<Invoice, BillingError> {
        let id = self.next_id();
        let conn = self.db()?;
        if let Some(key) = idempotency_key {
            let select = "SELECT id, customer, amount, memo, status FROM invoices WHERE idempotency_key = ?1";
            let row = conn
                .query_row(select, [key], |r| {
                    let invoice = Invoice {
                        id: r.get(0)?,
                        customer: r.get(1)?,
                        amount: r.get(2)?,
                        memo: r.get(3)?,
                        replayed: true,
                    };
                    Ok((invoice, r.get::<_, String>(4)?))
                })
                .optional()?;
            match row {
                Some((_, status)) if status == "processing" => {
                    return Err(BillingError::Conflict(key.into()));
                }
                // A retry of a finished request: return the first result, do nothing.
                Some((invoice, _)) => return Ok(invoice),
                None => {}
            }
        }
        // Reserve the key before the slow work; the UNIQUE constraint settles races.
        let insert = "INSERT INTO invoices VALUES (?1, ?2, ?3, ?4, 'processing', ?5)";
        match conn.execute(insert, params![id, customer, amount, memo, idempotency_key]) {
            Err(e) if e.sqlite_error_code() == Some(ErrorCode::ConstraintViolation) => {
                return Err(BillingError::Conflict(idempotency_key.unwrap_or_default().into()));
            }
            other => other?,
        };
        std::thread::sleep(self.delay); // the slow part: PDF, email, accounting sync
        conn.execute("UPDATE invoices SET status = 'sent' WHERE id = ?1", [&id])?;
        Ok(Invoice { id, customer: customer.into(), amount, memo: memo.into(), replayed: false })
    }

    pub fn ledger(&self) -> Result<Vec<String>, BillingError> {
        let conn = self.db()?;
        let mut stmt = conn.prepare("SELECT id, customer, amount, memo, status FROM invoices ORDER BY rowid")?;
        let rows = stmt.query_map([], |r| {
            let (id, customer, amount, memo, status): (String, String, f64, String, String) =
                (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?);
            Ok(format!("{id} {customer} {amount:.2} EUR '{memo}' ({status})"))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Invoices whose key ends with `suffix`: the ledger, like the article's, has no
    /// period column, and the key is where the period is.
    pub fn count_keyed(&self, suffix: &str) -> Result<usize, BillingError> {
        let sql = "SELECT COUNT(*) FROM invoices WHERE idempotency_key LIKE '%' || ?1";
        let count: i64 = self.db()?.query_row(sql, [suffix], |r| r.get(0))?;
        Ok(count.try_into().unwrap_or(usize::MAX))
    }

    pub fn reset(&self) -> Result<(), BillingError> {
        self.db()?.execute("DELETE FROM invoices", [])?;
        Ok(())
    }
}
