//! How idem's answers reach a tool's caller: through the tool's own return type.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::Error;

/// A return type that can carry idem's answers: the stored result of a first call, or a
/// structured [`Error`] (IN_PROGRESS, CONFLICT, ...).
///
/// Implemented for `Result<T, E>` where `T` serializes and deserializes (it is stored and
/// replayed) and `E: From<idem::Error>`. An `Err` from the body releases the reservation:
/// the action did not happen and a retry may run it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot carry idem's answers (a replay, IN_PROGRESS, CONFLICT, ...)",
    label = "the return type of an #[idempotent] tool must implement `idem::ToolOutput`",
    note = "return `Result<T, E>` where `T: serde::Serialize + serde::de::DeserializeOwned` (it is stored and replayed) and `E: From<idem::Error>`, or implement `idem::ToolOutput` for this type"
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

/// The field set to `true` in a replayed result that is a JSON object, so the model sees
/// that nothing new happened. Types without the field ignore it.
pub const REPLAYED_FIELD: &str = "replayed";

/// Deserializes a stored result for a replay. When it is a JSON object, it is read with
/// `"replayed": true` set first, so that output types with a `replayed` field show it;
/// a type that rejects the extra field gets the stored object exactly as it was.
pub fn replay_value<T: DeserializeOwned>(stored: &str) -> Result<T, serde_json::Error> {
    let value: Value = serde_json::from_str(stored)?;
    if let Value::Object(map) = &value {
        let mut marked = map.clone();
        marked.insert(REPLAYED_FIELD.to_owned(), Value::Bool(true));
        if let Ok(replayed) = T::deserialize(Value::Object(marked)) {
            return Ok(replayed);
        }
    }
    T::deserialize(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Invoice {
        id: String,
        #[serde(default)]
        replayed: bool,
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Strict {
        id: String,
    }

    #[test]
    fn a_type_with_a_replayed_field_shows_the_replay() {
        let stored = serde_json::to_string(&Invoice { id: "inv_1".into(), replayed: false }).unwrap();
        let replayed: Invoice = replay_value(&stored).unwrap();
        assert_eq!(replayed, Invoice { id: "inv_1".into(), replayed: true });
    }

    #[test]
    fn json_objects_show_the_replay() {
        let replayed: Value = replay_value(r#"{"id":"inv_1"}"#).unwrap();
        assert_eq!(replayed, serde_json::json!({"id": "inv_1", "replayed": true}));
    }

    #[test]
    fn strict_types_get_the_stored_object_unchanged() {
        let replayed: Strict = replay_value(r#"{"id":"inv_1"}"#).unwrap();
        assert_eq!(replayed, Strict { id: "inv_1".into() });
    }

    #[test]
    fn falsy_results_replay_as_themselves() {
        assert_eq!(replay_value::<u32>("0").unwrap(), 0);
        assert!(!replay_value::<bool>("false").unwrap());
        assert_eq!(replay_value::<String>("\"\"").unwrap(), "");
        assert_eq!(replay_value::<Vec<u8>>("[]").unwrap(), Vec::<u8>::new());
        replay_value::<()>("null").unwrap();
        assert_eq!(replay_value::<Option<u8>>("null").unwrap(), None);
        assert_eq!(replay_value::<Value>("{}").unwrap(), serde_json::json!({"replayed": true}));
    }

    #[test]
    fn a_result_that_no_longer_fits_the_type_is_an_error() {
        assert!(replay_value::<Invoice>(r#"{"number":7}"#).is_err());
        assert!(replay_value::<u32>("not json").is_err());
    }
}
