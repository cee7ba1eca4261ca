//! How keys appear in idem's events and spans: as derived, or as a hash of the whole key
//! for keys that may hold personal data the template did not hash.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::key::Key;

/// How idem's `tracing` events and spans show a call's key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum KeyInTelemetry {
    /// The key as derived, e.g. `invoice:acme:2026-10` (fields the template marks
    /// `:hash` are already hashes). The default.
    #[default]
    Derived,
    /// A hash of the whole key, [`key_hash`]`(key)`: the same key always gives the same
    /// hash, so an operator can compute a key's hash to find its calls.
    Hashed,
}

static HASHED: AtomicBool = AtomicBool::new(false);

/// Sets how every later event and span of this process shows keys. Lifecycle events
/// given to an [`Observer`](super::Observer), [`observe`](crate::telemetry::observe) and the store
/// keep the key itself; metrics never carry keys.
pub fn set_key_in_telemetry(mode: KeyInTelemetry) {
    HASHED.store(mode == KeyInTelemetry::Hashed, Ordering::Relaxed);
}

/// What [`KeyInTelemetry::Hashed`] shows for `key`: `sha256:` and the first 16 bytes of
/// the SHA-256 of the key's text, in hex.
///
/// ```
/// # use idem_runtime as idem;
/// let hash = idem::telemetry::key_hash("invoice:acme:2026-10");
/// assert!(hash.starts_with("sha256:") && hash.len() == 7 + 32);
/// ```
pub fn key_hash(key: &str) -> String {
    crate::key::sha256_text(key.as_bytes())
}

/// A key as telemetry shows it; formatted (and hashed) only when a subscriber takes the
/// event or span.
#[derive(Clone, Copy)]
pub(crate) struct TelemetryKey<'a>(&'a str);

impl<'a> TelemetryKey<'a> {
    /// A call without a key (INVALID_KEY): shown as empty.
    pub(crate) const NONE: TelemetryKey<'static> = TelemetryKey("");

    pub(crate) fn of(key: &'a Key) -> Self {
        TelemetryKey(key.as_str())
    }
}

impl fmt::Debug for TelemetryKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for TelemetryKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if HASHED.load(Ordering::Relaxed) && !self.0.is_empty() {
            f.write_str(&key_hash(self.0))
        } else {
            f.write_str(self.0)
        }
    }
}
