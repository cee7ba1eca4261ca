//! The structured tool error every idem answer that is not a result takes: [`Error`], its
//! stable [`ErrorCode`], and the details some errors carry ([`Running`] for IN_PROGRESS
//! and TIMEOUT, [`FieldDifference`] for CONFLICT).

use std::fmt;

pub use crate::difference::FieldDifference;

mod wire;

/// The stable code of an [`Error`]: what happened, in a form code and models can branch on.
///
/// Codes are serialized in `SCREAMING_SNAKE_CASE` (`"IN_PROGRESS"`) and never renamed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// The first call with this key is still running.
    InProgress,
    /// A call with this key completed earlier, with different compared fields.
    Conflict,
    /// A call with this key was abandoned (crash, panic, dropped future) and its lease
    /// ended: nobody knows whether the action happened.
    OutcomeUnknown,
    /// The store could not be reached or failed; the body did not run.
    StoreUnavailable,
    /// A key field was empty after normalization, or a compared field could not be
    /// serialized; the body did not run.
    InvalidKey,
    /// The caller's `timeout` passed before the body finished. The body goes on and
    /// records its outcome: check the status function, do not call again.
    Timeout,
    /// The stored record exists but cannot be read back (corrupt, or its result no longer
    /// deserializes into the tool's type). Never turned into a re-run.
    RecordUnreadable,
    /// Two different tools use one default namespace (methods of the same name in two
    /// impl blocks of one module): the second one called refuses every call, so that
    /// neither answers the other's calls. Give one `namespace = "..."`.
    NamespaceClash,
    /// The action needs a person's approval (`approval`), which was asked for and
    /// has not been given: nothing ran. The same request stands for every repeat.
    ApprovalRequired,
    /// A person declined the action: nothing ran, and nothing will until an operator
    /// reopens it.
    Declined,
    /// The action's approval request expired without a decision: nothing ran. The next
    /// call asks a person anew.
    ApprovalExpired,
    /// The tool's budget (`budget = ...`) has no room for this run in its current window:
    /// nothing ran. Calling again before the window resets answers the same.
    BudgetExceeded,
}

impl ErrorCode {
    /// Every code, in a stable order.
    pub const ALL: [ErrorCode; 12] = [
        ErrorCode::InProgress,
        ErrorCode::Conflict,
        ErrorCode::OutcomeUnknown,
        ErrorCode::StoreUnavailable,
        ErrorCode::InvalidKey,
        ErrorCode::Timeout,
        ErrorCode::RecordUnreadable,
        ErrorCode::NamespaceClash,
        ErrorCode::ApprovalRequired,
        ErrorCode::Declined,
        ErrorCode::ApprovalExpired,
        ErrorCode::BudgetExceeded,
    ];

    /// The code serialized as `code`, e.g. `ErrorCode::parse("IN_PROGRESS")`; `None` for
    /// a code this version does not know.
    pub fn parse(code: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.into_iter().find(|known| known.as_str() == code)
    }

    /// The code as it is serialized, e.g. `"IN_PROGRESS"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InProgress => "IN_PROGRESS",
            ErrorCode::Conflict => "CONFLICT",
            ErrorCode::OutcomeUnknown => "OUTCOME_UNKNOWN",
            ErrorCode::StoreUnavailable => "STORE_UNAVAILABLE",
            ErrorCode::InvalidKey => "INVALID_KEY",
            ErrorCode::Timeout => "TIMEOUT",
            ErrorCode::RecordUnreadable => "RECORD_UNREADABLE",
            ErrorCode::NamespaceClash => "NAMESPACE_CLASH",
            ErrorCode::ApprovalRequired => "APPROVAL_REQUIRED",
            ErrorCode::Declined => "DECLINED",
            ErrorCode::ApprovalExpired => "APPROVAL_EXPIRED",
            ErrorCode::BudgetExceeded => "BUDGET_EXCEEDED",
        }
    }

    /// Whether sending the same call again can help. Only a store outage is retryable:
    /// every other answer is settled, or needs a check (`<tool>_status`) or a person.
    pub const fn retryable(self) -> bool {
        matches!(self, ErrorCode::StoreUnavailable)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A structured tool error: a stable [`code`](Error::code), a message for people and
/// models, whether a retry can help, and what to do instead.
///
/// It serializes as `{"error": {"code", "message", "retryable", "suggestion"}}`, the shape
/// agent frameworks pass to the model; a CONFLICT adds `"differences": [{"field",
/// "stored", "requested"}]` with the values as JSON (a side the call did not compare is
/// left out); IN_PROGRESS and TIMEOUT add `"retry_after_ms"` (how long to wait before
/// asking again) and, when known, `"since_ms"` and `"progress"` (see [`Running`]). Tools return it through their own error type: `Result<T, E>` works for any
/// `E: From<idem::Error>`.
///
/// It deserializes from the same form, so an error type kept by `on_error = keep` (which
/// must serialize and deserialize) can wrap it. `retryable` is read from the code, never
/// from the input; fields this version does not know are ignored, and a code it does not
/// know is an error.
///
/// ```
/// let error = idem_runtime::Error::new(idem_runtime::ErrorCode::InProgress, "still running")
///     .with_suggestion("call send_invoice_status in a few seconds");
/// let json = serde_json::to_string(&error).unwrap();
/// assert_eq!(serde_json::from_str::<idem_runtime::Error>(&json).unwrap(), error);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    code: ErrorCode,
    message: String,
    suggestion: Option<String>,
    /// Boxed: only CONFLICT, IN_PROGRESS and TIMEOUT answers have it, and every answer
    /// moves the error (a smaller one is cheaper to pass around).
    details: Option<Box<Details>>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Details {
    differences: Vec<FieldDifference>,
    running: Option<Running>,
    approval: Option<Approval>,
    budget: Option<OverBudget>,
}

/// For BUDGET_EXCEEDED: the budget window that had no room. Serialized in the error's body
/// as `"budget": {"name", "used", "limit", "window_start_ms", "resets_at_ms"}`, amounts in
/// the budget's units (runs, or the summed field's).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct OverBudget {
    /// The budget's name.
    pub name: String,
    /// What the window used so far.
    pub used: f64,
    /// What the window allows (with what operators raised it by).
    pub limit: f64,
    /// When the window started, in milliseconds since the Unix epoch, by the store's clock.
    pub window_start_ms: i64,
    /// When it ends and the next window starts with nothing used.
    pub resets_at_ms: i64,
}

impl Eq for OverBudget {}

/// For APPROVAL_REQUIRED, DECLINED and APPROVAL_EXPIRED: the approval the answer is about.
/// Serialized in the error's body as `"approval": {"namespace", "key", "text", "request",
/// "asked_at_ms", "expires_at_ms"}`, plus `"declined_by"`, `"declined_at_ms"` and `"note"`
/// for DECLINED. The namespace and key are what an approver names (`idem approve NAMESPACE
/// KEY`, [`approval::approve`](crate::approval::approve)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Approval {
    /// The tool's namespace.
    pub namespace: String,
    /// The action's key.
    pub key: String,
    /// What a person is asked to approve.
    pub text: String,
    /// The compared fields asked for, as canonical JSON (serialized as JSON): exactly what
    /// an approval binds.
    pub request: String,
    /// When it was asked, in milliseconds since the Unix epoch, by the store's clock.
    pub asked_at_ms: i64,
    /// When the request expires without a decision.
    pub expires_at_ms: i64,
    /// For DECLINED: who declined.
    pub declined_by: Option<String>,
    /// For DECLINED: when, in milliseconds since the Unix epoch, by the store's clock.
    pub declined_at_ms: Option<i64>,
    /// For DECLINED: why, if they said.
    pub note: Option<String>,
}

/// For an IN_PROGRESS or TIMEOUT answer: the call that is still running, and when to ask
/// again. Serialized in the error's body as `"retry_after_ms"`, `"since_ms"` and
/// `"progress"` (the last two left out when unknown).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Running {
    /// How long to wait before asking again (the status function, or the same call), in
    /// whole milliseconds. It is how long the call has run so far, at least 1 s and at
    /// most 30 s; then capped at a third of the tool's lease and, for IN_PROGRESS, at
    /// 100 ms after the running call's current lease ends; never under 100 ms. The caps
    /// win over the 1 s minimum (a lease under 3 s gives a hint under 1 s: 666 ms for a
    /// 2 s lease), because the hint exists to bring a caller back before a holder that
    /// died could be freed; only the 100 ms floor wins over them (leases under 300 ms).
    /// So a quick call is polled within a second, a long export every half minute, and a
    /// caller that waits as told learns of a dead holder within moments of its key being
    /// freed.
    pub retry_after: std::time::Duration,
    /// When the running call started, in milliseconds since the Unix epoch by the store's
    /// clock (for IN_PROGRESS; a TIMEOUT leaves it out).
    pub since_ms: Option<i64>,
    /// The last progress message the running body reported (`idem::progress`), if any.
    pub progress: Option<String>,
}

impl Error {
    /// An error with `code` and `message` and no suggestion.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Error { code, message: message.into(), suggestion: None, details: None }
    }

    /// The same error with a suggestion of what to do instead.
    pub fn with_suggestion(mut self, suggestion: impl Into<String>) -> Self {
        self.suggestion = Some(suggestion.into());
        self
    }

    pub(crate) fn with_running(mut self, running: Running) -> Self {
        self.details.get_or_insert_default().running = Some(running);
        self
    }

    pub(crate) fn with_budget(mut self, budget: OverBudget) -> Self {
        self.details.get_or_insert_default().budget = Some(budget);
        self
    }

    pub(crate) fn with_approval(mut self, approval: Approval) -> Self {
        self.details.get_or_insert_default().approval = Some(approval);
        self
    }

    pub(crate) fn with_differences(mut self, differences: Vec<FieldDifference>) -> Self {
        self.details.get_or_insert_default().differences = differences;
        self
    }

    /// The stable code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// What happened, naming the key and (for a conflict) each differing field.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether the same call may be sent again.
    pub fn retryable(&self) -> bool {
        self.code.retryable()
    }

    /// What to do instead, e.g. which status function to call.
    pub fn suggestion(&self) -> Option<&str> {
        self.suggestion.as_deref()
    }

    /// For [`InProgress`](ErrorCode::InProgress) and [`Timeout`](ErrorCode::Timeout): how
    /// long to wait before asking again (see [`Running::retry_after`]).
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        self.running().map(|running| running.retry_after)
    }

    /// For [`InProgress`](ErrorCode::InProgress) and [`Timeout`](ErrorCode::Timeout): the
    /// running call, as far as it is known.
    pub fn running(&self) -> Option<&Running> {
        self.details.as_ref()?.running.as_ref()
    }

    /// For a [`Conflict`](ErrorCode::Conflict): each compared field that differs.
    pub fn differences(&self) -> &[FieldDifference] {
        self.details.as_ref().map_or(&[], |details| &details.differences)
    }

    /// For [`ApprovalRequired`](ErrorCode::ApprovalRequired), [`Declined`](ErrorCode::Declined)
    /// and [`ApprovalExpired`](ErrorCode::ApprovalExpired): the approval it is about.
    pub fn approval(&self) -> Option<&Approval> {
        self.details.as_ref()?.approval.as_ref()
    }

    /// For [`BudgetExceeded`](ErrorCode::BudgetExceeded): the window that had no room.
    pub fn budget(&self) -> Option<&OverBudget> {
        self.details.as_ref()?.budget.as_ref()
    }

    /// The error as the JSON value `{"error": {...}}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("an idem::Error always serializes")
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)?;
        if let Some(suggestion) = &self.suggestion {
            write!(f, " ({suggestion})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_as_the_tool_error_shape() {
        let error = Error::new(ErrorCode::InProgress, "still running")
            .with_suggestion("call send_invoice_status in a few seconds");
        assert_eq!(
            serde_json::to_string(&error).unwrap(),
            r#"{"error":{"code":"IN_PROGRESS","message":"still running","retryable":false,"suggestion":"call send_invoice_status in a few seconds"}}"#
        );
    }

    #[test]
    fn only_a_store_outage_is_retryable() {
        for code in [
            ErrorCode::InProgress,
            ErrorCode::Conflict,
            ErrorCode::OutcomeUnknown,
            ErrorCode::InvalidKey,
            ErrorCode::Timeout,
            ErrorCode::RecordUnreadable,
            ErrorCode::NamespaceClash,
            ErrorCode::ApprovalRequired,
            ErrorCode::Declined,
            ErrorCode::ApprovalExpired,
        ] {
            assert!(!code.retryable(), "{code}");
        }
        assert!(ErrorCode::StoreUnavailable.retryable());
    }

    #[test]
    fn display_names_code_message_and_suggestion() {
        let error = Error::new(ErrorCode::Conflict, "amount differs").with_suggestion("ask the user");
        assert_eq!(error.to_string(), "CONFLICT: amount differs (ask the user)");
    }

    #[test]
    fn a_conflict_serializes_its_differences_and_round_trips() {
        let stored = serde_json::json!({"amount": 120, "currency": "EUR"});
        let requested = serde_json::json!({"amount": 150, "currency": "EUR", "memo": "x"});
        let differences = crate::difference::differences(&stored.to_string(), &requested.to_string());
        let error = Error::new(ErrorCode::Conflict, "differs").with_suggestion("ask").with_differences(differences);
        let json = serde_json::to_string(&error).unwrap();
        assert_eq!(
            json,
            r#"{"error":{"code":"CONFLICT","message":"differs","retryable":false,"suggestion":"ask","differences":[{"field":"amount","stored":120,"requested":150},{"field":"memo","requested":"x"}]}}"#
        );
        assert_eq!(serde_json::from_str::<Error>(&json).unwrap(), error);
    }

    #[test]
    fn deserializes_from_the_documented_form() {
        let error: Error = serde_json::from_str(
            r#"{"error": {"code": "STORE_UNAVAILABLE", "message": "down", "retryable": false, "suggestion": null, "hint_ms": 50}}"#,
        )
        .unwrap();
        assert_eq!(error, Error::new(ErrorCode::StoreUnavailable, "down"));
        assert!(error.retryable(), "retryable follows the code, not the input");
        let unknown = serde_json::from_str::<Error>(r#"{"error": {"code": "PAUSED", "message": "m"}}"#).unwrap_err();
        assert!(unknown.to_string().contains("PAUSED"), "{unknown}");
        assert!(unknown.to_string().contains("APPROVAL_EXPIRED"), "every known code is listed: {unknown}");
        assert!(serde_json::from_str::<Error>(r#"{"code": "TIMEOUT", "message": "m"}"#).is_err(), "the body alone");
    }

    #[test]
    fn every_code_parses_from_its_name() {
        for code in ErrorCode::ALL {
            assert_eq!(ErrorCode::parse(code.as_str()), Some(code));
        }
        assert_eq!(ErrorCode::parse("in_progress"), None);
    }
}
