//! How idem's answers reach a tool's caller: through the tool's own return type.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::Error;

/// A return type that can carry idem's answers: the stored result of a first call, or a
/// structured [`Error`] (IN_PROGRESS, CONFLICT, ...).
///
/// Implemented for `Result<T, E>` where `T` serializes and deserializes (it is stored and
/// replayed) and `E: From<idem::Error>`. An `Err` from the body releases the reservation:
/// the action did not happen and a retry may run it.
///
/// # What is stored must read back
///
/// The value is stored as JSON, and a replay is that JSON deserialized: what JSON kept of
/// the value. So when the body has run, idem deserializes the JSON it is about to store
/// back into [`Value`](Self::Value), once (replays never pay for this check). A value
/// that does not read back is not stored: an `f64::NAN` or infinity, which serde_json
/// writes as `null`, in a field typed `f64`, say. Then the caller still gets the body's
/// result, an error `tracing` event names the tool and the key, and the key is kept
/// (the effect happened, so it is never released) and marked abandoned at once: every
/// retry answers OUTCOME_UNKNOWN, or runs the tool's `reconcile` hook, and the status
/// function reports `Unknown`, never a RECORD_UNREADABLE that no retry can get past. An
/// error kept by `on_error = keep` is checked the same way.
///
/// What JSON cannot tell apart reads back without an error, as something else, and is
/// replayed as it reads: `Some(None)` (of an `Option<Option<T>>`) and `None` are both
/// `null`, so `Some(None)` replays as `None`; `Some(f64::NAN)` (of an `Option<f64>`)
/// replays as `None`; a field skipped when serializing replays as its default. Give such
/// values a shape JSON holds: an enum instead of nested `Option`s, a string or `Option`
/// for a float that may not be finite.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot carry idem's answers (a replay, IN_PROGRESS, CONFLICT, ...)",
    label = "the return type of an #[idempotent] tool must implement `idem::frameworks::ToolOutput`",
    note = "return `Result<T, E>` where `T: serde::Serialize + serde::de::DeserializeOwned` (it is stored and replayed) and `E: From<idem::Error>`, or implement `idem::frameworks::ToolOutput` for this type"
)]
pub trait ToolOutput: Sized {
    /// What is stored when the body succeeds, and replayed to later calls.
    type Value: Serialize + DeserializeOwned;

    /// The value to store, or `None` when the body failed and the reservation is released.
    fn success(&self) -> Option<&Self::Value>;

    /// The answer for a replay of a stored value.
    fn from_value(value: Self::Value) -> Self;

    /// The answer for an idem error (IN_PROGRESS, CONFLICT, ...).
    fn from_error(error: Error) -> Self;
}

impl<T, E> ToolOutput for Result<T, E>
where
    T: Serialize + DeserializeOwned,
    E: From<Error>,
{
    type Value = T;

    fn success(&self) -> Option<&T> {
        self.as_ref().ok()
    }

    fn from_value(value: T) -> Self {
        Ok(value)
    }

    fn from_error(error: Error) -> Self {
        Err(E::from(error))
    }
}

/// The field set to `true` in a replayed result that is JSON for a model, so the model
/// sees that nothing new happened; see [`replay_value`] for where it goes.
pub const REPLAYED_FIELD: &str = "replayed";

/// Deserializes a stored result for a replay, with the replay marker `"replayed": true`
/// where the value is JSON for a model or asks for it, and exactly as stored elsewhere.
///
/// The marker is set in the top-level JSON object when the type is
///
/// - self-describing: a [`serde_json::Value`] (the JSON handed to a model), or an
///   untagged or internally tagged enum, whose variants then see it like any field; or
/// - a struct that declares a field named `replayed` (`#[serde(default)] replayed: bool`),
///   which then reads `true` on every replay and whatever the body set on the first call.
///
/// Every other type reads the stored value exactly: a typed map (`HashMap<String, bool>`,
/// `BTreeMap<String, serde_json::Value>`, `serde_json::Map`) never gains a `replayed`
/// entry that would look like business data, and a struct without the field (or with
/// `#[serde(flatten)]` fields, which serde reads as a map) is unchanged. rmcp results
/// are marked in their structured content and text by idem's rmcp support; a rig tool's
/// output is its own type, so declare the field (or return a `serde_json::Value`) for the
/// model to see the marker. A type that rejects the marker (a `replayed` field that is
/// not a bool) gets the stored object as it was.
///
/// serde tells these apart: a struct's `Deserialize` names its fields
/// (`deserialize_struct`), a map's does not (`deserialize_map`), and a self-describing
/// type asks for anything (`deserialize_any`). The stored text is deserialized directly,
/// not through a `serde_json::Value`: the top-level object's `replayed` entry is replaced
/// (or, when absent, appended) while it is read.
///
/// ```
/// use std::collections::HashMap;
/// use idem_runtime::frameworks::replay_value;
///
/// #[derive(serde::Deserialize)]
/// struct Invoice { id: String, #[serde(default)] replayed: bool }
///
/// let invoice: Invoice = replay_value(r#"{"id":"inv_1"}"#).unwrap();
/// assert!(invoice.replayed);
/// let json: serde_json::Value = replay_value(r#"{"id":"inv_1"}"#).unwrap();
/// assert_eq!(json, serde_json::json!({"id": "inv_1", "replayed": true}));
/// let flags: HashMap<String, bool> = replay_value(r#"{"sent":true}"#).unwrap();
/// assert_eq!(flags, HashMap::from([("sent".to_string(), true)]));
/// ```
pub fn replay_value<T: DeserializeOwned>(stored: &str) -> Result<T, serde_json::Error> {
    if stored.trim_start().starts_with('{') {
        let mut de = serde_json::Deserializer::from_str(stored);
        if let Ok(replayed) = T::deserialize(mark::Marked(&mut de))
            && de.end().is_ok()
        {
            return Ok(replayed);
        }
    }
    serde_json::from_str(stored)
}

mod mark;
#[cfg(test)]
mod tests;
