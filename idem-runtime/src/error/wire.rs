//! The serialized form of [`Error`]: `{"error": {"code", "message", "retryable",
//! "suggestion", "differences"?}}`, written and read.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeStruct, Serializer};
use serde_json::Value;

use super::{Approval, Error, ErrorCode, OverBudget, Running};
use crate::difference::{ABSENT, FieldDifference};

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct CodeVisitor;
        impl Visitor<'_> for CodeVisitor {
            type Value = ErrorCode;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an idem error code such as \"IN_PROGRESS\"")
            }
            fn visit_str<E: de::Error>(self, code: &str) -> Result<ErrorCode, E> {
                ErrorCode::parse(code).ok_or_else(|| E::unknown_variant(code, &CODES))
            }
        }
        deserializer.deserialize_str(CodeVisitor)
    }
}

const CODES: [&str; ErrorCode::ALL.len()] = {
    let mut codes = [""; ErrorCode::ALL.len()];
    let mut i = 0;
    while i < codes.len() {
        codes[i] = ErrorCode::ALL[i].as_str();
        i += 1;
    }
    codes
};

/// The body of the serialized error, inside `{"error": ...}`.
struct Body<'a>(&'a Error);

impl Serialize for Body<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let error = self.0;
        let with_differences = !error.differences().is_empty();
        let running = error.running();
        let running_fields =
            running.map_or(0, |r| 1 + usize::from(r.since_ms.is_some()) + usize::from(r.progress.is_some()));
        let approval = error.approval();
        let budget = error.budget();
        let fields = 4
            + usize::from(with_differences)
            + running_fields
            + usize::from(approval.is_some())
            + usize::from(budget.is_some());
        let mut body = serializer.serialize_struct("Error", fields)?;
        body.serialize_field("code", &error.code)?;
        body.serialize_field("message", &error.message)?;
        body.serialize_field("retryable", &error.retryable())?;
        body.serialize_field("suggestion", &error.suggestion)?;
        if with_differences {
            body.serialize_field("differences", &Differences(error.differences()))?;
        } else {
            body.skip_field("differences")?;
        }
        if let Some(running) = running {
            let ms = u64::try_from(running.retry_after.as_millis()).unwrap_or(u64::MAX);
            body.serialize_field("retry_after_ms", &ms)?;
            if let Some(since_ms) = running.since_ms {
                body.serialize_field("since_ms", &since_ms)?;
            }
            if let Some(progress) = &running.progress {
                body.serialize_field("progress", progress)?;
            }
        }
        match approval {
            Some(approval) => body.serialize_field("approval", &ApprovalWire(approval))?,
            None => body.skip_field("approval")?,
        }
        match budget {
            Some(budget) => body.serialize_field("budget", &BudgetWire(budget))?,
            None => body.skip_field("budget")?,
        }
        body.end()
    }
}

impl Serialize for Error {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry("error", &Body(self))?;
        map.end()
    }
}

/// An [`Approval`] as it is serialized: `{"namespace", "key", "text", "request", "asked_at_ms",
/// "expires_at_ms"}`, and `"declined_by"`, `"declined_at_ms"`, `"note"` when known.
struct ApprovalWire<'a>(&'a Approval);

impl Serialize for ApprovalWire<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let a = self.0;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("namespace", &a.namespace)?;
        map.serialize_entry("key", &a.key)?;
        map.serialize_entry("text", &a.text)?;
        let request = serde_json::from_str::<Value>(&a.request).unwrap_or_else(|_| Value::String(a.request.clone()));
        map.serialize_entry("request", &request)?;
        map.serialize_entry("asked_at_ms", &a.asked_at_ms)?;
        map.serialize_entry("expires_at_ms", &a.expires_at_ms)?;
        if let Some(by) = &a.declined_by {
            map.serialize_entry("declined_by", by)?;
        }
        if let Some(at_ms) = a.declined_at_ms {
            map.serialize_entry("declined_at_ms", &at_ms)?;
        }
        if let Some(note) = &a.note {
            map.serialize_entry("note", note)?;
        }
        map.end()
    }
}

/// An [`OverBudget`] as it is serialized.
struct BudgetWire<'a>(&'a OverBudget);

impl Serialize for BudgetWire<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let b = self.0;
        let mut map = serializer.serialize_map(Some(5))?;
        map.serialize_entry("name", &b.name)?;
        map.serialize_entry("used", &b.used)?;
        map.serialize_entry("limit", &b.limit)?;
        map.serialize_entry("window_start_ms", &b.window_start_ms)?;
        map.serialize_entry("resets_at_ms", &b.resets_at_ms)?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for OverBudget {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let missing = |field: &'static str| de::Error::missing_field(field);
        let number = |field: &'static str| value.get(field).and_then(Value::as_f64).ok_or_else(|| missing(field));
        let time = |field: &'static str| value.get(field).and_then(Value::as_i64).ok_or_else(|| missing(field));
        Ok(OverBudget {
            name: value.get("name").and_then(Value::as_str).ok_or_else(|| missing("name"))?.to_owned(),
            used: number("used")?,
            limit: number("limit")?,
            window_start_ms: time("window_start_ms")?,
            resets_at_ms: time("resets_at_ms")?,
        })
    }
}

impl<'de> Deserialize<'de> for Approval {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let text = |field: &str| value.get(field).and_then(Value::as_str).map(str::to_owned);
        let number = |field: &str| value.get(field).and_then(Value::as_i64);
        let missing = |field: &'static str| de::Error::missing_field(field);
        Ok(Approval {
            namespace: text("namespace").ok_or_else(|| missing("namespace"))?,
            key: text("key").ok_or_else(|| missing("key"))?,
            text: text("text").ok_or_else(|| missing("text"))?,
            request: match value.get("request") {
                Some(Value::String(text)) => text.clone(),
                Some(other) => other.to_string(),
                None => "{}".to_owned(),
            },
            asked_at_ms: number("asked_at_ms").ok_or_else(|| missing("asked_at_ms"))?,
            expires_at_ms: number("expires_at_ms").ok_or_else(|| missing("expires_at_ms"))?,
            declined_by: text("declined_by"),
            declined_at_ms: number("declined_at_ms"),
            note: text("note"),
        })
    }
}

struct Differences<'a>(&'a [FieldDifference]);

impl Serialize for Differences<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(Difference))
    }
}

/// One difference: `{"field", "stored", "requested"}`, a side left out when absent.
struct Difference<'a>(&'a FieldDifference);

impl Serialize for Difference<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let d = self.0;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("field", &d.field)?;
        if d.stored_text != ABSENT {
            map.serialize_entry("stored", &d.stored)?;
        }
        if d.requested_text != ABSENT {
            map.serialize_entry("requested", &d.requested)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Error {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Outer;
        impl<'de> Visitor<'de> for Outer {
            type Value = Error;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(r#"an idem error: {"error": {"code", "message", "retryable", "suggestion"}}"#)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Error, A::Error> {
                let mut error = None;
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "error" if error.is_some() => return Err(de::Error::duplicate_field("error")),
                        "error" => error = Some(map.next_value_seed(BodySeed)?),
                        _ => drop(map.next_value::<IgnoredAny>()?),
                    }
                }
                error.ok_or_else(|| de::Error::missing_field("error"))
            }
        }
        deserializer.deserialize_map(Outer)
    }
}

/// Reads the body of `{"error": ...}`.
struct BodySeed;

impl<'de> de::DeserializeSeed<'de> for BodySeed {
    type Value = Error;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Error, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for BodySeed {
    type Value = Error;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(r#"the body of an idem error: {"code", "message", "retryable", "suggestion"}"#)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Error, A::Error> {
        let (mut code, mut message, mut suggestion, mut differences) = (None, None, None, None);
        let (mut retry_after_ms, mut since_ms, mut progress, mut approval) = (None, None, None, None);
        let mut budget = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "code" => code = Some(map.next_value::<ErrorCode>()?),
                "message" => message = Some(map.next_value::<String>()?),
                "suggestion" => suggestion = map.next_value::<Option<String>>()?,
                "differences" => differences = Some(map.next_value::<Vec<Wire>>()?),
                "retry_after_ms" => retry_after_ms = map.next_value::<Option<u64>>()?,
                "since_ms" => since_ms = map.next_value::<Option<i64>>()?,
                "progress" => progress = map.next_value::<Option<String>>()?,
                "approval" => approval = map.next_value::<Option<Approval>>()?,
                "budget" => budget = map.next_value::<Option<OverBudget>>()?,
                // `retryable` follows from the code; unknown fields are a newer idem's.
                _ => drop(map.next_value::<IgnoredAny>()?),
            }
        }
        let code = code.ok_or_else(|| de::Error::missing_field("code"))?;
        let message = message.ok_or_else(|| de::Error::missing_field("message"))?;
        let differences: Vec<FieldDifference> = differences.unwrap_or_default().into_iter().map(|Wire(d)| d).collect();
        let mut error = Error { code, message, suggestion, details: None };
        if !differences.is_empty() {
            error = error.with_differences(differences);
        }
        if let Some(ms) = retry_after_ms {
            error =
                error.with_running(Running { retry_after: std::time::Duration::from_millis(ms), since_ms, progress });
        }
        if let Some(approval) = approval {
            error = error.with_approval(approval);
        }
        if let Some(budget) = budget {
            error = error.with_budget(budget);
        }
        Ok(error)
    }
}

/// A [`FieldDifference`] as it is serialized.
struct Wire(FieldDifference);

impl<'de> Deserialize<'de> for Wire {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct DifferenceVisitor;
        impl<'de> Visitor<'de> for DifferenceVisitor {
            type Value = Wire;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(r#"a compared field's difference: {"field", "stored", "requested"}"#)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Wire, A::Error> {
                let (mut field, mut stored, mut requested) = (None, None, None);
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "field" => field = Some(map.next_value::<String>()?),
                        "stored" => stored = Some(map.next_value::<Value>()?),
                        "requested" => requested = Some(map.next_value::<Value>()?),
                        _ => drop(map.next_value::<IgnoredAny>()?),
                    }
                }
                let field = field.ok_or_else(|| de::Error::missing_field("field"))?;
                Ok(Wire(FieldDifference::new(field, stored.as_ref(), requested.as_ref())))
            }
        }
        deserializer.deserialize_map(DifferenceVisitor)
    }
}
