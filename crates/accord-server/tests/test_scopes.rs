//! A skill's scope holds on every face: over real HTTP (and HTTP/2 for gRPC) on a loopback port,
//! a skill that needs a scope is refused to an anonymous caller and to a caller without the
//! scope, and served to a caller who holds it — through the A2A v1.0 JSON-RPC, HTTP+JSON and gRPC
//! bindings (blocking and streaming sends), the A2A 0.3 dialect, the Lucid invoke, stream and
//! task routes, and the JSON-RPC tasks face — each refusal in its face's own shape, each with its
//! audit event. The cards show the scope.

use std::sync::Arc;
use std::time::Duration;

use accord_engine::task::{AccessToken, MemoryStore, RuntimeConfig, TaskRuntime};
use accord_engine::{Agent, Completion, Outcome, Run, Skill};
use accord_grpc::pb;
use accord_grpc::pb::a2a_service_client::A2aServiceClient;
use accord_server::auth::{AuthConfig, BearerTokens};
use accord_server::{A2aConfig, AgentRouterExt, GrpcAddress, JsonRpcTasksConfig, ServerConfig};
use accord_test_support::{TestServer, audit};
use serde_json::{Value, json};
use tonic_types::StatusExt;

/// Holds `files:read`.
const ALICE: &str = "alice-scoped-token-0123456789";
/// Holds no scope.
const BOB: &str = "bob-unscoped-token-0123456789";
const SCOPE: &str = "files:read";

/// The `skill.scope_denied` audit events of `skill` through `face`; none carries a token.
fn denied(face: &str, skill: &str) -> usize {
    for event in audit::events("skill.scope_denied") {
        let fields: String = event.values().cloned().collect::<Vec<_>>().join(" ");
        assert!(!fields.contains(ALICE) && !fields.contains(BOB), "no token in {fields}");
    }
    audit::count("skill.scope_denied", &[("face", face), ("skill", skill)])
}

/// `secret` needs [`SCOPE`] (set when the skill is built); `open` needs nothing; `vault` gets its
/// scope from the agent afterwards, as `Serve::skill_scope` gives it.
fn agent() -> Agent {
    let answer = |run: Run| async move {
        let _ = run.input();
        Ok(Outcome::Completed(Completion::new(json!({"secret": 42}))))
    };
    Agent::builder("scopes-test")
        .skill(Skill::builder("secret").scope(SCOPE).handler(answer))
        .skill(Skill::builder("open").handler(answer))
        .skill(Skill::builder("vault").handler(answer))
        .build()
        .expect("agent")
        .with_skill_scope("vault", SCOPE)
        .expect("vault is a skill")
}

async fn server() -> TestServer {
    audit::install();
    let agent = agent();
    let runtime = TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::default()), RuntimeConfig::default());
    let tokens = BearerTokens::new().with(&AccessToken::parse(ALICE).expect("token"), "alice", [SCOPE]).with(
        &AccessToken::parse(BOB).expect("token"),
        "bob",
        Vec::<String>::new(),
    );
    let config = ServerConfig::default()
        .tasks(runtime)
        .a2a(Some(A2aConfig { grpc: Some(GrpcAddress::SamePort), v03: true, ..A2aConfig::default() }))
        .jsonrpc_tasks(Some(JsonRpcTasksConfig::default()))
        .auth(AuthConfig::new().bearer(tokens));
    TestServer::start(agent.router_with(config)).await
}

/// What a face did with the call.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    /// The skill ran and its answer came back.
    Served,
    /// Refused, with what the face said (its status and code), for the assertion message.
    Refused(String),
}

/// The three callers: anonymous, one without the scope, one with it.
const CALLERS: [Option<&str>; 3] = [None, Some(BOB), Some(ALICE)];

async fn post(
    s: &TestServer,
    path: &str,
    body: Value,
    bearer: Option<&str>,
    headers: &[(&str, &str)],
) -> (u16, String) {
    let mut request = reqwest::Client::new().post(s.url(path)).json(&body);
    if let Some(token) = bearer {
        request = request.bearer_auth(token);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("response");
    let status = response.status().as_u16();
    let text = tokio::time::timeout(Duration::from_secs(10), response.text()).await.expect("an answer").expect("body");
    (status, text)
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| panic!("JSON, not {text}"))
}

/// The `ErrorInfo` reason among `details`.
fn reason_in(details: &Value) -> Option<&str> {
    details.as_array()?.iter().find_map(|detail| detail["reason"].as_str())
}

async fn a2a_jsonrpc(s: &TestServer, skill: &str, bearer: Option<&str>) -> Seen {
    let message =
        json!({"messageId": "m-1", "role": "ROLE_USER", "parts": [{"data": {}}], "metadata": {"skillId": skill}});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}});
    let (status, text) = post(s, "/a2a/jsonrpc", body, bearer, &[("a2a-version", "1.0")]).await;
    let body = json_of(&text);
    assert_eq!(status, 200, "{text}");
    if body["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED" {
        return Seen::Served;
    }
    assert_eq!(body["error"]["code"], -32095, "{text}");
    assert_eq!(reason_in(&body["error"]["data"]), Some("PERMISSION_DENIED"), "{text}");
    assert_eq!(body["error"]["message"], format!("scope '{SCOPE}' required for skill '{skill}'"));
    Seen::Refused(text)
}

async fn a2a_jsonrpc_stream(s: &TestServer, skill: &str, bearer: Option<&str>) -> Seen {
    let message =
        json!({"messageId": "m-2", "role": "ROLE_USER", "parts": [{"data": {}}], "metadata": {"skillId": skill}});
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "SendStreamingMessage", "params": {"message": message}});
    let (status, text) = post(s, "/a2a/jsonrpc", body, bearer, &[("a2a-version", "1.0")]).await;
    assert_eq!(status, 200, "{text}");
    if text.contains("TASK_STATE_COMPLETED") {
        return Seen::Served;
    }
    assert!(text.contains("-32095") && text.contains("PERMISSION_DENIED"), "{text}");
    Seen::Refused(text)
}

async fn a2a_rest(s: &TestServer, skill: &str, bearer: Option<&str>) -> Seen {
    let message =
        json!({"messageId": "m-3", "role": "ROLE_USER", "parts": [{"data": {}}], "metadata": {"skillId": skill}});
    let (status, text) =
        post(s, "/a2a/rest/message:send", json!({"message": message}), bearer, &[("a2a-version", "1.0")]).await;
    let body = json_of(&text);
    if status == 200 {
        assert_eq!(body["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{text}");
        return Seen::Served;
    }
    assert_eq!((status, body["error"]["status"].as_str()), (403, Some("PERMISSION_DENIED")), "{text}");
    assert_eq!(reason_in(&body["error"]["details"]), Some("PERMISSION_DENIED"), "{text}");
    Seen::Refused(text)
}

async fn a2a_grpc(s: &TestServer, skill: &str, bearer: Option<&str>) -> Seen {
    let endpoint = tonic::transport::Endpoint::from_shared(s.origin.clone()).expect("endpoint");
    let mut client = A2aServiceClient::new(endpoint.connect().await.expect("an HTTP/2 connection"));
    let fields = [(
        "skillId".to_owned(),
        prost_types::Value { kind: Some(prost_types::value::Kind::StringValue(skill.to_owned())) },
    )];
    let message = pb::Message {
        message_id: "m-4".into(),
        role: pb::Role::User as i32,
        parts: vec![pb::Part { content: Some(pb::part::Content::Text("{}".into())), ..Default::default() }],
        metadata: Some(prost_types::Struct { fields: fields.into_iter().collect() }),
        ..Default::default()
    };
    let mut request = tonic::Request::new(pb::SendMessageRequest { message: Some(message), ..Default::default() });
    if let Some(token) = bearer {
        request.metadata_mut().insert("authorization", format!("Bearer {token}").parse().expect("metadata"));
    }
    match client.send_message(request).await {
        Ok(response) => match response.into_inner().payload {
            Some(pb::send_message_response::Payload::Task(task)) => {
                assert_eq!(task.status.expect("status").state, pb::TaskState::Completed as i32);
                Seen::Served
            }
            other => panic!("a task, not {other:?}"),
        },
        Err(status) => {
            assert_eq!(status.code(), tonic::Code::PermissionDenied, "{status:?}");
            let info = status.get_details_error_info().expect("an ErrorInfo");
            assert_eq!(info.reason, "PERMISSION_DENIED");
            Seen::Refused(format!("{status:?}"))
        }
    }
}

async fn a2a_03_jsonrpc(s: &TestServer, skill: &str, bearer: Option<&str>) -> Seen {
    let message = json!({"kind": "message", "messageId": "m-5", "role": "user", "parts": [{"kind": "data", "data": {}}],
                         "metadata": {"skillId": skill}});
    let body = json!({"jsonrpc": "2.0", "id": "r", "method": "message/send", "params": {"message": message}});
    let (status, text) = post(s, "/a2a/jsonrpc", body, bearer, &[]).await;
    let body = json_of(&text);
    assert_eq!(status, 200, "{text}");
    if body["result"]["status"]["state"] == "completed" {
        return Seen::Served;
    }
    assert_eq!(body["error"]["code"], -32095, "{text}");
    Seen::Refused(text)
}

async fn a2a_03_rest(s: &TestServer, skill: &str, bearer: Option<&str>) -> Seen {
    let message = json!({"messageId": "m-6", "role": "ROLE_USER", "content": [{"data": {"data": {}}}],
                         "metadata": {"skillId": skill}});
    let (status, text) = post(s, "/a2a/rest/v1/message:send", json!({"message": message}), bearer, &[]).await;
    if status == 200 {
        assert!(text.contains("TASK_STATE_COMPLETED"), "{text}");
        return Seen::Served;
    }
    assert_eq!(status, 403, "{text}");
    Seen::Refused(text)
}

/// The Lucid face's refusal: 403 `scope_required`.
fn lucid_refusal(status: u16, text: &str, skill: &str) -> Seen {
    let body = json_of(text);
    assert_eq!(status, 403, "{text}");
    assert_eq!(
        body["error"],
        json!({"code": "scope_required", "message": format!("scope '{SCOPE}' required for skill '{skill}'")})
    );
    Seen::Refused(text.to_owned())
}

async fn lucid_invoke(s: &TestServer, skill: &str, bearer: Option<&str>) -> Seen {
    let (status, text) = post(s, &format!("/entrypoints/{skill}/invoke"), json!({"input": {}}), bearer, &[]).await;
    if status == 200 {
        assert_eq!(json_of(&text)["output"], json!({"secret": 42}), "{text}");
        return Seen::Served;
    }
    lucid_refusal(status, &text, skill)
}

async fn lucid_stream(s: &TestServer, skill: &str, bearer: Option<&str>) -> Seen {
    let (status, text) = post(s, &format!("/entrypoints/{skill}/stream"), json!({"input": {}}), bearer, &[]).await;
    if status == 200 {
        assert!(text.contains("run-end"), "{text}");
        return Seen::Served;
    }
    lucid_refusal(status, &text, skill)
}

async fn lucid_task(s: &TestServer, skill: &str, bearer: Option<&str>) -> Seen {
    let body = json!({"message": {"role": "user", "content": {"text": "{}"}}, "skillId": skill});
    let token = "lucid-task-owner-token-0123456789";
    let (status, text) = post(s, "/tasks", body, bearer, &[("task-access-token", token)]).await;
    if status == 200 {
        assert!(json_of(&text)["taskId"].is_string(), "{text}");
        return Seen::Served;
    }
    lucid_refusal(status, &text, skill)
}

async fn tasks_rpc(s: &TestServer, skill: &str, bearer: Option<&str>, method: &str) -> Seen {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": {"task": {"skill": skill}}});
    let (status, text) = post(s, "/a2a/tasks", body, bearer, &[]).await;
    assert_eq!(status, 200, "{text}");
    if text.contains("\"completed\"") {
        return Seen::Served;
    }
    assert!(
        text.contains("-32001") && text.contains(&format!("scope '{SCOPE}' required for skill '{skill}'")),
        "{text}"
    );
    Seen::Refused(text)
}

/// Calls `skill` through every face as each caller; asserts what each should see, and that
/// each refusal was audited with its face.
async fn every_face(s: &TestServer, skill: &str) {
    for bearer in CALLERS {
        let granted = bearer == Some(ALICE);
        let who = bearer.unwrap_or("anonymous");
        let before = [
            ("a2a_jsonrpc", denied("a2a_jsonrpc", skill)),
            ("a2a_rest", denied("a2a_rest", skill)),
            ("a2a_grpc", denied("a2a_grpc", skill)),
            ("lucid", denied("lucid", skill)),
            ("jsonrpc_tasks", denied("jsonrpc_tasks", skill)),
        ];
        let seen = [
            ("A2A JSON-RPC SendMessage", a2a_jsonrpc(s, skill, bearer).await),
            ("A2A JSON-RPC SendStreamingMessage", a2a_jsonrpc_stream(s, skill, bearer).await),
            ("A2A HTTP+JSON message:send", a2a_rest(s, skill, bearer).await),
            ("A2A gRPC SendMessage", a2a_grpc(s, skill, bearer).await),
            ("A2A 0.3 message/send", a2a_03_jsonrpc(s, skill, bearer).await),
            ("A2A 0.3 REST message:send", a2a_03_rest(s, skill, bearer).await),
            ("Lucid invoke", lucid_invoke(s, skill, bearer).await),
            ("Lucid stream", lucid_stream(s, skill, bearer).await),
            ("Lucid POST /tasks", lucid_task(s, skill, bearer).await),
            ("tasks/send", tasks_rpc(s, skill, bearer, "tasks/send").await),
            ("tasks/sendSubscribe", tasks_rpc(s, skill, bearer, "tasks/sendSubscribe").await),
        ];
        for (face, seen) in seen {
            match (granted, seen) {
                (true, Seen::Served) | (false, Seen::Refused(_)) => {}
                (true, Seen::Refused(answer)) => panic!("{face} refused {skill} to {who}, who holds {SCOPE}: {answer}"),
                (false, Seen::Served) => panic!("{face} served {skill} to {who}, who lacks {SCOPE}"),
            }
        }
        // One audit event per refusal, each naming its face: two on the A2A JSON-RPC endpoint
        // (1.0 blocking and streaming; 0.3 is audited there too), one or two on the others.
        let expected = [("a2a_jsonrpc", 3), ("a2a_rest", 2), ("a2a_grpc", 1), ("lucid", 3), ("jsonrpc_tasks", 2)];
        for ((face, before), (_, refusals)) in before.into_iter().zip(expected) {
            let after = denied(face, skill);
            let want = if granted { 0 } else { refusals };
            assert_eq!(after - before, want, "audit events of {face} for {who}");
        }
    }
}

#[tokio::test]
async fn a_scoped_skill_is_refused_without_its_scope_and_served_with_it_on_every_face() {
    let s = server().await;
    every_face(&s, "secret").await;
}

#[tokio::test]
async fn a_scope_given_to_a_built_agent_holds_on_every_face_too() {
    let s = server().await;
    every_face(&s, "vault").await;
}

#[tokio::test]
async fn a_skill_without_a_scope_is_open_to_every_caller() {
    let s = server().await;
    for bearer in CALLERS {
        assert_eq!(a2a_jsonrpc(&s, "open", bearer).await, Seen::Served);
        assert_eq!(a2a_grpc(&s, "open", bearer).await, Seen::Served);
        assert_eq!(lucid_invoke(&s, "open", bearer).await, Seen::Served);
        assert_eq!(tasks_rpc(&s, "open", bearer, "tasks/send").await, Seen::Served);
    }
}

#[tokio::test]
async fn the_cards_show_a_scoped_skill_as_such() {
    let s = server().await;
    let card: Value =
        reqwest::get(s.url("/.well-known/agent-card.json")).await.expect("card").json().await.expect("json");
    let skill = |id: &str| card["skills"].as_array().expect("skills").iter().find(|skill| skill["id"] == id).cloned();
    let secret = skill("secret").expect("secret is listed");
    let requirements = secret["securityRequirements"].as_array().expect("the scoped skill's requirements");
    assert!(!requirements.is_empty());
    for requirement in requirements {
        let schemes = requirement["schemes"].as_object().expect("schemes");
        assert!(schemes.values().all(|scopes| scopes["list"] == json!([SCOPE])), "{requirement}");
        assert!(card["securitySchemes"].as_object().expect("schemes").keys().any(|name| schemes.contains_key(name)));
    }
    assert_eq!(skill("vault").expect("vault")["securityRequirements"], secret["securityRequirements"]);
    assert!(skill("open").expect("open").get("securityRequirements").is_none(), "an open skill needs nothing");
    // 0.3 readers find the same requirement under their own name.
    assert_eq!(secret["security"][0].as_object().expect("0.3 security").values().next(), Some(&json!([SCOPE])));
    // Accord's skill extension names the scope too.
    let extensions = card["capabilities"]["extensions"].as_array().expect("extensions");
    let params =
        extensions.iter().find_map(|extension| extension["params"]["skills"].as_object()).expect("skill params");
    assert_eq!(params["secret"]["scope"], SCOPE);
    assert!(params["open"].get("scope").is_none());
}
