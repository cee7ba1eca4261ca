//! Key and compared fields as the model names them: argument structs whose JSON names
//! serde's `rename_all` (every rule) or `rename` changed. The status tool's declaration
//! (which ADK's agent reads on every run) never panics, it takes the names the model sees,
//! and every answer names a field as the model sent it.

use std::sync::Arc;

use adk_core::{AdkError, Tool, ToolContext};
use adk_tool::tool;
use idem::idempotent;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{STORE, call, model_reads};

/// One tool per serde `rename_all` rule, each with its status tool and the JSON names the
/// rule gives `customer_id`, `billing_period` and `amount_eur`.
macro_rules! renamed_tool {
    ($rule:literal, $args:ident, $tool:ident) => {
        #[derive(Deserialize, JsonSchema)]
        #[serde(rename_all = $rule)]
        struct $args {
            /// The customer to bill.
            customer_id: String,
            /// The billing period.
            billing_period: String,
            amount_eur: f64,
        }

        #[idempotent(key = "invoice:<args.customer_id>:<args.billing_period>", compare = [args.amount_eur],
            scope = ctx.user_id(), store = *STORE)]
        #[tool]
        async fn $tool(ctx: Arc<dyn ToolContext>, args: $args) -> Result<Value, AdkError> {
            Ok(json!({"billed": args.customer_id, "period": args.billing_period, "amount": args.amount_eur}))
        }
    };
}

renamed_tool!("lowercase", LowerArgs, send_lower);
renamed_tool!("UPPERCASE", UpperArgs, send_upper);
renamed_tool!("PascalCase", PascalArgs, send_pascal);
renamed_tool!("camelCase", CamelArgs, send_camel);
renamed_tool!("snake_case", SnakeArgs, send_snake);
renamed_tool!("SCREAMING_SNAKE_CASE", ScreamingArgs, send_screaming);
renamed_tool!("kebab-case", KebabArgs, send_kebab);
renamed_tool!("SCREAMING-KEBAB-CASE", ShoutingKebabArgs, send_shouting_kebab);

/// A rule, its tool and status tool, and the names it gives the three fields.
type Rule = (&'static str, &'static dyn Tool, &'static dyn Tool, [&'static str; 3]);

fn rules() -> Vec<Rule> {
    vec![
        ("lowercase", &SendLower, &SendLowerStatus, ["customer_id", "billing_period", "amount_eur"]),
        ("UPPERCASE", &SendUpper, &SendUpperStatus, ["CUSTOMER_ID", "BILLING_PERIOD", "AMOUNT_EUR"]),
        ("PascalCase", &SendPascal, &SendPascalStatus, ["CustomerId", "BillingPeriod", "AmountEur"]),
        ("camelCase", &SendCamel, &SendCamelStatus, ["customerId", "billingPeriod", "amountEur"]),
        ("snake_case", &SendSnake, &SendSnakeStatus, ["customer_id", "billing_period", "amount_eur"]),
        ("SCREAMING_SNAKE_CASE", &SendScreaming, &SendScreamingStatus, ["CUSTOMER_ID", "BILLING_PERIOD", "AMOUNT_EUR"]),
        ("kebab-case", &SendKebab, &SendKebabStatus, ["customer-id", "billing-period", "amount-eur"]),
        (
            "SCREAMING-KEBAB-CASE",
            &SendShoutingKebab,
            &SendShoutingKebabStatus,
            ["CUSTOMER-ID", "BILLING-PERIOD", "AMOUNT-EUR"],
        ),
    ]
}

fn properties(schema: &Value) -> Vec<String> {
    let mut names: Vec<String> = schema["properties"].as_object().expect("properties").keys().cloned().collect();
    names.sort();
    names
}

fn sorted(names: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = names.iter().map(|name| (*name).to_owned()).collect();
    names.sort();
    names
}

#[tokio::test]
async fn every_rename_all_rule_gives_status_tools_and_answers_the_models_names() {
    for (rule, tool, status, [customer, period, amount]) in rules() {
        // What ADK's agent reads on every run: no panic, the names the model sees.
        let declaration = status.declaration();
        let parameters = &declaration["parameters"];
        assert_eq!(properties(parameters), sorted(&[customer, period]), "{rule}: {declaration}");
        assert_eq!(parameters["properties"][customer]["description"], "The customer to bill.", "{rule}");
        let mut required: Vec<&str> =
            parameters["required"].as_array().unwrap().iter().flat_map(Value::as_str).collect();
        required.sort();
        assert_eq!(required, sorted(&[customer, period]), "{rule}: {declaration}");
        let described = declaration["description"].as_str().unwrap();
        assert!(described.contains(&format!("key fields ({customer}, {period})")), "{rule}: {described}");

        let first = json!({customer: "acme", period: "2026-10", amount: 120.0});
        let sent = tool.execute(call("alice", "call-1"), first).await.unwrap();
        let key = json!({customer: "acme", period: "2026-10"});
        let read = status.execute(call("alice", "call-2"), key).await.unwrap();
        assert_eq!((&read["status"], &read["result"]), (&json!("completed"), &sent), "{rule}");

        // CONFLICT names the field as the model sent it, in its words and in its details.
        let changed = json!({customer: "acme", period: "2026-10", amount: 150.0});
        let conflict = tool.execute(call("alice", "call-3"), changed).await.unwrap_err();
        assert_eq!(conflict.code, "CONFLICT", "{rule}");
        let shown: Value = serde_json::from_str(&conflict.message).unwrap();
        let message = shown["error"]["message"].as_str().unwrap();
        assert!(message.ends_with(&format!("{amount} was 120.0, now 150.0")), "{rule}: {message}");
        assert_eq!(shown["error"]["differences"][0]["field"], amount, "{rule}: {shown}");
        if amount != "amount_eur" {
            assert!(!model_reads(Err(conflict)).to_string().contains("amount_eur"), "{rule}: no Rust name");
        }

        // A status call without a field, and a key field empty after normalization, name it too.
        let missing = status.execute(call("alice", "call-4"), json!({customer: "acme"})).await.unwrap_err();
        assert_eq!(missing.code, "INVALID_KEY", "{rule}");
        assert!(missing.message.contains(&format!("{period} is missing")), "{rule}: {}", missing.message);
        let empty = json!({customer: "  ", period: "2026-10", amount: 1.0});
        let invalid = tool.execute(call("alice", "call-5"), empty).await.unwrap_err();
        assert!(invalid.message.contains(&format!("key field {customer} is")), "{rule}: {}", invalid.message);
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Customer {
    /// The customer's own reference.
    customer_ref: String,
    vat_rate: f64,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct RefundArgs {
    billing_customer: Customer,
    /// The order to refund.
    #[serde(rename = "orderNo")]
    order_number: u32,
    #[serde(rename = "amt")]
    amount_eur: f64,
}

/// A nested key field, and fields `#[serde(rename)]` renames, named in `json_names`.
#[idempotent(key = "refund:<args.billing_customer.customer_ref>:<args.order_number>",
    compare = [args.amount_eur, args.billing_customer.vat_rate],
    json_names = [args.order_number = "orderNo", args.amount_eur = "amt"], scope = ctx.user_id(), store = *STORE)]
#[tool]
async fn refund(ctx: Arc<dyn ToolContext>, args: RefundArgs) -> Result<Value, AdkError> {
    Ok(json!({"refunded": args.order_number, "amount": args.amount_eur}))
}

#[tokio::test]
async fn renamed_and_nested_fields_are_found_by_json_names_and_the_schema() {
    let declaration = RefundStatus.declaration();
    assert_eq!(properties(&declaration["parameters"]), ["billingCustomer", "orderNo"], "{declaration}");
    assert_eq!(declaration["parameters"]["properties"]["orderNo"]["description"], "The order to refund.");

    let args = json!({"billingCustomer": {"customerRef": "C-1", "vatRate": 0.2}, "orderNo": 7, "amt": 20.0});
    let first = Refund.execute(call("alice", "call-1"), args).await.unwrap();
    let key = json!({"billingCustomer": {"customerRef": "c-1", "vatRate": 0.2}, "orderNo": 7});
    let read = RefundStatus.execute(call("alice", "call-2"), key).await.unwrap();
    assert_eq!((&read["status"], &read["result"]), (&json!("completed"), &first));

    let changed = json!({"billingCustomer": {"customerRef": "C-1", "vatRate": 0.25}, "orderNo": 7, "amt": 30.0});
    let conflict = Refund.execute(call("alice", "call-3"), changed).await.unwrap_err();
    let shown: Value = serde_json::from_str(&conflict.message).unwrap();
    let fields: Vec<&Value> = shown["error"]["differences"].as_array().unwrap().iter().map(|d| &d["field"]).collect();
    assert_eq!(fields, [&json!("amt"), &json!("billingCustomer.vatRate")], "{shown}");
    let message = shown["error"]["message"].as_str().unwrap();
    assert!(message.contains("amt was 20.0, now 30.0; billingCustomer.vatRate was 0.2, now 0.25"), "{message}");

    let empty = json!({"billingCustomer": {"customerRef": " ", "vatRate": 0.2}, "orderNo": 8, "amt": 1.0});
    let invalid = Refund.execute(call("alice", "call-4"), empty).await.unwrap_err();
    assert!(invalid.message.contains("key field billingCustomer.customerRef is"), "{}", invalid.message);
    let ill_typed = RefundStatus.execute(call("alice", "call-5"), json!({"billingCustomer": 1, "orderNo": 7})).await;
    let ill_typed = ill_typed.unwrap_err().message;
    assert!(ill_typed.contains("billingCustomer is not valid"), "{ill_typed}");
}

#[derive(Deserialize, JsonSchema)]
struct ShipArgs {
    #[serde(rename = "parcelId")]
    parcel: String,
    #[serde(rename = "kg")]
    weight: f64,
}

/// A key field `#[serde(rename)]` renames that `json_names` does not name: nothing can find
/// its JSON name.
#[idempotent(key = "ship:<args.parcel>", compare = [args.weight], store = *STORE)]
#[tool]
async fn ship(args: ShipArgs) -> Result<Value, AdkError> {
    Ok(json!({"shipped": args.parcel, "kg": args.weight}))
}

#[tokio::test]
async fn a_rename_the_attribute_does_not_name_is_explained_never_a_panic() {
    // The agent lists its tools on every run: the declaration is there, without the field.
    let declaration = ShipStatus.declaration();
    assert_eq!(declaration["name"], "ship_status");
    assert!(properties(&declaration["parameters"]).is_empty(), "{declaration}");

    // Its calls say what is wrong and what to write, whatever the model sends.
    let refused = ShipStatus.execute(call("alice", "call-1"), json!({"parcelId": "P1"})).await.unwrap_err();
    assert_eq!(refused.code, "INVALID_KEY");
    let shown: Value = serde_json::from_str(&refused.message).unwrap();
    let message = shown["error"]["message"].as_str().unwrap();
    for part in ["ship_status cannot find the JSON name of a key field of ship", "parcel:", "parcelId", "json_names ="]
    {
        assert!(message.contains(part), "{part}: {message}");
    }

    // The tool itself works; its answers name such a field by its Rust name (documented).
    let first = Ship.execute(call("alice", "call-2"), json!({"parcelId": "P1", "kg": 2.0})).await.unwrap();
    assert_eq!(first["shipped"], "P1");
    let conflict = Ship.execute(call("alice", "call-3"), json!({"parcelId": "P1", "kg": 3.0})).await.unwrap_err();
    let shown: Value = serde_json::from_str(&conflict.message).unwrap();
    assert_eq!(shown["error"]["differences"][0]["field"], "weight", "{shown}");
}
