//! What a tool's attribute and the default store use when nothing else is said: the lease,
//! `max_hold` and retention of `#[idempotent]`, and where the default store lives. They are
//! here, beside the records whose lease and retention they set, so that a store's own code
//! (its transactional mode, the operator's `resolve`) and the call driver read one value.

use std::time::Duration;

/// The default lease: how long the key of a call whose process died stays blocked before
/// the call counts as abandoned. A running body's lease is renewed every third of it, so
/// the lease need not outlast the slowest body: 30 seconds frees a dead call's key within
/// half a minute, and leaves a renewal 20 seconds to land (two more tries) before a live
/// call could lose its key.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);

/// The default `max_hold`: after an hour, a body's lease is no longer renewed, so a body
/// that hangs for good frees its key one lease later. A body that finishes later still
/// records its result if nobody took its key over meanwhile.
pub const DEFAULT_MAX_HOLD: Duration = Duration::from_secs(3600);

/// The default retention of settled records: a week, longer than model retries (seconds),
/// webhook redelivery (hours) and most dead-letter redelivery (days). A retry that comes
/// after its record was purged runs the action again, so keep records at least as long as
/// any layer may retry.
pub const DEFAULT_RETAIN: Duration = Duration::from_secs(7 * 24 * 3600);

/// The environment variable that sets the default store's file, read on first use.
pub const DEFAULT_STORE_ENV: &str = "IDEM_DB";

/// The default store's file name, in the directory `idem` of the user's data directory
/// (see [`default_store_path`](crate::store::default_store_path)), when neither
/// [`set_default_store_path`](crate::store::set_default_store_path) nor `IDEM_DB`
/// names a file.
pub const DEFAULT_STORE_FILE: &str = "idem.db";
