//! A card that lists only the official A2A faces is a plain A2A v1.0 card: it validates against the
//! A2A v1.0.0 JSON Schema with no member the schema does not name. Checked on the card of
//! `accord serve --agent conformance` and on the demo agent's card with the Lucid face off, both
//! fetched over HTTP from servers on loopback ports.
//!
//! `tests/data/a2a-v1.0.0.schema.json` is the specification's JSON Schema bundle, generated from
//! its proto (`lf.a2a.v1`), copied unchanged.

use std::sync::Arc;
use std::time::Duration;

use accord_engine::task::{MemoryStore, RuntimeConfig, TaskRuntime};
use accord_server::{A2aConfig, AgentRouterExt, ServerConfig};
use accord_test_support::TestServer;
use accord_types::a2a::Validate;
use serde_json::{Map, Value, json};

mod support;
use support::Served;
const SCHEMA: &str = include_str!("data/a2a-v1.0.0.schema.json");

/// The bundle's `AgentCard` schema, made self-contained and closed: each definition (keyed by its
/// title, e.g. "Agent Card") goes under `$defs` by its proto name (`AgentCard`), the bundle's
/// file references (`lf.a2a.v1.AgentCard.jsonschema.json`) become `#/$defs/…` references, and
/// every object schema that lists `properties` without saying anything about other members
/// refuses them, so that an extra member anywhere fails.
fn card_validator() -> jsonschema::Validator {
    let bundle: Value = serde_json::from_str(SCHEMA).expect("the schema is JSON");
    let mut defs = Map::new();
    for (title, definition) in bundle["definitions"].as_object().expect("definitions") {
        let mut definition = definition.clone();
        // Only a resource root may name a dialect; the root below names it for all.
        definition.as_object_mut().expect("a schema object").remove("$schema");
        defs.insert(title.replace(' ', ""), definition);
    }
    assert!(defs.contains_key("AgentCard"), "{:?}", defs.keys());
    let mut schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": "#/$defs/AgentCard",
        "$defs": defs,
    });
    localize_and_close(&mut schema);
    jsonschema::validator_for(&schema).expect("the schema compiles")
}

fn localize_and_close(schema: &mut Value) {
    match schema {
        Value::Object(object) => {
            if let Some(Value::String(reference)) = object.get_mut("$ref")
                && !reference.starts_with('#')
            {
                let name = reference
                    .strip_suffix(".jsonschema.json")
                    .and_then(|name| name.rsplit('.').next())
                    .unwrap_or_else(|| panic!("an unexpected reference {reference}"));
                *reference = format!("#/$defs/{name}");
            }
            if object.contains_key("properties") && !object.contains_key("additionalProperties") {
                object.insert("additionalProperties".into(), Value::Bool(false));
            }
            object.values_mut().for_each(localize_and_close);
        }
        Value::Array(items) => items.iter_mut().for_each(localize_and_close),
        _ => {}
    }
}

/// Every way `card` breaks the schema, one line each; empty when it is valid. The proto's
/// `REQUIRED` fields are not in the schema bundle, so the strict A2A card type checks them.
fn problems(validator: &jsonschema::Validator, card: &Value) -> Vec<String> {
    let mut problems: Vec<String> = validator
        .iter_errors(card)
        .map(|error| {
            let at = error.instance_path().to_string();
            format!("{}: {error}", if at.is_empty() { "/" } else { &at })
        })
        .collect();
    match serde_json::from_value::<accord_types::a2a::AgentCard>(card.clone()) {
        Ok(parsed) => {
            if let Err(error) = parsed.validate() {
                problems.push(error.to_string());
            }
        }
        Err(error) => problems.push(format!("not an A2A card: {error}")),
    }
    problems
}

async fn fetch_card(base: &str) -> Value {
    let response = reqwest::get(format!("{base}/.well-known/agent-card.json")).await.expect("the card answers");
    assert_eq!(response.status(), 200);
    response.json().await.expect("JSON")
}

#[tokio::test]
async fn the_conformance_agents_card_is_a_plain_a2a_card() {
    let validator = card_validator();
    let served = Served::conformance();
    let card = tokio::time::timeout(Duration::from_secs(20), fetch_card(&served.url)).await.expect("in time");
    assert_eq!(problems(&validator, &card), Vec::<String>::new(), "{card:#}");

    // Only the official faces are listed, and nothing the kit would not know.
    let bindings: Vec<&str> = card["supportedInterfaces"]
        .as_array()
        .expect("interfaces")
        .iter()
        .filter_map(|interface| interface["protocolBinding"].as_str())
        .collect();
    assert_eq!(bindings, ["JSONRPC", "HTTP+JSON", "GRPC"]);
    let grpc = &card["supportedInterfaces"][2]["url"];
    let port = served.url.rsplit(':').next().expect("a port");
    assert_eq!(grpc, &serde_json::json!(format!("127.0.0.1:{port}")), "gRPC on the HTTP port: {card}");
    assert!(card.get("entrypoints").is_none() && card.get("url").is_none(), "{card}");
    let http = reqwest::Client::new();
    let entrypoints = http.get(format!("{}/entrypoints", served.url)).send().await.expect("response");
    assert_eq!(entrypoints.status(), 404, "the Lucid face is not served");

    // The check itself refuses an extra member, at the top and deep inside.
    let mut extra = card.clone();
    extra["protocolVersion"] = json!("1.0");
    assert!(problems(&validator, &extra).iter().any(|problem| problem.contains("protocolVersion")));
    let mut nested = card.clone();
    nested["skills"][0]["x_input_schema"] = json!({});
    assert!(problems(&validator, &nested).iter().any(|problem| problem.contains("/skills/0")));
    let mut missing = card;
    missing["skills"][0].as_object_mut().expect("skill").remove("tags");
    assert!(!problems(&validator, &missing).is_empty(), "required fields are checked too");
}

#[tokio::test]
async fn the_demo_agents_card_without_the_lucid_face_is_a_plain_a2a_card() {
    let validator = card_validator();
    let agent = accord_cli::demo::agent().expect("demo agent");
    let runtime = TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::default()), RuntimeConfig::default());
    let without_lucid = ServerConfig::default().tasks(runtime.clone()).lucid(false);
    // Only the 1.0 dialect: the 0.3 one brings the 0.3 members, which the 1.0 schema refuses.
    let only_v1 = without_lucid.clone().a2a(Some(A2aConfig { v03: false, ..A2aConfig::default() }));
    let server = TestServer::start(agent.router_with(only_v1)).await;
    let card = fetch_card(&server.origin).await;
    assert_eq!(problems(&validator, &card), Vec::<String>::new(), "{card:#}");

    // With 0.3 beside 1.0, the 0.3 members are all the schema refuses.
    let with_v03 = TestServer::start(agent.router_with(without_lucid)).await;
    let v03_card = fetch_card(&with_v03.origin).await;
    let v03_problems = problems(&validator, &v03_card);
    assert!(!v03_problems.is_empty(), "{v03_card:#}");
    let legacy = [
        "url",
        "preferredTransport",
        "protocolVersion",
        "additionalInterfaces",
        "supportsAuthenticatedExtendedCard",
        "stateTransitionHistory",
    ];
    for problem in &v03_problems {
        assert!(legacy.iter().any(|member| problem.contains(member)), "{problem}");
    }

    // With the Lucid face on, its members are exactly what the schema refuses.
    let with_lucid = TestServer::start(agent.router_with(ServerConfig::default().tasks(runtime.clone()))).await;
    let lucid_card = fetch_card(&with_lucid.origin).await;
    let lucid_problems = problems(&validator, &lucid_card);
    assert!(lucid_problems.iter().any(|problem| problem.contains("entrypoints")), "{lucid_problems:?}");
    runtime.close().await;
}
