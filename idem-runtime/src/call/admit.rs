//! Admission: what a call must pass before its body may run, in one place and in this
//! order, each step written once.
//!
//! 1. **The budget's amount.** A sum budget's field must be a number in range
//!    (INVALID_KEY otherwise), checked before anything is asked or reserved.
//! 2. **The approval gate** (`approval(...)`): the action's request is looked up, asked
//!    for, or answered from; only an approved action, or one that needs no approval, goes on.
//! 3. **The reservation**, charging the budget in the same write.
//! 4. **The over-budget gate** (`approval(over_budget)`): a reservation the budget had no
//!    room for asks a person instead, and once approved reserves past the limit.
//!
//! What comes out is either an answer given without a reservation, or what the store said
//! to the reservation, which the driver then [decides](super::decide) as for any call. A
//! next policy that must hold before the reservation (a rate limit, a kill switch) is one
//! more step here.

use crate::error::Error;
use crate::key::Key;
use crate::observe::{Happened, Outcome, Phase, notify};
use crate::store::{RecordId, Reservation, Reserve, Store, StoreError};

use super::approval::{ApprovalPolicy, Gate, gate};
use super::call_store::{CallStore, Renews, Reserving};
use super::serving::front_end;
use super::{BudgetPolicy, Tool};

/// What admission came to.
pub(super) enum Admission {
    /// The budget's amount could not be read from the compared fields: INVALID_KEY, and
    /// nothing was asked or reserved.
    Invalid(Error),
    /// Answered without a reservation: the approval is required, declined or expired.
    Answered(Outcome, Error),
    /// The reservation was attempted: what the store said, to be decided.
    Reserved(Reserved),
}

/// A reservation attempt, and whether a person approved the action it is for.
pub(super) struct Reserved {
    pub(super) reservation: Result<Reservation, StoreError>,
    pub(super) approved: bool,
}

/// Tells observers that a call runs its body as admitted: approved by a person (when
/// `approved`), charged to its budget (when it has one).
pub(super) fn runs(tool: &'static Tool, key: &Key, approved: bool) {
    if approved {
        notify(tool.subject(), key, Phase::Reserve, Happened::Approved);
    }
    if tool.budget.is_some() {
        notify(tool.subject(), key, Phase::Reserve, Happened::BudgetSpent);
    }
}

/// Admits one call of `tool` with `key` and compared fields `request`: `asks` is the text
/// of the request this call would make when its approval condition holds, `described` the
/// tool's approval text for this call (what an over-budget question starts with).
pub(super) async fn admit<S: Store + ?Sized, R: Reserving<S>, L: Renews>(
    tool: &'static Tool,
    at: &CallStore<'_, S, R, L>,
    (key, request): (&Key, &str),
    (asks, described): (Option<&str>, Option<String>),
) -> Admission {
    let amount = match tool.budget.map(|policy| super::budget::amount(tool, policy.budget, request)) {
        Some(Err(error)) => return Admission::Invalid(error),
        Some(Ok(amount)) => amount,
        None => 0,
    };
    let reserved = match tool.approval {
        None => Reserved { reservation: reserve(tool, at, (key, request), amount, false).await, approved: false },
        // Boxed: the gate's future is large, and a call without an approval should not carry it.
        Some(asking) => match Box::pin(gated(tool, asking, at, (key, request), asks, amount)).await {
            Ok(reserved) => reserved,
            Err((outcome, error)) => return Admission::Answered(outcome, error),
        },
    };
    let reserved = match (&reserved.reservation, tool.approval, tool.budget) {
        (Ok(Reservation::OverBudget(window)), Some(asking), Some(BudgetPolicy { over_budget_asks: true, .. })) => {
            let action = match asks.map(str::to_owned).or(described) {
                Some(text) => text,
                None => super::approval::default_text(tool, &key.readable(), request),
            };
            let question = super::budget::over_budget_text(&action, window);
            match Box::pin(gated(tool, asking, at, (key, request), Some(&question), amount)).await {
                Ok(reserved) => reserved,
                Err((outcome, error)) => return Admission::Answered(outcome, error),
            }
        }
        _ => reserved,
    };
    if matches!(reserved.reservation, Ok(Reservation::OverBudget(_))) {
        notify(tool.subject(), key, Phase::Reserve, Happened::BudgetExceeded);
    }
    Admission::Reserved(reserved)
}

/// The approval gate, asking with `asks` when the call needs an approval it has no
/// request for, then the reservation it lets through: an approved call reserves past its
/// budget's limit when the tool asks over budget.
async fn gated<S: Store + ?Sized, R: Reserving<S>, L: Renews>(
    tool: &'static Tool,
    asking: &ApprovalPolicy,
    at: &CallStore<'_, S, R, L>,
    (key, request): (&Key, &str),
    asks: Option<&str>,
    amount: i64,
) -> Result<Reserved, (Outcome, Error)> {
    match approval_gate(tool, asking, (key, request), asks, at).await {
        Gate::Record(record) => Ok(Reserved { reservation: Ok(Reservation::Existing(record)), approved: false }),
        Gate::Open(decision) => {
            let approved = decision.is_some();
            Ok(Reserved { reservation: reserve(tool, at, (key, request), amount, approved).await, approved })
        }
        Gate::Answer(outcome, error) => Err((outcome, error)),
    }
}

/// The approval gate; a front end may ask the person in band when it answers
/// APPROVAL_REQUIRED, and the gate is asked again when the front end says so (a decision was
/// recorded, or the request moved on).
async fn approval_gate<S: Store + ?Sized, R: Reserving<S>, L: Renews>(
    tool: &'static Tool,
    asking: &ApprovalPolicy,
    call: (&Key, &str),
    asks: Option<&str>,
    at: &CallStore<'_, S, R, L>,
) -> Gate {
    let gated = gate(tool, asking, call, asks, at.erased()).await;
    let Gate::Answer(Outcome::ApprovalRequired, error) = &gated else { return gated };
    let (Some((serving, store)), Some(approval)) = (front_end(tool, at), error.approval()) else {
        return gated;
    };
    let asked = crate::approval::Request::from(approval);
    if serving.approval_required(tool, call.0, &asked, store).await {
        return gate(tool, asking, call, asks, at.erased()).await;
    }
    gated
}

/// Reserves the call's key, charging `amount` to the tool's budget if it has one (past its
/// limit when a person approved the action and the tool asks over budget).
async fn reserve<S: Store + ?Sized, R: Reserving<S>, L: Renews>(
    tool: &'static Tool,
    at: &CallStore<'_, S, R, L>,
    (key, request): (&Key, &str),
    amount: i64,
    approved: bool,
) -> Result<Reservation, StoreError> {
    let id = RecordId { namespace: tool.namespace, key: key.as_str() };
    let reserve = Reserve { id, request, lease: tool.lease };
    let charge = tool.budget.map(|policy| {
        let past_limit = approved && policy.over_budget_asks;
        super::budget::charge(policy.budget, key, amount, past_limit)
    });
    at.reserve(reserve, charge).await
}
