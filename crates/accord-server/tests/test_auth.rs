//! Authentication over real HTTP: JWTs against a JWKS (file and URL), API keys, opaque bearer
//! tokens; each refusal in each face's shape with its audit event; the card's security schemes;
//! the authenticated extended card; tasks owned by the principal.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use accord_engine::task::{AccessToken, MemoryStore, RuntimeConfig, TaskRuntime};
use accord_engine::{Agent, Completion, Outcome, Run, Skill};
use accord_server::auth::{ApiKeys, AuthConfig, BearerTokens, JwksSource, JwtConfig, JwtVerifier};
use accord_server::{AgentRouterExt, ServerConfig};
use accord_test_support::{TestServer, audit};
use accord_types::card::AgentSkill;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

const ISSUER: &str = "https://issuer.example";
const AUDIENCE: &str = "accord-test";
const API_KEY: &str = "an-api-key-of-some-length-0001";
const OPAQUE: &str = "an-opaque-bearer-token-00001";

/// The audit events of authentication refusals with this scheme and reason; none of all the
/// refusals recorded carries a JWT or an API key.
fn rejected(scheme: &str, reason: &str) -> usize {
    for event in audit::events("auth.rejected") {
        let fields: String = event.values().cloned().collect::<Vec<_>>().join(" ");
        assert!(!fields.contains("eyJ"), "no JWT in an audit event: {fields}");
        assert!(!fields.contains(API_KEY), "no API key in an audit event");
    }
    audit::count("auth.rejected", &[("scheme", scheme), ("reason", reason)])
}

/// An EC P-256 signing key and its public JWK.
struct TestKey {
    pkcs8: Vec<u8>,
    jwk: Value,
}

impl TestKey {
    fn new(kid: &str) -> Self {
        let rng = SystemRandom::new();
        let document = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("key");
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, document.as_ref()).expect("pair");
        let point = pair.public_key().as_ref().to_vec();
        assert_eq!(point.len(), 65, "an uncompressed P-256 point");
        let jwk = json!({
            "kty": "EC", "crv": "P-256", "kid": kid, "use": "sig",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
        });
        Self { pkcs8: document.as_ref().to_vec(), jwk }
    }

    fn sign(&self, kid: &str, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(kid.to_owned());
        jsonwebtoken::encode(&header, claims, &EncodingKey::from_ec_der(&self.pkcs8)).expect("sign")
    }
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_secs()
}

fn claims(sub: &str) -> Value {
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": sub, "exp": now() + 600, "iat": now(), "scope": "read write"})
}

fn jwks(keys: &[&TestKey]) -> Value {
    json!({"keys": keys.iter().map(|key| key.jwk.clone()).collect::<Vec<_>>()})
}

fn agent() -> Agent {
    Agent::builder("auth-test")
        .skill(
            Skill::builder("echo")
                .description("Echoes its input.")
                .invoke(|run: Run| async move { Ok(Outcome::Completed(Completion::new(run.input().clone()))) }),
        )
        .build()
        .expect("agent")
}

fn extended_skill() -> AgentSkill {
    AgentSkill {
        id: "admin".into(),
        name: "admin".into(),
        description: Some("Operator tools.".into()),
        input_modes: vec!["application/json".into()],
        output_modes: vec!["application/json".into()],
        tags: vec!["admin".into()],
        extra: serde_json::Map::new(),
    }
}

/// Serializes the tests of this binary: audit events are counted per reason across the binary, so
/// two tests refusing for the same reason at once would count each other's.
async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    SERIAL.lock().await
}

async fn serve(auth: AuthConfig) -> TestServer {
    audit::install();
    let agent = agent();
    let runtime = TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::default()), RuntimeConfig::default());
    TestServer::start(agent.router_with(ServerConfig::default().tasks(runtime).auth(auth))).await
}

/// A temporary JWKS file, removed when dropped.
struct JwksFile(std::path::PathBuf);

impl JwksFile {
    fn new(set: &Value) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "accord-test-jwks-{}-{}.json",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::write(&path, set.to_string()).expect("write the JWKS");
        Self(path)
    }
}

impl Drop for JwksFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

async fn verifier(source: JwksSource) -> JwtVerifier {
    JwtVerifier::load(JwtConfig::new(source, ISSUER, AUDIENCE)).await.expect("verifier")
}

/// `(status, WWW-Authenticate, body)` of a REST `ListTasks` with these headers.
async fn rest_list(server: &TestServer, headers: &[(&str, &str)]) -> (u16, String, Value) {
    let mut request = reqwest::Client::new().get(server.url("/a2a/rest/tasks")).header("a2a-version", "1.0");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    answer(request.send().await.expect("response")).await
}

/// `(status, WWW-Authenticate, body)` of a JSON-RPC call with these headers.
async fn rpc(server: &TestServer, method: &str, params: Value, headers: &[(&str, &str)]) -> (u16, String, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut request = reqwest::Client::new()
        .post(server.url("/a2a/jsonrpc"))
        .header("a2a-version", "1.0")
        .header("content-type", "application/json")
        .body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    answer(request.send().await.expect("response")).await
}

async fn answer(response: reqwest::Response) -> (u16, String, Value) {
    let status = response.status().as_u16();
    let challenge = response
        .headers()
        .get_all("www-authenticate")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .collect::<Vec<_>>()
        .join(" | ");
    let text = response.text().await.expect("body");
    (status, challenge, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// Asserts that `headers` are refused on both A2A bindings with the unauthenticated error, and
/// that each refusal was audited with `scheme` and `reason`.
async fn assert_refused(server: &TestServer, headers: &[(&str, &str)], scheme: &str, reason: &str) {
    let before = rejected(scheme, reason);
    let (status, challenge, body) = rest_list(server, headers).await;
    assert_eq!(status, 401, "{reason}: {body}");
    assert_eq!(body["error"]["code"], 401, "{reason}: {body}");
    assert_eq!(body["error"]["status"], "UNAUTHENTICATED", "{reason}: {body}");
    assert_eq!(body["error"]["details"][0]["reason"], "UNAUTHENTICATED", "{reason}: {body}");
    assert!(!challenge.is_empty(), "{reason}: WWW-Authenticate");
    let (status, challenge, body) = rpc(server, "ListTasks", json!({}), headers).await;
    assert_eq!(status, 401, "{reason}: {body}");
    assert_eq!(body["error"]["code"], -32000, "{reason}: {body}");
    assert_eq!(body["id"], Value::Null, "{reason}: {body}");
    assert!(!challenge.is_empty(), "{reason}: WWW-Authenticate");
    assert_eq!(rejected(scheme, reason), before + 2, "{reason}: one audit event per refusal");
}

#[tokio::test]
async fn a_jwt_is_accepted_and_refused_for_each_failed_check() {
    let _serial = serial().await;
    let key = TestKey::new("k1");
    let file = JwksFile::new(&jwks(&[&key]));
    let server = serve(AuthConfig::new().jwt(verifier(JwksSource::File(file.0.clone())).await)).await;

    // Anonymous callers may not list tasks; a valid JWT may.
    let (status, _, body) = rest_list(&server, &[]).await;
    assert_ne!(status, 200, "anonymous list: {body}");
    let good = bearer(&key.sign("k1", &claims("alice")));
    let (status, _, body) = rest_list(&server, &[("authorization", &good)]).await;
    assert_eq!(status, 200, "{body}");
    let (status, _, body) = rpc(&server, "ListTasks", json!({}), &[("authorization", &good)]).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.get("result").is_some(), "{body}");

    let other = TestKey::new("k1");
    let mut wrong_issuer = claims("alice");
    wrong_issuer["iss"] = json!("https://other.example");
    let mut wrong_audience = claims("alice");
    wrong_audience["aud"] = json!("someone-else");
    let mut expired = claims("alice");
    expired["exp"] = json!(now() - 120);
    let mut not_yet = claims("alice");
    not_yet["nbf"] = json!(now() + 120);
    let mut no_exp = claims("alice");
    no_exp.as_object_mut().expect("object").remove("exp");
    let hs256 = {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("k1".into());
        let secret = URL_SAFE_NO_PAD.decode(key.jwk["x"].as_str().expect("x")).expect("x bytes");
        jsonwebtoken::encode(&header, &claims("alice"), &EncodingKey::from_secret(&secret)).expect("hs256")
    };
    let none = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(json!({"alg": "none", "typ": "JWT", "kid": "k1"}).to_string()),
        URL_SAFE_NO_PAD.encode(claims("alice").to_string())
    );
    let cases = [
        (other.sign("k1", &claims("alice")), "bad_signature"),
        (key.sign("k1", &wrong_issuer), "wrong_issuer"),
        (key.sign("k1", &wrong_audience), "wrong_audience"),
        (key.sign("k1", &expired), "expired"),
        (key.sign("k1", &not_yet), "not_yet_valid"),
        (key.sign("k1", &no_exp), "missing_claim"),
        (hs256, "disallowed_algorithm"),
        (none, "disallowed_algorithm"),
        (key.sign("k-unknown", &claims("alice")), "unknown_kid"),
        ("not.a.jwt".to_owned(), "malformed"),
    ];
    for (token, reason) in cases {
        assert_refused(&server, &[("authorization", &bearer(&token))], "jwt", reason).await;
    }
    // A token within the leeway of its `nbf` is accepted.
    let mut skewed = claims("alice");
    skewed["nbf"] = json!(now() + 5);
    let (status, _, body) = rest_list(&server, &[("authorization", &bearer(&key.sign("k1", &skewed)))]).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn an_algorithm_outside_the_configured_list_is_refused() {
    let _serial = serial().await;
    let key = TestKey::new("k1");
    let file = JwksFile::new(&jwks(&[&key]));
    let config = JwtConfig::new(JwksSource::File(file.0.clone()), ISSUER, AUDIENCE).algorithms([Algorithm::RS256]);
    let server = serve(AuthConfig::new().jwt(JwtVerifier::load(config).await.expect("verifier"))).await;
    assert_refused(
        &server,
        &[("authorization", &bearer(&key.sign("k1", &claims("a"))))],
        "jwt",
        "disallowed_algorithm",
    )
    .await;
    assert!(
        JwtVerifier::load(
            JwtConfig::new(JwksSource::File(file.0.clone()), ISSUER, AUDIENCE).algorithms([Algorithm::HS256])
        )
        .await
        .is_err(),
        "HMAC with a JWKS is refused at start-up"
    );
    let symmetric = JwksFile::new(&json!({"keys": [{"kty": "oct", "kid": "s", "k": "c2VjcmV0"}]}));
    assert!(verifier_result(JwksSource::File(symmetric.0.clone())).await.is_err(), "a symmetric JWK is refused");
}

async fn verifier_result(source: JwksSource) -> Result<JwtVerifier, accord_server::auth::JwtSetupError> {
    JwtVerifier::load(JwtConfig::new(source, ISSUER, AUDIENCE)).await
}

/// A JWKS served over HTTP from a set the test can change, counting fetches.
async fn jwks_server(set: Arc<Mutex<Value>>, fetches: Arc<AtomicUsize>) -> TestServer {
    let app = axum::Router::new().route(
        "/jwks.json",
        axum::routing::get(move || {
            let set = Arc::clone(&set);
            let fetches = Arc::clone(&fetches);
            async move {
                fetches.fetch_add(1, Ordering::SeqCst);
                axum::Json(set.lock().expect("set").clone())
            }
        }),
    );
    TestServer::start(app).await
}

#[tokio::test]
async fn a_jwks_url_is_fetched_and_refreshed_on_an_unknown_kid_at_most_once_per_interval() {
    let _serial = serial().await;
    let first = TestKey::new("k1");
    let second = TestKey::new("k2");
    let third = TestKey::new("k3");
    let set = Arc::new(Mutex::new(jwks(&[&first])));
    let fetches = Arc::new(AtomicUsize::new(0));
    let issuer = jwks_server(Arc::clone(&set), Arc::clone(&fetches)).await;
    let url = issuer.url("/jwks.json");

    let eager = JwtConfig::new(JwksSource::Url(url.clone()), ISSUER, AUDIENCE).refresh_interval(Duration::ZERO);
    let eager = serve(AuthConfig::new().jwt(JwtVerifier::load(eager).await.expect("verifier"))).await;
    let patient = serve(AuthConfig::new().jwt(verifier(JwksSource::Url(url)).await)).await;
    assert_eq!(fetches.load(Ordering::SeqCst), 2, "one fetch per verifier at start-up");

    let (status, _, body) = rest_list(&eager, &[("authorization", &bearer(&first.sign("k1", &claims("a"))))]).await;
    assert_eq!(status, 200, "{body}");

    // The issuer rotates in k2: the eager verifier reads the set again and accepts it.
    *set.lock().expect("set") = jwks(&[&first, &second]);
    let (status, _, body) = rest_list(&eager, &[("authorization", &bearer(&second.sign("k2", &claims("a"))))]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(fetches.load(Ordering::SeqCst), 3);

    // The patient verifier read the set less than its interval ago: no fetch, k3 stays unknown.
    *set.lock().expect("set") = jwks(&[&first, &second, &third]);
    assert_refused(&patient, &[("authorization", &bearer(&third.sign("k3", &claims("a"))))], "jwt", "unknown_kid")
        .await;
    assert_eq!(fetches.load(Ordering::SeqCst), 3, "refreshes are rate-limited");

    // An unreachable URL fails at start-up.
    issuer.stop().await;
    assert!(verifier_result(JwksSource::Url(format!("{}/gone", "http://127.0.0.1:9"))).await.is_err());
    assert!(
        verifier_result(JwksSource::Url("http://example.com/jwks.json".into())).await.is_err(),
        "http off loopback"
    );
}

#[tokio::test]
async fn a_jwt_principal_owns_its_tasks() {
    let _serial = serial().await;
    let key = TestKey::new("k1");
    let file = JwksFile::new(&jwks(&[&key]));
    let server = serve(AuthConfig::new().jwt(verifier(JwksSource::File(file.0.clone())).await)).await;
    let alice = bearer(&key.sign("k1", &claims("alice")));
    let bob = bearer(&key.sign("k1", &claims("bob")));
    let message = json!({"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}});
    let (status, _, sent) = rpc(&server, "SendMessage", message, &[("authorization", &alice)]).await;
    assert_eq!(status, 200, "{sent}");
    let id = sent["result"]["task"]["id"].as_str().expect("task id").to_owned();

    let (_, _, alice_list) = rest_list(&server, &[("authorization", &alice)]).await;
    let ids = |list: &Value| -> Vec<String> {
        list["tasks"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|task| task["id"].as_str().map(str::to_owned))
            .collect()
    };
    assert_eq!(ids(&alice_list), vec![id.clone()]);
    let (status, _, bob_list) = rest_list(&server, &[("authorization", &bob)]).await;
    assert_eq!(status, 200, "{bob_list}");
    assert!(ids(&bob_list).is_empty(), "{bob_list}");
    let (status, _, got) = rpc(&server, "GetTask", json!({"id": id}), &[("authorization", &bob)]).await;
    assert_eq!((status, got["error"]["code"].clone()), (200, json!(-32001)), "{got}");
    let (_, _, got) = rpc(&server, "GetTask", json!({"id": id}), &[("authorization", &alice)]).await;
    assert_eq!(got["result"]["id"], json!(id), "{got}");
}

#[tokio::test]
async fn api_keys_and_opaque_tokens_are_accepted_and_unknown_ones_refused_on_every_face() {
    let _serial = serial().await;
    let keys = ApiKeys::new("X-API-Key").expect("header").with_key(API_KEY, "ops", ["read"]);
    let tokens = BearerTokens::new().with(&AccessToken::parse(OPAQUE).expect("token"), "demo", ["read"]);
    let server = serve(AuthConfig::new().api_keys(keys).bearer(tokens)).await;

    let (status, _, body) = rest_list(&server, &[("x-api-key", API_KEY)]).await;
    assert_eq!(status, 200, "{body}");
    let (status, _, body) = rest_list(&server, &[("authorization", &bearer(OPAQUE))]).await;
    assert_eq!(status, 200, "{body}");
    assert_refused(&server, &[("x-api-key", "an-unknown-api-key-000000")], "apiKey", "unknown_key").await;
    assert_refused(&server, &[("authorization", &bearer("an-unknown-bearer-token-0000"))], "bearer", "unknown_token")
        .await;

    // The Lucid face and the JSON-RPC tasks face refuse in their own shapes.
    let client = reqwest::Client::new();
    let lucid = client.get(server.url("/entrypoints")).header("x-api-key", "nope-nope-nope-nope-nope").send();
    let (status, challenge, body) = answer(lucid.await.expect("response")).await;
    assert_eq!((status, body["error"]["code"].clone()), (401, json!("unauthenticated")), "{body}");
    assert!(challenge.contains("ApiKey"), "{challenge}");
    let tasks = client
        .post(server.url("/a2a/tasks"))
        .header("authorization", bearer("an-unknown-bearer-token-0000"))
        .header("content-type", "application/json")
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"taskId": "x"}}).to_string())
        .send();
    let (status, challenge, body) = answer(tasks.await.expect("response")).await;
    assert_eq!((status, body["error"]["code"].clone()), (401, json!(-32000)), "{body}");
    assert!(challenge.contains("Bearer") && challenge.contains("invalid_token"), "{challenge}");
    // Without credentials the Lucid face serves as before.
    let status = client.get(server.url("/entrypoints")).send().await.expect("response").status().as_u16();
    assert_eq!(status, 200);

    // The API key's principal owns tasks like the same string sent as a task access token.
    let message = json!({"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}});
    let (_, _, sent) = rpc(&server, "SendMessage", message, &[("x-api-key", API_KEY)]).await;
    let id = sent["result"]["task"]["id"].as_str().expect("task id").to_owned();
    let lucid_get = client.get(server.url(&format!("/tasks/{id}"))).header("task-access-token", API_KEY).send();
    assert_eq!(lucid_get.await.expect("response").status().as_u16(), 200);
}

async fn card(server: &TestServer) -> Value {
    reqwest::get(server.url("/.well-known/agent-card.json")).await.expect("card").json().await.expect("json")
}

#[tokio::test]
async fn the_card_lists_the_configured_schemes_and_none_without() {
    let _serial = serial().await;
    let plain = serve(AuthConfig::new()).await;
    let without = card(&plain).await;
    assert!(without.get("securitySchemes").is_none(), "{without}");
    assert!(without.get("securityRequirements").is_none(), "{without}");
    assert!(without["capabilities"].get("extendedAgentCard").is_none(), "{without}");

    let key = TestKey::new("k1");
    let file = JwksFile::new(&jwks(&[&key]));
    let auth = AuthConfig::new()
        .bearer(BearerTokens::new().with(&AccessToken::parse(OPAQUE).expect("token"), "demo", ["read"]))
        .jwt(verifier(JwksSource::File(file.0.clone())).await)
        .api_keys(ApiKeys::new("X-Agent-Key").expect("header").with_key(API_KEY, "ops", ["read"]));
    let with = card(&serve(auth.clone()).await).await;
    // The card lists a 0.3 interface (the default), so each scheme carries its 0.3 members
    // (`type` and that type's fields) next to the 1.0 oneof member, and 0.3's `security` is there.
    let bearer_text = "An opaque bearer token issued by the agent's operator";
    let jwt_text = "A JWT from the configured issuer, for this agent's audience";
    let key_text = "An API key issued by the agent's operator";
    assert_eq!(
        with["securitySchemes"],
        json!({
            "bearer": {"httpAuthSecurityScheme": {"description": bearer_text, "scheme": "Bearer"},
                       "type": "http", "scheme": "Bearer", "description": bearer_text},
            "jwt": {"httpAuthSecurityScheme": {"description": jwt_text, "scheme": "Bearer", "bearerFormat": "JWT"},
                    "type": "http", "scheme": "Bearer", "bearerFormat": "JWT", "description": jwt_text},
            "apiKey": {"apiKeySecurityScheme": {"description": key_text, "location": "header", "name": "x-agent-key"},
                       "type": "apiKey", "in": "header", "name": "x-agent-key", "description": key_text},
        })
    );
    assert_eq!(
        with["securityRequirements"],
        json!([
            {"schemes": {"bearer": {"list": []}}},
            {"schemes": {"jwt": {"list": []}}},
            {"schemes": {"apiKey": {"list": []}}},
        ])
    );
    assert_eq!(with["security"], json!([{"bearer": []}, {"jwt": []}, {"apiKey": []}]));
    // Accord's own 1.0 card type reads the card with both spellings.
    let parsed: accord_types::a2a::AgentCard = serde_json::from_value(with.clone()).expect("a 1.0 card");
    assert!(matches!(parsed.security_schemes["apiKey"], accord_types::a2a::SecurityScheme::ApiKey(_)), "{with}");

    // Without a 0.3 interface: the 1.0 spelling only.
    let agent = agent();
    let runtime = TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::default()), RuntimeConfig::default());
    let config = ServerConfig::default()
        .tasks(runtime)
        .auth(auth)
        .a2a(Some(accord_server::A2aConfig { v03: false, ..accord_server::A2aConfig::default() }));
    let v10 = card(&TestServer::start(agent.router_with(config)).await).await;
    assert_eq!(
        v10["securitySchemes"]["bearer"],
        json!({"httpAuthSecurityScheme": {"description": bearer_text, "scheme": "Bearer"}})
    );
    assert!(v10.get("security").is_none(), "{v10}");
}

#[tokio::test]
async fn the_extended_card_is_for_authenticated_callers_only() {
    let _serial = serial().await;
    let keys = ApiKeys::new("X-API-Key").expect("header").with_key(API_KEY, "ops", ["read"]);
    let mut echo_detail = extended_skill();
    echo_detail.id = "echo".into();
    echo_detail.name = "echo".into();
    echo_detail.description = Some("Echoes its input, in detail.".into());
    let server = serve(AuthConfig::new().api_keys(keys).extended_card(vec![extended_skill(), echo_detail])).await;
    let public = card(&server).await;
    assert_eq!(public["capabilities"]["extendedAgentCard"], true, "{public}");
    let client = reqwest::Client::new();

    for path in ["/a2a/rest/extendedAgentCard", "/a2a/rest/tenant-1/extendedAgentCard"] {
        let authenticated = client.get(server.url(path)).header("a2a-version", "1.0").header("x-api-key", API_KEY);
        let (status, _, extended) = answer(authenticated.send().await.expect("response")).await;
        assert_eq!(status, 200, "{path}: {extended}");
        let skills: Vec<(&str, &str)> = extended["skills"]
            .as_array()
            .expect("skills")
            .iter()
            .map(|skill| (skill["id"].as_str().unwrap_or(""), skill["description"].as_str().unwrap_or("")))
            .collect();
        assert_eq!(skills, vec![("echo", "Echoes its input, in detail."), ("admin", "Operator tools.")], "{path}");
        assert_eq!(extended["supportedInterfaces"], public["supportedInterfaces"], "{path}: the same URLs");

        let anonymous = client.get(server.url(path)).header("a2a-version", "1.0");
        let (status, challenge, body) = answer(anonymous.send().await.expect("response")).await;
        assert_eq!((status, body["error"]["status"].clone()), (401, json!("UNAUTHENTICATED")), "{path}: {body}");
        assert!(challenge.contains("ApiKey"), "{challenge}");
    }

    let (status, _, extended) = rpc(&server, "GetExtendedAgentCard", json!({}), &[("x-api-key", API_KEY)]).await;
    assert_eq!(status, 200, "{extended}");
    assert_eq!(extended["result"]["skills"][1]["id"], "admin", "{extended}");
    assert_eq!(extended["result"]["supportedInterfaces"], public["supportedInterfaces"]);
    let (status, _, body) = rpc(&server, "GetExtendedAgentCard", json!({}), &[]).await;
    assert_eq!((status, body["error"]["code"].clone(), body["id"].clone()), (401, json!(-32000), json!(1)), "{body}");

    // Not configured: the operation is unsupported, with or without credentials.
    let keys = ApiKeys::new("X-API-Key").expect("header").with_key(API_KEY, "ops", ["read"]);
    let plain = serve(AuthConfig::new().api_keys(keys)).await;
    assert!(card(&plain).await["capabilities"].get("extendedAgentCard").is_none());
    let (_, _, body) = rpc(&plain, "GetExtendedAgentCard", json!({}), &[("x-api-key", API_KEY)]).await;
    assert_eq!(body["error"]["code"], -32004, "{body}");
    let rest = client.get(plain.url("/a2a/rest/extendedAgentCard")).header("a2a-version", "1.0");
    let (status, _, body) = answer(rest.send().await.expect("response")).await;
    assert_eq!(
        (status, body["error"]["details"][0]["reason"].clone()),
        (400, json!("UNSUPPORTED_OPERATION")),
        "{body}"
    );
}
