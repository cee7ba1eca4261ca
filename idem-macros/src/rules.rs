//! Keys name the action, not the attempt: names and types that change from one attempt to
//! the next cannot be key fields. Each rule says why and what to use instead.

use quote::ToTokens;
use syn::Type;

/// Why a name cannot be a key field, or `None` when it can.
pub(crate) fn forbidden_name(name: &str) -> Option<&'static str> {
    let name = name.to_ascii_lowercase();
    let n = name.as_str();
    const CLOCK: &[&str] = &[
        "now",
        "time_now",
        "current_time",
        "timestamp",
        "ts",
        "created_at",
        "updated_at",
        "requested_at",
        "received_at",
        "sent_at",
    ];
    const ATTEMPT: &[&str] = &[
        "call_id",
        "tool_call_id",
        "toolcall_id",
        "attempt",
        "attempt_id",
        "attempt_number",
        "retry",
        "retry_id",
        "retry_count",
        "retries",
        "invocation_id",
    ];
    const RANDOM: &[&str] = &["nonce", "random", "rand", "rng", "salt", "uuid_v4", "uuidv4", "uuid4"];
    if CLOCK.contains(&n) || n.ends_with("_timestamp") {
        return Some(CLOCK_WHY);
    }
    if ATTEMPT.contains(&n) || n.ends_with("_call_id") {
        return Some(ATTEMPT_WHY);
    }
    if RANDOM.contains(&n) || n.starts_with("random_") {
        return Some(RANDOM_WHY);
    }
    None
}

/// Why a type cannot be a key field, or `None` when nothing in its name says so (the
/// `KeyPart` trait still checks it).
pub(crate) fn forbidden_type(ty: &Type) -> Option<(&'static str, String)> {
    let mut found = None;
    walk_idents(ty.to_token_stream(), &mut |ident| {
        let why = match ident {
            "f32" | "f64" => FLOAT_WHY,
            "SystemTime" | "Instant" | "DateTime" | "NaiveDateTime" | "NaiveTime" | "OffsetDateTime"
            | "PrimitiveDateTime" | "UtcDateTime" | "Timestamp" | "Zoned" => TYPE_CLOCK_WHY,
            _ => return,
        };
        found.get_or_insert((why, ident.to_owned()));
    });
    found
}

fn walk_idents(tokens: proc_macro2::TokenStream, visit: &mut impl FnMut(&str)) {
    for token in tokens {
        match token {
            proc_macro2::TokenTree::Ident(ident) => visit(&ident.to_string()),
            proc_macro2::TokenTree::Group(group) => walk_idents(group.stream(), visit),
            _ => {}
        }
    }
}

pub(crate) const CLOCK_WHY: &str = "is a clock reading: a retry a moment later would get another key and run the action again; key on what identifies the action (a customer, a period, an order id), or on an event_id or request_id created once before the first attempt";
pub(crate) const ATTEMPT_WHY: &str = "identifies the attempt, not the action: the model's retry after a timeout is a new tool call with a new id, so it would get another key and run the action again; key on what identifies the action (a customer, a period, an order id), or on an event_id or request_id created once before the first attempt";
pub(crate) const RANDOM_WHY: &str = "is random per call: every retry would get another key and run the action again; key on what identifies the action, or on a request_id created once before the first attempt and reused by every retry";
pub(crate) const FLOAT_WHY: &str = "is a float: floats are not exact (0.1 + 0.2 != 0.3), so the same amount can give two keys; key on an identifier and put the amount in `compare = [...]`, or use integer cents";
pub(crate) const TYPE_CLOCK_WHY: &str = "is a clock type: a retry a moment later would carry another time, get another key and run the action again; key on what identifies the action, or on a business date (a billing period, a `NaiveDate`)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(forbidden_name("now"), Some(CLOCK_WHY));
        assert_eq!(forbidden_name("created_at"), Some(CLOCK_WHY));
        assert_eq!(forbidden_name("event_timestamp"), Some(CLOCK_WHY));
        assert_eq!(forbidden_name("tool_call_id"), Some(ATTEMPT_WHY));
        assert_eq!(forbidden_name("openai_call_id"), Some(ATTEMPT_WHY));
        assert_eq!(forbidden_name("Attempt"), Some(ATTEMPT_WHY));
        assert_eq!(forbidden_name("nonce"), Some(RANDOM_WHY));
        assert_eq!(forbidden_name("random_suffix"), Some(RANDOM_WHY));
        for fine in ["customer", "period", "event_id", "request_id", "order_id", "start_date", "timestamps_enabled"] {
            assert_eq!(forbidden_name(fine), None, "{fine}");
        }
    }

    #[test]
    fn types() {
        let ty = |text: &str| syn::parse_str::<Type>(text).unwrap();
        assert_eq!(forbidden_type(&ty("f64")).unwrap().0, FLOAT_WHY);
        assert_eq!(forbidden_type(&ty("&f32")).unwrap().0, FLOAT_WHY);
        assert_eq!(forbidden_type(&ty("Option<std::time::SystemTime>")).unwrap().0, TYPE_CLOCK_WHY);
        assert_eq!(forbidden_type(&ty("chrono::DateTime<chrono::Utc>")).unwrap().0, TYPE_CLOCK_WHY);
        for fine in ["String", "&str", "u64", "chrono::NaiveDate", "Uuid"] {
            assert!(forbidden_type(&ty(fine)).is_none(), "{fine}");
        }
    }
}
