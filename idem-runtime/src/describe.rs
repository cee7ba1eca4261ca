//! The paragraph `#[idempotent]` adds to a tool's description, joined at run time: the
//! macro builds its sentences from the attribute (`idem-macros`' `describe.rs`) and leaves
//! two kinds of facts to this module, the JSON names of the fields the model sends (in the
//! arguments' schema, where serde's `rename_all` shows) and the budget's limit (in its
//! `static`).

use std::time::Duration;

use crate::budget::Budget;
use crate::json_names::{self, JsonObject};

/// A piece of a tool's generated description.
#[derive(Clone, Copy, Debug)]
pub enum Part {
    /// Text as it is.
    Text(&'static str),
    /// A field of the arguments the model sends, by the path the tool records it under:
    /// shown by its JSON name.
    Field(&'static str),
    /// The tool's budget: "the budget refunds (at most 20 runs per day)".
    Budget,
}

/// The tool's description: `own` (the user's text), a blank line, and `parts` joined, with
/// each field by its JSON name in the schema `schema_of` gives (the names `given` in
/// `json_names = [...]` first; without a schema, those or the Rust names). `own` alone when
/// there are no parts (`describe = off`), the parts alone when `own` is empty.
pub fn describe(
    own: &str,
    parts: &[Part],
    schema_of: Option<fn() -> Option<JsonObject>>,
    given: &[(&str, &str)],
    budget: Option<&Budget>,
) -> String {
    let schema = schema_of.and_then(|schema_of| schema_of());
    let mut paragraph = String::new();
    for part in parts {
        match part {
            Part::Text(text) => paragraph.push_str(text),
            Part::Field(path) => paragraph.push_str(&json_names::json_path(schema.as_ref(), path, given)),
            Part::Budget => match budget {
                Some(budget) => paragraph.push_str(&budget_phrase(budget, schema.as_ref(), given)),
                None => paragraph.push_str("a budget"),
            },
        }
    }
    match (own.trim().is_empty(), paragraph.is_empty()) {
        (_, true) => own.to_owned(),
        (true, false) => paragraph,
        (false, false) => format!("{}\n\n{paragraph}", own.trim_end()),
    }
}

/// "the budget refunds (at most 20 runs per day)", "the budget refunded (at most 5000 of
/// amount per day)".
fn budget_phrase(budget: &Budget, schema: Option<&JsonObject>, given: &[(&str, &str)]) -> String {
    let limit = budget.limit();
    let what = match budget.field() {
        None if limit == 1.0 => "1 run".to_owned(),
        None => format!("{limit} runs"),
        Some(field) => format!("{limit} of {} in total", json_names::json_path(schema, field, given)),
    };
    format!("the budget {} (at most {what} {})", budget.name(), per(budget.window()))
}

/// "per day", "per 2 hours", "per 90 seconds": the window in its largest whole unit.
fn per(window: Duration) -> String {
    const UNITS: [(u128, &str); 5] =
        [(86_400_000, "day"), (3_600_000, "hour"), (60_000, "minute"), (1_000, "second"), (1, "millisecond")];
    let ms = window.as_millis();
    let (size, unit) = UNITS.into_iter().find(|(size, _)| ms.is_multiple_of(*size)).unwrap_or((1, "millisecond"));
    match ms / size {
        1 => format!("per {unit}"),
        n => format!("per {n} {unit}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    static REFUNDS: Budget = Budget::count("refunds", 20).per_day();
    static REFUNDED: Budget = Budget::sum_of("refunded", "amount_eur", 5_000.0).per(Duration::from_secs(7200));

    fn camel_case() -> Option<JsonObject> {
        let schema = json!({"type": "object", "properties": {"customerId": {"type": "string"}, "amountEur": {}}});
        schema.as_object().cloned()
    }

    #[test]
    fn fields_take_their_json_names_and_budgets_their_limits() {
        let parts = [Part::Text("for the same "), Part::Field("customer_id"), Part::Text(", by "), Part::Budget];
        assert_eq!(
            describe("Send it.", &parts, Some(camel_case), &[], Some(&REFUNDS)),
            "Send it.\n\nfor the same customerId, by the budget refunds (at most 20 runs per day)"
        );
        assert_eq!(
            describe("", &parts, None, &[("customer_id", "cust")], Some(&REFUNDED)),
            "for the same cust, by the budget refunded (at most 5000 of amount_eur in total per 2 hours)"
        );
        assert_eq!(
            describe("", &[Part::Budget], Some(camel_case), &[], Some(&REFUNDED)),
            "the budget refunded (at most 5000 of amountEur in total per 2 hours)"
        );
    }

    #[test]
    fn off_keeps_the_users_text_alone() {
        assert_eq!(describe("Send it.", &[], None, &[], None), "Send it.");
        assert_eq!(describe("  ", &[Part::Text("Safe.")], None, &[], None), "Safe.");
    }

    #[test]
    fn windows_read_in_their_largest_whole_unit() {
        assert_eq!(per(Duration::from_secs(86_400)), "per day");
        assert_eq!(per(Duration::from_secs(7 * 86_400)), "per 7 days");
        assert_eq!(per(Duration::from_secs(90)), "per 90 seconds");
        assert_eq!(per(Duration::from_secs(60)), "per minute");
        assert_eq!(per(Duration::from_millis(1500)), "per 1500 milliseconds");
    }
}
