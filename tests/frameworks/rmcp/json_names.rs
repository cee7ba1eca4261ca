//! Key and compared fields as the model names them, through rmcp's own client over
//! streamable HTTP: argument structs whose JSON names serde's `rename_all` (every rule) or
//! `rename` changed. The tool list builds (no panic), each status tool takes the names the
//! model sees, and every answer names a field as the model sent it.

use std::sync::Arc;

use idem::{MemoryStore, idempotent};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};

/// Serves `server` over streamable HTTP on 127.0.0.1 and connects rmcp's client to it.
async fn connect(server: Renamed) -> RunningService<RoleClient, ()> {
    let mcp = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, axum::Router::new().route_service("/mcp", mcp)).await });
    ().serve(StreamableHttpClientTransport::from_uri(url)).await.expect("the client connects")
}

/// The server's tools, as a client lists them for a model. Bounded: a server whose tool
/// list cannot be built (a panic in its task) never answers.
async fn tools(client: &RunningService<RoleClient, ()>) -> Vec<rmcp::model::Tool> {
    let listed = tokio::time::timeout(std::time::Duration::from_secs(20), client.list_all_tools()).await;
    listed.expect("the tool list within 20 s").expect("the tool list builds")
}

/// Calls a tool as a model's client does; every idem answer is a tool result.
async fn call(client: &RunningService<RoleClient, ()>, tool: &str, args: Value) -> CallToolResult {
    let args = args.as_object().expect("arguments are an object").clone();
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args))
        .await
        .expect("a tool result, not a protocol error")
}

/// The structured error of a tool result.
fn error(result: &CallToolResult) -> &Value {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    &result.structured_content.as_ref().expect("structured content")["error"]
}

fn sorted(names: impl IntoIterator<Item = impl ToString>) -> Vec<String> {
    let mut names: Vec<String> = names.into_iter().map(|name| name.to_string()).collect();
    names.sort();
    names
}

/// The server of every test here, `Renamed`: for each serde `rename_all` rule, an argument
/// struct (the same three fields, named by the rule) and a tool with its status tool; then
/// the tools given after the rules, whose fields `#[serde(rename)]` renames. One server type
/// keeps rmcp's streamable HTTP service compiled once in this test binary, not once per rule.
/// The rules' tools are written in this macro and the others where it is called, two
/// hygiene contexts in one impl block: `#[idem::status_tools]` must give each status tool
/// its own tool's `self`, or the block does not compile.
macro_rules! renamed_server {
    ($($send:ident($args:ident) = $rule:literal),* $(,)?; $($other_tools:tt)*) => {
        $(
            #[derive(Deserialize, schemars::JsonSchema)]
            #[schemars(crate = "rmcp::schemars")]
            #[serde(rename_all = $rule)]
            struct $args {
                /// The customer to bill.
                customer_id: String,
                /// The billing period.
                billing_period: String,
                amount_eur: f64,
            }
        )*

        #[derive(Clone, Default)]
        struct Renamed {
            store: Arc<MemoryStore>,
        }

        #[idem::status_tools]
        #[tool_router]
        impl Renamed {
            $(
                /// Send the invoice of one customer and period.
                #[idempotent(key = "invoice:<req.customer_id>:<req.billing_period>", compare = [req.amount_eur],
                    namespace = $rule, store = *self.store)]
                #[tool]
                async fn $send(&self, Parameters(req): Parameters<$args>) -> Result<CallToolResult, ErrorData> {
                    Ok(CallToolResult::structured(json!({"billed": req.customer_id, "amount": req.amount_eur})))
                }
            )*

            $($other_tools)*
        }

        #[tool_handler]
        impl ServerHandler for Renamed {}
    };
}

renamed_server! {
    send_lower(LowerArgs) = "lowercase",
    send_upper(UpperArgs) = "UPPERCASE",
    send_pascal(PascalArgs) = "PascalCase",
    send_camel(CamelArgs) = "camelCase",
    send_snake(SnakeArgs) = "snake_case",
    send_screaming(ScreamingArgs) = "SCREAMING_SNAKE_CASE",
    send_kebab(KebabArgs) = "kebab-case",
    send_shouting_kebab(ShoutingKebabArgs) = "SCREAMING-KEBAB-CASE";

    /// Refund an order: a nested key field, and fields `#[serde(rename)]` renames, named in
    /// `json_names`.
    #[idempotent(key = "refund:<req.billing_customer.customer_ref>:<req.order_number>",
        compare = [req.amount_eur, req.billing_customer.vat_rate],
        json_names = [req.order_number = "orderNo", req.amount_eur = "amt"], store = *self.store)]
    #[tool]
    async fn refund(&self, Parameters(req): Parameters<Refund>) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::structured(json!({"refunded": req.order_number, "amount": req.amount_eur})))
    }

    #[doc = include_str!("cancel.md")]
    #[idempotent(key = "cancel:<req.parcel>", json_names = [req.parcel = "parcelId"], store = *self.store)]
    #[tool]
    async fn cancel(&self, Parameters(req): Parameters<Ship>) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::structured(json!({"cancelled": req.parcel})))
    }

    #[idempotent(key = "hold:<req.parcel>", json_names = [req.parcel = "parcelId"], describe = off, store = *self.store)]
    #[tool]
    async fn hold(&self, Parameters(req): Parameters<Ship>) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::structured(json!({"held": req.parcel})))
    }

    /// Ship a parcel: a key field renamed with `#[serde(rename)]`, not named in `json_names`.
    #[idempotent(key = "ship:<req.parcel>", compare = [req.weight], store = *self.store)]
    #[tool]
    async fn ship(&self, Parameters(req): Parameters<Ship>) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::structured(json!({"shipped": req.parcel, "kg": req.weight})))
    }
}

/// What one rule's tool (`send`) and its status tool must show and answer, with the names
/// the rule gives the three fields.
async fn check_rule(client: &RunningService<RoleClient, ()>, send: &str, [customer, period, amount]: [&str; 3]) {
    let status_tool = format!("{send}_status");
    let tools = tools(client).await;
    let status = tools.iter().find(|tool| tool.name == status_tool).expect("a status tool");
    let status = serde_json::to_value(status).unwrap();
    let schema = &status["inputSchema"];
    assert_eq!(
        sorted(schema["properties"].as_object().unwrap().keys()),
        sorted([customer, period]),
        "{send}: {status}"
    );
    assert_eq!(
        sorted(schema["required"].as_array().unwrap().iter().flat_map(Value::as_str)),
        sorted([customer, period])
    );
    assert_eq!(schema["properties"][customer]["description"], "The customer to bill.", "{send}");
    let description = status["description"].as_str().unwrap();
    assert!(description.contains(&format!("key fields: {customer}, {period}.")), "{send}: {description}");
    // The tool's own description names the fields as the model sends them too.
    let tool = tools.iter().find(|tool| tool.name == send).expect("the tool");
    let description = tool.description.as_deref().unwrap_or_default();
    for said in [
        format!("a repeat for the same {customer} and {period} never runs it twice"),
        format!("A repeat with a different {amount} is refused with CONFLICT"),
        format!("call {status_tool} with the same {customer} and {period} instead"),
    ] {
        assert!(description.contains(&said), "{send}: {said:?} in {description}");
    }

    let sent = call(client, send, json!({customer: "acme", period: "2026-10", amount: 120.0})).await;
    assert_eq!(sent.is_error, Some(false), "{send}: {sent:?}");
    let read = call(client, &status_tool, json!({customer: "acme", period: "2026-10"})).await;
    let read = read.structured_content.expect("a status");
    assert_eq!((&read["status"], &read["result"]["billed"]), (&json!("completed"), &json!("acme")), "{send}: {read}");

    let changed = call(client, send, json!({customer: "acme", period: "2026-10", amount: 150.0})).await;
    let conflict = error(&changed);
    assert_eq!(conflict["code"], "CONFLICT", "{send}");
    let message = conflict["message"].as_str().unwrap();
    assert!(message.ends_with(&format!("{amount} was 120.0, now 150.0")), "{send}: {message}");
    assert_eq!(conflict["differences"][0]["field"], amount, "{send}: {conflict}");

    let missing = call(client, &status_tool, json!({customer: "acme"})).await;
    let missing = error(&missing)["message"].as_str().unwrap().to_owned();
    assert!(missing.contains(&format!("{period} is missing")), "{send}: {missing}");
    let empty = call(client, send, json!({customer: " ", period: "2026-10", amount: 1.0})).await;
    let empty = error(&empty)["message"].as_str().unwrap().to_owned();
    assert!(empty.contains(&format!("key field {customer} is")), "{send}: {empty}");
}

#[tokio::test]
async fn every_rename_all_rule_gives_status_tools_and_answers_the_models_names() {
    let client = connect(Renamed::default()).await;
    let snake = ["customer_id", "billing_period", "amount_eur"];
    let screaming = ["CUSTOMER_ID", "BILLING_PERIOD", "AMOUNT_EUR"];
    check_rule(&client, "send_lower", snake).await;
    check_rule(&client, "send_upper", screaming).await;
    check_rule(&client, "send_pascal", ["CustomerId", "BillingPeriod", "AmountEur"]).await;
    check_rule(&client, "send_camel", ["customerId", "billingPeriod", "amountEur"]).await;
    check_rule(&client, "send_snake", snake).await;
    check_rule(&client, "send_screaming", screaming).await;
    check_rule(&client, "send_kebab", ["customer-id", "billing-period", "amount-eur"]).await;
    check_rule(&client, "send_shouting_kebab", ["CUSTOMER-ID", "BILLING-PERIOD", "AMOUNT-EUR"]).await;
    client.cancel().await.unwrap();
}

#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "camelCase")]
struct Customer {
    customer_ref: String,
    vat_rate: f64,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "camelCase")]
struct Refund {
    billing_customer: Customer,
    /// The order to refund.
    #[serde(rename = "orderNo")]
    order_number: u32,
    #[serde(rename = "amt")]
    amount_eur: f64,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct Ship {
    #[serde(rename = "parcelId")]
    parcel: String,
    #[serde(rename = "kg")]
    weight: f64,
}

#[tokio::test]
async fn renamed_and_nested_fields_are_found_by_json_names_and_the_schema() {
    let client = connect(Renamed::default()).await;
    let tools = tools(&client).await;
    let status = serde_json::to_value(tools.iter().find(|tool| tool.name == "refund_status").unwrap()).unwrap();
    let properties = status["inputSchema"]["properties"].as_object().unwrap();
    assert_eq!(sorted(properties.keys()), ["billingCustomer", "orderNo"], "{status}");
    assert_eq!(properties["orderNo"]["description"], "The order to refund.");
    assert!(status["description"].as_str().unwrap().contains("key fields: billingCustomer, orderNo."), "{status}");
    // A doc comment idem cannot read (`include_str!`) comes first, as rmcp would show it.
    let cancel = tools.iter().find(|tool| tool.name == "cancel").unwrap().description.as_deref().unwrap_or_default();
    assert!(
        cancel.starts_with("Cancel a parcel before it ships.\n\nSafe to retry: a repeat for the same parcelId"),
        "{cancel}"
    );
    // `describe = off` and no doc comment: no description at all, as rmcp gives one.
    let hold = tools.iter().find(|tool| tool.name == "hold").unwrap();
    assert_eq!((hold.description.as_deref(), Renamed::hold_description().as_str()), (None, ""), "{hold:?}");
    let refund = tools.iter().find(|tool| tool.name == "refund").unwrap().description.as_deref().unwrap_or_default();
    for said in [
        "a repeat for the same billingCustomer.customerRef and orderNo never runs it twice",
        "A repeat with a different amt or billingCustomer.vatRate is refused",
    ] {
        assert!(refund.contains(said), "{said:?} in {refund}");
    }

    let args = json!({"billingCustomer": {"customerRef": "C-1", "vatRate": 0.2}, "orderNo": 7, "amt": 20.0});
    assert_eq!(call(&client, "refund", args).await.is_error, Some(false));
    let key = json!({"billingCustomer": {"customerRef": "c-1", "vatRate": 0.2}, "orderNo": 7});
    let read = call(&client, "refund_status", key).await.structured_content.unwrap();
    assert_eq!((&read["status"], &read["result"]["refunded"]), (&json!("completed"), &json!(7)), "{read}");

    let changed = json!({"billingCustomer": {"customerRef": "C-1", "vatRate": 0.25}, "orderNo": 7, "amt": 30.0});
    let conflict = call(&client, "refund", changed).await;
    let conflict = error(&conflict);
    let fields: Vec<&Value> = conflict["differences"].as_array().unwrap().iter().map(|d| &d["field"]).collect();
    assert_eq!(fields, [&json!("amt"), &json!("billingCustomer.vatRate")], "{conflict}");
    let message = conflict["message"].as_str().unwrap();
    assert!(message.contains("amt was 20.0, now 30.0; billingCustomer.vatRate was 0.2, now 0.25"), "{message}");
    let empty = json!({"billingCustomer": {"customerRef": " ", "vatRate": 0.2}, "orderNo": 8, "amt": 1.0});
    let empty = call(&client, "refund", empty).await;
    let empty = error(&empty)["message"].as_str().unwrap().to_owned();
    assert!(empty.contains("key field billingCustomer.customerRef is"), "{empty}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_rename_the_attribute_does_not_name_is_explained_never_a_panic() {
    let client = connect(Renamed::default()).await;
    // The tool list builds: the status tool is there, without the field it cannot find.
    let tools = tools(&client).await;
    let status = serde_json::to_value(tools.iter().find(|tool| tool.name == "ship_status").unwrap()).unwrap();
    assert!(status["inputSchema"]["properties"].as_object().unwrap().is_empty(), "{status}");

    let refused = call(&client, "ship_status", json!({"parcelId": "P1"})).await;
    let refused = error(&refused);
    assert_eq!(refused["code"], "INVALID_KEY");
    let message = refused["message"].as_str().unwrap();
    for part in ["ship_status cannot find the JSON name of a key field of ship", "parcel:", "parcelId", "json_names ="]
    {
        assert!(message.contains(part), "{part}: {message}");
    }

    // The tool itself works; its answers name such a field by its Rust name (documented).
    assert_eq!(call(&client, "ship", json!({"parcelId": "P1", "kg": 2.0})).await.is_error, Some(false));
    let conflict = call(&client, "ship", json!({"parcelId": "P1", "kg": 3.0})).await;
    assert_eq!(error(&conflict)["differences"][0]["field"], "weight");
    client.cancel().await.unwrap();
}
