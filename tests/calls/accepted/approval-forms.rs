use idem::budget::Budget;
use idem::{ErrorCode, MemoryStore, idempotent};
use std::sync::LazyLock;

static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);
static GIFTS: Budget = Budget::count("accepted.gifts", 1).per_day();

/// Ship an order. A parameter named `required` is read like any other: idem's own words
/// (`always`, `over_budget`) stand where names stand, never after `when =`.
#[idempotent(key = "ship:<order>", approval(when = required), namespace = "accepted::ship", store = *STORE)]
fn ship(order: String, required: bool) -> Result<String, idem::Error> {
    Ok(format!("shipped {order}"))
}

/// Delete an account: `approval` alone asks on every first call.
#[idempotent(key = "delete:<account>", approval, namespace = "accepted::delete", store = *STORE)]
fn delete(account: String) -> Result<(), idem::Error> {
    let _ = account;
    Ok(())
}

/// Send a gift: only a gift the budget has no room for asks, with its own text.
#[idempotent(key = "gift:<gift>", budget = GIFTS, approval(over_budget, text = "send the gift <gift>", ttl = "1h"),
    namespace = "accepted::gift", store = *STORE)]
fn gift(gift: String) -> Result<String, idem::Error> {
    Ok(format!("sent {gift}"))
}

/// Refund: every first call asks (`always`), and an approved one runs past the budget.
#[idempotent(key = "refund:<order>", budget = GIFTS, approval(always, over_budget, notify = noted),
    namespace = "accepted::refund", store = *STORE)]
fn refund(order: String) -> Result<String, idem::Error> {
    Ok(order)
}

fn noted(_: &idem::approval::Request) {}

pub fn main() {
    assert_eq!(ship("a".into(), false).unwrap(), "shipped a", "the condition is the parameter: false runs");
    assert_eq!(ship("b".into(), true).unwrap_err().code(), ErrorCode::ApprovalRequired);
    assert_eq!(delete("acme".into()).unwrap_err().code(), ErrorCode::ApprovalRequired);
    assert_eq!(gift("one".into()).unwrap(), "sent one", "room in the budget: nothing is asked");
    let asked = gift("two".into()).unwrap_err();
    assert_eq!(asked.code(), ErrorCode::ApprovalRequired, "{asked}");
    let text = &asked.approval().expect("the request").text;
    assert!(text.contains("send the gift two"), "{text}");
    assert_eq!(refund("r1".into()).unwrap_err().code(), ErrorCode::ApprovalRequired, "with room, `always` asks");
}
