//! The card routes, health and the entrypoint list, over real HTTP.

use accord_client::{Client, ClientError};
use accord_engine::{Agent, Skill, SkillError};
use accord_server::AgentRouterExt;
use accord_test_support::TestServer;
use serde_json::{Value, json};

fn agent() -> Agent {
    Agent::builder("card-test")
        .version("2.3.4")
        .description("an agent for card tests")
        .card_field("provider", json!({"organization": "Accord", "url": "https://accord.example"}))
        .card_field("x-custom", json!([1, 2]))
        .skill(Skill::builder("echo").description("Echo").tag("demo").input_schema(json!({"type": "object"})).handler(
            |run: accord_engine::Run| async move {
                Ok(accord_engine::Outcome::Completed(accord_engine::Completion::new(run.input().clone())))
            },
        ))
        .skill(Skill::builder("quiet").invoke(|_run: accord_engine::Run| async move {
            Err::<accord_engine::Outcome, _>(SkillError::internal("never called here"))
        }))
        .build()
        .expect("agent")
}

async fn get(url: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut request = reqwest::Client::new().get(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.expect("response")
}

#[tokio::test]
async fn both_card_paths_serve_the_same_card_with_caching_headers() {
    let server = TestServer::agent(&agent()).await;
    let card = get(&server.url("/.well-known/agent-card.json"), &[]).await;
    assert_eq!(card.status(), 200);
    assert_eq!(card.headers()["content-type"], "application/json");
    assert_eq!(card.headers()["cache-control"], "public, max-age=300");
    let etag = card.headers()["etag"].to_str().expect("etag").to_owned();
    assert!(etag.starts_with('"') && etag.ends_with('"') && etag.len() == 34, "{etag}");
    let last_modified = card.headers()["last-modified"].to_str().expect("date").to_owned();
    assert!(last_modified.ends_with(" GMT") && last_modified.len() == 29, "an HTTP-date: {last_modified}");
    let card: Value = card.json().await.expect("json");
    let legacy: Value = get(&server.url("/.well-known/agent.json"), &[]).await.json().await.expect("json");
    assert_eq!(card, legacy);

    let base = format!("{}/", server.origin);
    assert_eq!(card["name"], "card-test");
    assert_eq!(card["version"], "2.3.4");
    assert_eq!(
        card["supportedInterfaces"],
        json!([{"url": base, "protocolBinding": "urn:accord:binding:lucid-http", "protocolVersion": "1.0"}])
    );
    // No v0.3 face is listed, so none of the v0.3 members is written.
    for member in ["url", "protocolVersion", "supportsAuthenticatedExtendedCard", "preferredTransport"] {
        assert!(card.get(member).is_none(), "{member}: {card}");
    }
    assert!(card["capabilities"].get("stateTransitionHistory").is_none());
    assert_eq!(card["capabilities"]["streaming"], true);
    assert_eq!(card["skills"][0]["id"], "echo");
    assert_eq!(card["skills"][0]["tags"], json!(["demo"]));
    // Skills carry only the A2A members; schemas are the params of Accord's skill extension.
    let skill_members = |index: usize| {
        let mut names: Vec<String> = card["skills"][index].as_object().expect("skill").keys().cloned().collect();
        names.sort();
        names
    };
    assert_eq!(skill_members(0), ["description", "id", "inputModes", "name", "outputModes", "tags"]);
    assert_eq!(skill_members(1), ["description", "id", "inputModes", "name", "outputModes", "tags"]);
    let extension = skill_extension(&card);
    assert!(extension.get("required").is_none(), "informational: {extension}");
    assert_eq!(extension["params"]["skills"]["echo"]["inputSchema"], json!({"type": "object"}));
    assert_eq!(extension["params"]["skills"]["quiet"]["inputSchema"], json!({}), "no schema: anything goes");
    assert!(extension["params"]["skills"]["echo"].get("pricing").is_none(), "free");
    // The Lucid face is on: its entrypoints say which skills stream, with their schemas too.
    assert_eq!(card["entrypoints"]["echo"]["streaming"], true);
    assert_eq!(card["entrypoints"]["echo"]["input_schema"], json!({"type": "object"}));
    assert_eq!(card["entrypoints"]["quiet"]["streaming"], false);
    assert_eq!(card["provider"]["organization"], "Accord", "fields added by the agent are published");
    assert_eq!(card["x-custom"], json!([1, 2]));

    // Accord's client reads schemas from the extension.
    let fetched = Client::new().fetch_card(&server.origin).await.expect("card");
    assert_eq!(fetched.skill_input_schema("echo"), Some(&json!({"type": "object"})));
    assert_eq!(fetched.skill_output_schema("echo"), None);
}

/// Accord's skill extension in a card.
fn skill_extension(card: &Value) -> &Value {
    card["capabilities"]["extensions"]
        .as_array()
        .and_then(|extensions| extensions.iter().find(|e| e["uri"] == accord_types::card::SKILL_EXTENSION))
        .unwrap_or_else(|| panic!("no skill extension: {card}"))
}

#[tokio::test]
async fn if_none_match_gives_304_and_a_changed_origin_a_new_tag() {
    let server = TestServer::agent(&agent()).await;
    let url = server.url("/.well-known/agent-card.json");
    let first = get(&url, &[]).await;
    let etag = first.headers()["etag"].to_str().expect("etag").to_owned();
    let again = get(&url, &[("if-none-match", &etag)]).await;
    assert_eq!(again.status(), 304);
    assert_eq!(again.headers()["etag"].to_str().expect("etag"), etag);
    assert_eq!(again.headers()["cache-control"], "public, max-age=300");
    assert!(again.bytes().await.expect("body").is_empty());
    let weak = get(&url, &[("if-none-match", &format!("\"other\", W/{etag}"))]).await;
    assert_eq!(weak.status(), 304);
    let stale = get(&url, &[("if-none-match", "\"stale\"")]).await;
    assert_eq!(stale.status(), 200);
    let proxied = get(&url, &[("x-forwarded-host", "agent.example.com"), ("if-none-match", &etag)]).await;
    assert_eq!(proxied.status(), 200, "another origin is another card");
    assert_ne!(proxied.headers()["etag"].to_str().expect("etag"), etag);
}

#[tokio::test]
async fn if_modified_since_gives_304_unless_an_entity_tag_is_asked_for() {
    let server = TestServer::agent(&agent()).await;
    let url = server.url("/.well-known/agent-card.json");
    let first = get(&url, &[]).await;
    let last_modified = first.headers()["last-modified"].to_str().expect("date").to_owned();
    let etag = first.headers()["etag"].to_str().expect("etag").to_owned();

    let unchanged = get(&url, &[("if-modified-since", &last_modified)]).await;
    assert_eq!(unchanged.status(), 304);
    assert_eq!(unchanged.headers()["last-modified"].to_str().expect("date"), last_modified);
    assert_eq!(unchanged.headers()["etag"].to_str().expect("etag"), etag);
    assert!(unchanged.bytes().await.expect("body").is_empty());
    let later = get(&url, &[("if-modified-since", "Fri, 01 Jan 2100 00:00:00 GMT")]).await;
    assert_eq!(later.status(), 304);

    let earlier = get(&url, &[("if-modified-since", "Sun, 06 Nov 1994 08:49:37 GMT")]).await;
    assert_eq!(earlier.status(), 200, "built after that date");
    let invalid = get(&url, &[("if-modified-since", "yesterday")]).await;
    assert_eq!(invalid.status(), 200, "an invalid date is ignored");
    // If-None-Match wins over If-Modified-Since (RFC 9110 §13.1.3).
    let tagged = get(&url, &[("if-none-match", "\"stale\""), ("if-modified-since", &last_modified)]).await;
    assert_eq!(tagged.status(), 200);
}

#[tokio::test]
async fn without_the_lucid_face_the_card_has_no_lucid_members() {
    use std::sync::Arc;

    use accord_engine::task::{MemoryStore, RuntimeConfig, TaskRuntime};
    use accord_server::ServerConfig;

    let agent = agent();
    let runtime = TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::default()), RuntimeConfig::default());
    let server = TestServer::start(agent.router_with(ServerConfig::default().tasks(runtime).lucid(false))).await;
    let card: Value = get(&server.url("/.well-known/agent-card.json"), &[]).await.json().await.expect("json");
    let bindings: Vec<&str> = card["supportedInterfaces"]
        .as_array()
        .expect("interfaces")
        .iter()
        .filter_map(|interface| interface["protocolBinding"].as_str())
        .collect();
    // The second JSONRPC and HTTP+JSON entries are the same bindings in the 0.3 dialect.
    assert_eq!(bindings, ["JSONRPC", "HTTP+JSON", "JSONRPC", "HTTP+JSON", "urn:accord:binding:jsonrpc-tasks"]);
    assert!(card.get("entrypoints").is_none() && card.get("payments").is_none(), "{card}");
    assert_eq!(skill_extension(&card)["params"]["skills"]["echo"]["inputSchema"], json!({"type": "object"}));

    // The Lucid routes are gone; health and the other faces stay.
    assert_eq!(get(&server.url("/health"), &[]).await.status(), 200);
    assert_eq!(get(&server.url("/entrypoints"), &[]).await.status(), 404);
    let http = reqwest::Client::new();
    let invoke = http.post(server.url("/entrypoints/echo/invoke")).json(&json!({})).send().await.expect("response");
    assert_eq!(invoke.status(), 404);
    let lucid_task = http.post(server.url("/tasks")).json(&json!({})).send().await.expect("response");
    assert_eq!(lucid_task.status(), 404);
    let rpc = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "{}"}]}}});
    let sent =
        http.post(server.url("/a2a/jsonrpc")).header("a2a-version", "1.0").json(&rpc).send().await.expect("response");
    let sent: Value = sent.json().await.expect("json");
    assert_eq!(sent["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
}

#[tokio::test]
async fn forwarded_headers_and_the_base_path_shape_the_card_urls() {
    let app = axum::Router::new().nest("/api/agent", agent().router());
    let server = TestServer::start(app).await;
    let url = server.url("/api/agent/.well-known/agent-card.json");

    let direct: Value = get(&url, &[]).await.json().await.expect("json");
    assert_eq!(direct["supportedInterfaces"][0]["url"], format!("{}/api/agent/", server.origin));

    let proxied: Value = get(&url, &[("x-forwarded-proto", "https"), ("x-forwarded-host", "agent.example.com")])
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(proxied["supportedInterfaces"][0]["url"], "https://agent.example.com/api/agent/");

    let bad_proto: Value = get(&url, &[("x-forwarded-proto", "ftp"), ("x-forwarded-host", "agent.example.com")])
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(bad_proto["supportedInterfaces"][0]["url"], "http://agent.example.com/api/agent/");

    let loopback: Value = get(&url, &[("x-forwarded-proto", "https"), ("x-forwarded-host", "localhost:9999")])
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(
        loopback["supportedInterfaces"][0]["url"],
        format!("{}/api/agent/", server.origin),
        "a loopback forwarded host is ignored"
    );

    // The client follows the base path for discovery and for calls.
    let client = Client::new();
    let card = client.fetch_card(&format!("{}/api/agent", server.origin)).await.expect("card");
    let answer = client.invoke(&card, "echo", json!({"a": 1}), Default::default()).await.expect("invoke");
    assert_eq!(answer.output, Some(json!({"a": 1})));
}

#[tokio::test]
async fn health_and_entrypoints() {
    let server = TestServer::agent(&agent()).await;
    let health: Value = get(&server.url("/health"), &[]).await.json().await.expect("json");
    assert_eq!(health, json!({"ok": true, "version": "2.3.4"}));
    let entrypoints: Value = get(&server.url("/entrypoints"), &[]).await.json().await.expect("json");
    assert_eq!(
        entrypoints,
        json!({"items": [
            {"key": "echo", "description": "Echo", "streaming": true},
            {"key": "quiet", "streaming": false}
        ]})
    );
}

#[tokio::test]
async fn the_router_merges_with_user_routes() {
    let app = axum::Router::new().route("/mine", axum::routing::get(|| async { "mine" })).merge(agent().router());
    let server = TestServer::start(app).await;
    assert_eq!(get(&server.url("/mine"), &[]).await.text().await.expect("text"), "mine");
    assert_eq!(get(&server.url("/health"), &[]).await.status(), 200);
}

#[tokio::test]
async fn fetch_card_tries_the_url_then_the_well_known_paths() {
    // Only the legacy path and a custom root exist here: the client must skip 404s to find it.
    let legacy_only =
        axum::Router::new().route("/", axum::routing::get(|| async { "<html>landing page</html>" })).route(
            "/.well-known/agent.json",
            axum::routing::get(|| async { axum::Json(json!({"name": "legacy", "x": 1})) }),
        );
    let server = TestServer::start(legacy_only).await;
    let card = Client::new().fetch_card(&server.origin).await.expect("card");
    assert_eq!(card.name, "legacy");
    assert_eq!(card.extra.get("x"), Some(&json!(1)), "unknown fields are kept");

    // The card URL itself works too.
    let server = TestServer::agent(&agent()).await;
    let card = Client::new().fetch_card(&server.url("/.well-known/agent-card.json")).await.expect("card");
    assert_eq!(card.name, "card-test");

    // Nothing anywhere: CardNotFound.
    let empty = TestServer::start(axum::Router::new()).await;
    let error = Client::new().fetch_card(&empty.origin).await.expect_err("no card");
    assert!(matches!(error, ClientError::CardNotFound { .. }), "{error:?}");

    // A server error stops the search with the status.
    let broken = axum::Router::new().route(
        "/.well-known/agent-card.json",
        axum::routing::get(|| async { (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "boom") }),
    );
    let broken = TestServer::start(broken).await;
    let error = Client::new().fetch_card(&broken.origin).await.expect_err("error");
    assert_eq!(error.status(), Some(500));

    // Nobody listening: a transport error naming the call.
    let gone = TestServer::start(axum::Router::new()).await;
    let origin = gone.origin.clone();
    gone.stop().await;
    let error = Client::new().fetch_card(&origin).await.expect_err("refused");
    assert!(
        matches!(error, ClientError::Transport { operation: accord_client::Operation::FetchCard, .. }),
        "{error:?}"
    );
}

/// One card, several interfaces: the Lucid rule (the first binding containing `HTTP`) lands on the
/// Lucid profile; official clients, choosing by exact binding name, land on their own bindings;
/// every kind of client then works through the interface it chose.
#[tokio::test]
async fn each_kind_of_client_finds_its_own_interface_on_one_card() {
    use std::sync::Arc;

    use accord_client::a2a::{A2aClient, A2aClientOptions, Binding, choose_interface, parse_card, user_text_message};
    use accord_engine::task::{MemoryStore, RuntimeConfig, TaskRuntime};
    use accord_server::ServerConfig;

    let agent = agent();
    let runtime = TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::default()), RuntimeConfig::default());
    let server = TestServer::start(agent.router_with(ServerConfig::default().tasks(runtime))).await;
    let base = format!("{}/", server.origin);

    let card = Client::new().fetch_card(&server.origin).await.expect("card");
    let bindings: Vec<&str> =
        card.supported_interfaces.iter().map(|interface| interface.protocol_binding.as_str()).collect();
    assert_eq!(
        bindings,
        [
            "urn:accord:binding:lucid-http",
            "JSONRPC",
            "HTTP+JSON",
            "JSONRPC",
            "HTTP+JSON",
            "urn:accord:binding:jsonrpc-tasks"
        ]
    );
    // The Lucid rule takes the Lucid profile, never the official REST binding (whose `/tasks`
    // routes differ).
    assert_eq!(card.http_base_url(), Some(base.as_str()));
    let echoed = Client::new().invoke(&card, "echo", json!({"x": 1}), Default::default()).await.expect("invoke");
    assert_eq!(echoed.output, Some(json!({"x": 1})));

    // Official clients pick by exact name and skip what they do not know.
    let raw: Value = get(&server.url("/.well-known/agent-card.json"), &[]).await.json().await.expect("json");
    let official = parse_card(raw).expect("a v1.0 card");
    for (binding, path) in [("JSONRPC", "a2a/jsonrpc"), ("HTTP+JSON", "a2a/rest")] {
        let (chosen, interface) = choose_interface(&official, &[binding.to_owned()]).expect("an interface");
        assert_eq!(chosen, Binding::from_name(binding).expect("known binding"));
        assert_eq!(interface.url, format!("{base}{path}"));
        let client =
            A2aClient::from_card(official.clone(), A2aClientOptions::with_bindings([binding])).expect("client");
        let request = accord_types::a2a::SendMessageRequest {
            tenant: None,
            message: user_text_message(r#"{"y": 2}"#),
            configuration: None,
            metadata: None,
        };
        let answer = client.send_message(request).await.expect("send");
        let accord_types::a2a::SendMessageResponse::Task(task) = answer else { panic!("a task") };
        assert_eq!(task.status.state, accord_types::a2a::TaskState::Completed, "{binding}");
    }
    // With no preference, JSON-RPC comes first.
    let (chosen, _) = choose_interface(&official, &["JSONRPC".to_owned(), "HTTP+JSON".to_owned()]).expect("one");
    assert_eq!(chosen, Binding::JsonRpc);
}
