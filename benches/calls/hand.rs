//! The hand-written baselines: the bench tool over a `HashMap` behind a `Mutex`, and over
//! rusqlite. The floor for each path, with the same body as the idem tool.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use idem::store::Synchronous;
use rusqlite::{Connection, OptionalExtension, params};

use super::tool::{AMOUNT, Effects, Invoice, PERIOD, ToolError, body};

/// The same tool by hand over a `HashMap` behind a `Mutex`: one lookup for a repeat; a
/// lookup, an insert and a second lookup to store the result for a first call.
pub struct HandMemory {
    map: Mutex<HashMap<String, HandEntry>>,
    pub effects: Effects,
}

struct HandEntry {
    amount: f64,
    result: Option<Invoice>,
}

impl HandMemory {
    pub fn new() -> Self {
        HandMemory { map: Mutex::default(), effects: Effects::default() }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, HandEntry>> {
        locked(&self.map)
    }

    pub fn send_invoice(
        &self,
        customer: String,
        period: String,
        amount: f64,
        memo: String,
    ) -> Result<Invoice, ToolError> {
        let key = format!("invoice:{customer}:{period}");
        {
            let mut map = self.lock();
            if let Some(entry) = map.get(&key) {
                if entry.amount != amount {
                    return Err(ToolError::Conflict { stored: entry.amount, requested: amount });
                }
                return match &entry.result {
                    Some(invoice) => Ok(Invoice { replayed: true, ..invoice.clone() }),
                    None => Err(ToolError::InProgress),
                };
            }
            map.insert(key.clone(), HandEntry { amount, result: None });
        }
        let invoice = body(&self.effects, &customer, &period, amount, &memo);
        if let Some(entry) = self.lock().get_mut(&key) {
            entry.result = Some(invoice.clone());
        }
        Ok(invoice)
    }

    /// Reserves a key without completing it, for the in-progress bench.
    pub fn reserve_only(&self, customer: &str) {
        self.lock().insert(format!("invoice:{customer}:{PERIOD}"), HandEntry { amount: AMOUNT, result: None });
    }
}

/// A baseline's map: a panic while it was held leaves entries a later call may still read.
fn locked<T>(map: &Mutex<T>) -> MutexGuard<'_, T> {
    map.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The same tool by hand over a `HashMap` holding what a store holds: the compared field
/// and the result as JSON text (written on a first call, parsed on a replay) and when the
/// key was reserved. The floor for a tool whose records are bytes, as idem's are in every
/// store, the memory store's included; the plain [`HandMemory`] keeps typed values.
pub struct HandMemoryJson {
    map: Mutex<HashMap<String, JsonEntry>>,
    pub effects: Effects,
    /// Keeps the compared field as a JSON object and answers a conflict as idem's CONFLICT
    /// does: each field that differs, with both values, in a message with a suggestion.
    explains: bool,
}

struct JsonEntry {
    request: String,
    result: Option<String>,
    reserved_at: std::time::Instant,
}

impl HandMemoryJson {
    pub fn new() -> Self {
        HandMemoryJson { map: Mutex::default(), effects: Effects::default(), explains: false }
    }

    /// The same, answering a conflict with what idem's CONFLICT tells the model.
    pub fn explaining() -> Self {
        HandMemoryJson { explains: true, ..HandMemoryJson::new() }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, JsonEntry>> {
        locked(&self.map)
    }

    pub fn send_invoice(
        &self,
        customer: String,
        period: String,
        amount: f64,
        memo: String,
    ) -> Result<Invoice, ToolError> {
        let key = format!("invoice:{customer}:{period}");
        let request = match self.explains {
            true => serde_json::json!({ "amount": amount }).to_string(),
            false => serde_json::to_string(&amount).expect("a number serializes"),
        };
        let found = {
            let mut map = self.lock();
            match map.get(&key) {
                Some(entry) if entry.request != request => Some(Err((entry.request.clone(), request))),
                Some(entry) => Some(Ok((entry.result.clone(), entry.reserved_at))),
                None => {
                    let entry = JsonEntry { request, result: None, reserved_at: std::time::Instant::now() };
                    map.insert(key.clone(), entry);
                    None
                }
            }
        };
        match found {
            Some(Err((stored, request))) if self.explains => Err(explained_conflict(&key, &stored, &request)),
            Some(Err((stored, _))) => {
                let stored = serde_json::from_str(&stored).expect("a stored amount parses");
                Err(ToolError::Conflict { stored, requested: amount })
            }
            Some(Ok((Some(result), _))) => {
                let invoice: Invoice = serde_json::from_str(&result).expect("a stored result parses");
                Ok(Invoice { replayed: true, ..invoice })
            }
            Some(Ok((None, reserved_at))) => {
                std::hint::black_box(reserved_at);
                Err(ToolError::InProgress)
            }
            None => {
                let invoice = body(&self.effects, &customer, &period, amount, &memo);
                let json = serde_json::to_string(&invoice).expect("an invoice serializes");
                if let Some(entry) = self.lock().get_mut(&key) {
                    entry.result = Some(json);
                }
                Ok(invoice)
            }
        }
    }
}

/// A conflict answered as idem answers it: both requests read as JSON objects, each field
/// that differs named with both values, in a message with a suggestion.
fn explained_conflict(key: &str, stored: &str, requested: &str) -> ToolError {
    let fields = |text: &str| match serde_json::from_str(text) {
        Ok(serde_json::Value::Object(fields)) => fields,
        _ => serde_json::Map::new(),
    };
    let (stored, requested) = (fields(stored), fields(requested));
    let differences: Vec<(String, serde_json::Value, serde_json::Value)> = requested
        .iter()
        .filter(|(name, value)| stored.get(*name) != Some(*value))
        .map(|(name, value)| (name.clone(), stored.get(name).cloned().unwrap_or_default(), value.clone()))
        .collect();
    let changes: Vec<String> =
        differences.iter().map(|(name, stored, requested)| format!("{name} was {stored}, now {requested}")).collect();
    let message = format!(
        "send_invoice: {key} was already requested with other values: {}; ask the user before changing anything; \
         call send_invoice_status to see the first request's result",
        changes.join(", ")
    );
    ToolError::Explained { message, differences }
}

/// The same tool by hand with rusqlite, at the same durability as the idem store it is
/// compared with: `send_invoice` answers a repeat with one SELECT, and
/// `send_invoice_new` is the first-call path alone (INSERT to reserve, UPDATE to
/// complete), the minimum a first call must pay.
pub struct HandSqlite {
    conn: Connection,
    complete: &'static str,
    pub effects: Arc<Effects>,
}

/// The hand-written table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HandSchema {
    /// The least a hand-written table needs: the key, the compared amount, the result.
    Minimal,
    /// The same plus what idem's schema adds to every first call's writes: an
    /// `AUTOINCREMENT` token (never reused, so fencing holds; SQLite writes its counter
    /// on every insert) and a retention column indexed once the record is settled.
    IdemLike,
}

const HAND_SCHEMA: &str =
    "CREATE TABLE IF NOT EXISTS hand_invoices (key TEXT PRIMARY KEY, amount REAL NOT NULL, result TEXT)";
const HAND_SCHEMA_IDEM_LIKE: &str = "
CREATE TABLE IF NOT EXISTS hand_invoices (token INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL UNIQUE,
    amount REAL NOT NULL, result TEXT, retain_until_ms INTEGER);
CREATE INDEX IF NOT EXISTS hand_invoices_retention ON hand_invoices (retain_until_ms)
    WHERE retain_until_ms IS NOT NULL;";
const HAND_RESERVE: &str = "INSERT INTO hand_invoices (key, amount) VALUES (?1, ?2) ON CONFLICT (key) DO NOTHING";
const HAND_COMPLETE: &str = "UPDATE hand_invoices SET result = ?2 WHERE key = ?1";
const HAND_COMPLETE_IDEM_LIKE: &str = "UPDATE hand_invoices SET result = ?2, \
     retain_until_ms = CAST(unixepoch('subsec') * 1000 AS INTEGER) + 604800000 WHERE key = ?1";
const HAND_SELECT: &str = "SELECT amount, result FROM hand_invoices WHERE key = ?1";

pub fn sync_pragma(sync: Synchronous) -> &'static str {
    match sync {
        Synchronous::Full => "FULL",
        _ => "NORMAL",
    }
}

/// A hand-written tool's answer for a key that has a record with `stored` amount and
/// `result` (none while in progress): CONFLICT, IN_PROGRESS or the stored result.
pub fn answer_existing(stored: f64, result: Option<&str>, requested: f64) -> Result<Invoice, ToolError> {
    if stored != requested {
        return Err(ToolError::Conflict { stored, requested });
    }
    match result {
        None => Err(ToolError::InProgress),
        Some(json) => serde_json::from_str::<Invoice>(json)
            .map(|invoice| Invoice { replayed: true, ..invoice })
            .map_err(store_error),
    }
}

pub fn store_error(error: impl std::fmt::Display) -> ToolError {
    ToolError::Store(error.to_string())
}

impl HandSqlite {
    pub fn open(path: &Path, sync: Synchronous, effects: Arc<Effects>) -> Self {
        Self::open_with(path, sync, effects, HandSchema::Minimal)
    }

    pub fn open_with(path: &Path, sync: Synchronous, effects: Arc<Effects>, schema: HandSchema) -> Self {
        let conn = Connection::open(path).unwrap();
        // SQLite's own busy handler sleeps up to 100 ms between attempts, so under eight
        // writers it can starve past a 5 s timeout ("database is locked"); 60 s never fails.
        conn.busy_timeout(Duration::from_secs(60)).unwrap();
        let mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0)).unwrap();
        assert_eq!(mode.to_lowercase(), "wal");
        conn.pragma_update(None, "synchronous", sync_pragma(sync)).unwrap();
        let (create, complete) = match schema {
            HandSchema::Minimal => (HAND_SCHEMA, HAND_COMPLETE),
            HandSchema::IdemLike => (HAND_SCHEMA_IDEM_LIKE, HAND_COMPLETE_IDEM_LIKE),
        };
        conn.execute_batch(create).unwrap();
        HandSqlite { conn, complete, effects }
    }

    pub fn send_invoice(
        &self,
        customer: String,
        period: String,
        amount: f64,
        memo: String,
    ) -> Result<Invoice, ToolError> {
        let key = format!("invoice:{customer}:{period}");
        match self.existing(&key, amount) {
            Some(answer) => answer,
            None => self.reserve_and_run(&key, &customer, &period, amount, &memo),
        }
    }

    pub fn send_invoice_new(
        &self,
        customer: String,
        period: String,
        amount: f64,
        memo: String,
    ) -> Result<Invoice, ToolError> {
        let key = format!("invoice:{customer}:{period}");
        self.reserve_and_run(&key, &customer, &period, amount, &memo)
    }

    pub fn reserve_and_run(
        &self,
        key: &str,
        customer: &str,
        period: &str,
        amount: f64,
        memo: &str,
    ) -> Result<Invoice, ToolError> {
        let mut reserve = self.conn.prepare_cached(HAND_RESERVE).map_err(store_error)?;
        if reserve.execute(params![key, amount]).map_err(store_error)? == 0 {
            return self.existing(key, amount).unwrap_or_else(|| Err(store_error("the record vanished")));
        }
        let invoice = body(&self.effects, customer, period, amount, memo);
        let json = serde_json::to_string(&invoice).map_err(store_error)?;
        let mut complete = self.conn.prepare_cached(self.complete).map_err(store_error)?;
        complete.execute(params![key, json]).map_err(store_error)?;
        Ok(invoice)
    }

    /// The answer for a key that has a record: CONFLICT, IN_PROGRESS or the stored result.
    pub fn existing(&self, key: &str, amount: f64) -> Option<Result<Invoice, ToolError>> {
        let row = self.conn.prepare_cached(HAND_SELECT).and_then(|mut select| {
            select.query_row([key], |row| Ok((row.get::<_, f64>(0)?, row.get::<_, Option<String>>(1)?))).optional()
        });
        match row {
            Ok(row) => row.map(|(stored, result)| answer_existing(stored, result.as_deref(), amount)),
            Err(error) => Some(Err(store_error(error))),
        }
    }

    pub fn reserve_only(&self, customer: &str) {
        self.conn
            .execute(HAND_RESERVE, params![format!("invoice:{customer}:{PERIOD}"), AMOUNT])
            .map(|inserted| assert_eq!(inserted, 1))
            .unwrap();
    }
}
