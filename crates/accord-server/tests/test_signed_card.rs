//! The signed card over real HTTP: served by the server, fetched and verified by the client.

use std::sync::Arc;
use std::time::Duration;

use accord_client::accord_card::{Algorithm, PrivateKey, RejectReason, SigningInput, VerifyOptions, verify_card_json};
use accord_client::{Client, ClientError};
use accord_engine::task::{MemoryStore, RuntimeConfig, TaskRuntime};
use accord_engine::{Agent, Completion, Outcome, Run, Skill};
use accord_server::{AgentRouterExt, SIGNED_CARD_PATH, ServerConfig, SignedCardConfig};
use accord_test_support::TestServer;
use serde_json::Value;

const ISSUER: &str = "agent.example.com";
const AGENT_ID: &str = "signed-bot";

fn agent() -> Agent {
    let echo = |run: Run| async move { Ok(Outcome::Completed(Completion::new(run.input().clone()))) };
    Agent::builder("signed-test")
        .version("2.1.0")
        .skill(Skill::builder("echo").invoke(echo))
        .skill(Skill::builder("summarize").invoke(echo))
        .build()
        .expect("agent")
}

fn key(algorithm: Algorithm) -> Arc<PrivateKey> {
    Arc::new(PrivateKey::generate(algorithm).expect("key"))
}

fn signed(key: &Arc<PrivateKey>) -> SignedCardConfig {
    SignedCardConfig::new(Arc::clone(key), ISSUER, AGENT_ID).expect("signed card config")
}

async fn serve(config: ServerConfig) -> TestServer {
    TestServer::start(agent().router_with(config)).await
}

async fn get(url: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut request = reqwest::Client::new().get(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.expect("response")
}

#[tokio::test]
async fn an_ml_dsa_signed_card_verifies_with_the_agents_skills_and_interfaces() {
    let key = key(Algorithm::MlDsa87);
    let runtime = TaskRuntime::new(agent(), Arc::new(MemoryStore::default()), RuntimeConfig::default());
    let server = serve(ServerConfig::default().tasks(runtime.clone()).signed_card(signed(&key))).await;
    let client = Client::new();

    let verified = client
        .fetch_verified_card(&server.origin, &key.public_key(), ISSUER, VerifyOptions::new())
        .await
        .expect("a valid signed card");
    assert_eq!(verified.url, server.url(SIGNED_CARD_PATH));
    assert_eq!(verified.algorithm, Algorithm::MlDsa87);
    assert_eq!(verified.signing_input, SigningInput::Shake256Digest);
    assert_eq!(verified.claims.issuer, ISSUER);
    assert_eq!(verified.claims.agent_id, AGENT_ID);
    assert_eq!(verified.claims.version, "2.1.0", "the card's version is the agent's");

    let plain = client.fetch_card(&server.origin).await.expect("plain card");
    let skill_ids: Vec<&str> = plain.skills.iter().map(|skill| skill.id.as_str()).collect();
    assert_eq!(verified.claims.capabilities, ["echo", "summarize"]);
    assert_eq!(verified.claims.capabilities, skill_ids);
    let interface_urls: Vec<&str> = plain.supported_interfaces.iter().map(|i| i.url.as_str()).collect();
    let endpoint_urls: Vec<&str> =
        verified.claims.endpoints.as_ref().expect("endpoints").iter().map(|e| e.url.as_str()).collect();
    let base = format!("{}/", server.origin);
    for face in [base.clone(), format!("{base}a2a/tasks")] {
        assert!(
            endpoint_urls.contains(&face.as_str()),
            "the Lucid face and the JSON-RPC tasks face: {endpoint_urls:?}"
        );
    }
    let mut distinct_interface_urls = Vec::new();
    for url in interface_urls {
        if !distinct_interface_urls.contains(&url) {
            distinct_interface_urls.push(url);
        }
    }
    assert_eq!(endpoint_urls, distinct_interface_urls, "every interface, once, in order");

    let signed_at = verified.signed_at().expect("signedAt");
    let expires_at = verified.expires_at().expect("expiresAt");
    assert_eq!(expires_at - signed_at, 24 * 60 * 60 * 1000, "the default TTL is a day");
    assert_eq!(verified.envelope["card"]["agentId"], AGENT_ID);

    // The same envelope verifies against the key's PEM, as a peer that pinned the file would.
    let pem = key.public_key().to_pem().expect("pem");
    let again =
        client.fetch_verified_card(&server.origin, pem.as_str(), ISSUER, VerifyOptions::new()).await.expect("valid");
    assert_eq!(again.envelope, verified.envelope, "served from the cache");
    runtime.close().await;
}

#[tokio::test]
async fn concurrent_first_requests_share_one_signature() {
    let key = key(Algorithm::MlDsa87);
    let server = serve(ServerConfig::default().signed_card(signed(&key))).await;
    let url = server.url(SIGNED_CARD_PATH);
    let requests = (0..8).map(|_| {
        let url = url.clone();
        tokio::spawn(async move { get(&url, &[]).await.bytes().await.expect("body") })
    });
    let mut bodies = Vec::new();
    for request in requests {
        bodies.push(request.await.expect("request task"));
    }
    // ML-DSA signatures are hedged: two signings of one card never give the same bytes.
    assert!(bodies.iter().all(|body| *body == bodies[0]), "every request got the one envelope signed");
    let outcome = verify_card_json(&bodies[0], &key.public_key(), &VerifyOptions::new());
    assert!(outcome.valid, "{:?}", outcome.reason);
}

#[tokio::test]
async fn only_get_is_allowed() {
    let key = key(Algorithm::Ed25519);
    let server = serve(ServerConfig::default().signed_card(signed(&key))).await;
    let http = reqwest::Client::new();
    for method in [reqwest::Method::POST, reqwest::Method::PUT, reqwest::Method::DELETE, reqwest::Method::HEAD] {
        let response = http.request(method.clone(), server.url(SIGNED_CARD_PATH)).send().await.expect("response");
        assert_eq!(response.status(), 405, "{method}");
        assert_eq!(response.headers()["allow"], "GET", "{method}");
        assert!(response.bytes().await.expect("body").is_empty(), "{method}: empty body");
    }
}

#[tokio::test]
async fn the_envelope_is_cached_json_with_cache_control() {
    let key = key(Algorithm::Ed25519);
    let server = serve(ServerConfig::default().signed_card(signed(&key))).await;

    let first = get(&server.url(SIGNED_CARD_PATH), &[]).await;
    assert_eq!(first.status(), 200);
    assert_eq!(first.headers()["content-type"], "application/json");
    assert_eq!(first.headers()["cache-control"], "public, max-age=300");
    let first = first.bytes().await.expect("body");
    let second = get(&server.url(SIGNED_CARD_PATH), &[]).await.bytes().await.expect("body");
    assert_eq!(first, second, "within its life the envelope is served from the cache, byte for byte");
    let envelope: Value = serde_json::from_slice(&first).expect("json");
    let mut members: Vec<&str> = envelope.as_object().expect("object").keys().map(String::as_str).collect();
    members.sort_unstable();
    assert_eq!(members, ["card", "expiresAt", "signature", "signedAt"]);

    // Another origin gets its own envelope, naming its own endpoints, and keeps it too.
    let port = server.addr.port();
    let host = format!("localhost:{port}");
    let other = get(&server.url(SIGNED_CARD_PATH), &[("host", &host)]).await.bytes().await.expect("body");
    let other_envelope: Value = serde_json::from_slice(&other).expect("json");
    assert_eq!(other_envelope["card"]["endpoints"][0]["url"], format!("http://localhost:{port}/"));
    let other_again = get(&server.url(SIGNED_CARD_PATH), &[("host", &host)]).await.bytes().await.expect("body");
    assert_eq!(other, other_again);
    let first_again = get(&server.url(SIGNED_CARD_PATH), &[]).await.bytes().await.expect("body");
    assert_eq!(first, first_again, "one origin's envelope does not replace another's");
}

#[tokio::test]
async fn max_age_is_configurable_and_never_outlives_the_envelope() {
    let key = key(Algorithm::Ed25519);
    let server = serve(ServerConfig::default().signed_card(signed(&key).with_max_age(Duration::from_secs(42)))).await;
    let response = get(&server.url(SIGNED_CARD_PATH), &[]).await;
    assert_eq!(response.headers()["cache-control"], "public, max-age=42");

    let short = signed(&key).with_ttl(Duration::from_secs(60)).expect("ttl");
    let server = serve(ServerConfig::default().signed_card(short)).await;
    let response = get(&server.url(SIGNED_CARD_PATH), &[]).await;
    let cache_control = response.headers()["cache-control"].to_str().expect("ascii").to_owned();
    let max_age: u64 = cache_control.strip_prefix("public, max-age=").expect("max-age").parse().expect("number");
    assert!((50..=60).contains(&max_age), "capped by the 60 s the envelope lives: {cache_control}");
    let envelope: Value = response.json().await.expect("json");
    let life = envelope["expiresAt"].as_u64().expect("ms") - envelope["signedAt"].as_u64().expect("ms");
    assert_eq!(life, 60_000);
}

#[tokio::test]
async fn the_legacy_path_serves_the_plain_card_unless_the_operator_opts_in() {
    let key = key(Algorithm::Ed25519);
    let default = serve(ServerConfig::default().signed_card(signed(&key))).await;
    let legacy: Value = get(&default.url("/.well-known/agent.json"), &[]).await.json().await.expect("json");
    assert_eq!(legacy["name"], "signed-test", "the plain card");
    assert!(legacy.get("signature").is_none());

    let opted_in = serve(ServerConfig::default().signed_card(signed(&key).serve_at_legacy_path(true))).await;
    let response = get(&opted_in.url("/.well-known/agent.json"), &[]).await;
    assert_eq!(response.headers()["cache-control"], "public, max-age=300");
    let legacy = response.bytes().await.expect("body");
    let envelope = get(&opted_in.url(SIGNED_CARD_PATH), &[]).await.bytes().await.expect("body");
    assert_eq!(legacy, envelope, "the same envelope at both paths");
    let outcome = verify_card_json(&legacy, &key.public_key(), &VerifyOptions::new().with_expected_issuer(ISSUER));
    assert!(outcome.valid, "{:?}", outcome.reason);
    let post = reqwest::Client::new().post(opted_in.url("/.well-known/agent.json")).send().await.expect("post");
    assert_eq!(post.status(), 405);
    assert_eq!(post.headers()["allow"], "GET");

    // The plain card is still one request away, and clients that want it still find it.
    let plain: Value = get(&opted_in.url("/.well-known/agent-card.json"), &[]).await.json().await.expect("json");
    assert_eq!(plain["name"], "signed-test");
    assert_eq!(Client::new().fetch_card(&opted_in.origin).await.expect("card").name, "signed-test");

    // A client that only knows the legacy path finds the envelope there.
    let legacy_url = opted_in.url("/.well-known/agent.json");
    let verified = Client::new()
        .fetch_verified_card(&legacy_url, &key.public_key(), ISSUER, VerifyOptions::new())
        .await
        .expect("valid");
    assert_eq!(verified.url, legacy_url);
}

#[tokio::test]
async fn a_wrong_key_or_issuer_is_a_typed_rejection() {
    let key = key(Algorithm::Ed25519);
    let server = serve(ServerConfig::default().signed_card(signed(&key))).await;
    let client = Client::new();

    let stranger = PrivateKey::generate(Algorithm::Ed25519).expect("key").public_key();
    let error = client
        .fetch_verified_card(&server.origin, &stranger, ISSUER, VerifyOptions::new())
        .await
        .expect_err("another key did not sign it");
    assert_eq!(error.reject_reason(), Some(RejectReason::SignatureMismatch));
    assert!(
        matches!(&error, ClientError::SignedCardRejected { url, reason: RejectReason::SignatureMismatch }
            if *url == server.url(SIGNED_CARD_PATH)),
        "{error:?}"
    );
    assert!(error.to_string().contains("signature-mismatch"), "{error}");

    let error = client
        .fetch_verified_card(&server.origin, &key.public_key(), "impostor.example.com", VerifyOptions::new())
        .await
        .expect_err("another issuer");
    assert_eq!(error.reject_reason(), Some(RejectReason::IssuerMismatch));

    let post_quantum_only =
        VerifyOptions::new().with_provider(accord_client::accord_card::CryptoProvider::post_quantum_only());
    let pem = key.public_key().to_pem().expect("pem");
    let error = client
        .fetch_verified_card(&server.origin, pem.as_str(), ISSUER, post_quantum_only)
        .await
        .expect_err("the options' provider refuses Ed25519");
    assert_eq!(error.reject_reason(), Some(RejectReason::KeyUnsupported));
}

#[tokio::test]
async fn an_origin_that_cannot_be_signed_gets_503_not_500() {
    let key = key(Algorithm::Ed25519);
    let server = serve(ServerConfig::default().signed_card(signed(&key))).await;
    let port = server.addr.port();
    for host in [format!("0.0.0.0:{port}"), format!("192.168.1.20:{port}")] {
        let response = get(&server.url(SIGNED_CARD_PATH), &[("host", &host)]).await;
        assert_eq!(response.status(), 503, "{host}");
        let body: Value = response.json().await.expect("json");
        assert_eq!(body["error"]["code"], "card_signing_unavailable");
        let message = body["error"]["message"].as_str().expect("message");
        assert!(message.contains(&format!("http://{host}/")) && message.contains("insecure-endpoint"), "{message}");
    }
    // Behind a TLS proxy the same agent is signable.
    let response = get(
        &server.url(SIGNED_CARD_PATH),
        &[
            ("host", &format!("0.0.0.0:{port}")),
            ("x-forwarded-proto", "https"),
            ("x-forwarded-host", "agent.example.com"),
        ],
    )
    .await;
    assert_eq!(response.status(), 200);
    let envelope: Value = response.json().await.expect("json");
    assert_eq!(envelope["card"]["endpoints"][0]["url"], "https://agent.example.com/");
}

#[tokio::test]
async fn a_mounted_agent_serves_and_signs_under_its_base_path() {
    let key = key(Algorithm::Ed25519);
    let router = agent().router_with(ServerConfig::default().signed_card(signed(&key)));
    let server = TestServer::start(axum::Router::new().nest("/agents/signed", router)).await;
    let base = server.url("/agents/signed");
    let verified =
        Client::new().fetch_verified_card(&base, &key.public_key(), ISSUER, VerifyOptions::new()).await.expect("valid");
    assert_eq!(verified.url, format!("{base}{SIGNED_CARD_PATH}"));
    let endpoints = verified.claims.endpoints.expect("endpoints");
    assert_eq!(endpoints[0].url, format!("{base}/"));
}

#[tokio::test]
async fn an_agent_without_a_signed_card_is_not_found() {
    let server = serve(ServerConfig::default()).await;
    assert_eq!(get(&server.url(SIGNED_CARD_PATH), &[]).await.status(), 404);
    let stranger = PrivateKey::generate(Algorithm::Ed25519).expect("key").public_key();
    let error = Client::new()
        .fetch_verified_card(&server.origin, &stranger, ISSUER, VerifyOptions::new())
        .await
        .expect_err("nothing signed");
    assert!(matches!(error, ClientError::SignedCardNotFound { .. }), "{error:?}");
}

#[tokio::test]
async fn the_client_stops_on_errors_and_refuses_huge_answers() {
    use axum::routing::get as route_get;

    let key = key(Algorithm::Ed25519);
    let failing = axum::Router::new()
        .route(SIGNED_CARD_PATH, route_get(|| async { (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "boom") }));
    let server = TestServer::start(failing).await;
    let error = Client::new()
        .fetch_verified_card(&server.origin, &key.public_key(), ISSUER, VerifyOptions::new())
        .await
        .expect_err("an error status stops the search");
    assert_eq!(error.status(), Some(500), "{error:?}");

    let huge = axum::Router::new().route(
        SIGNED_CARD_PATH,
        route_get(|| async { format!(r#"{{"card":{{}},"signature":"{}"}}"#, "A".repeat(2 * 1024 * 1024)) }),
    );
    let server = TestServer::start(huge).await;
    let error = Client::new()
        .fetch_verified_card(&server.origin, &key.public_key(), ISSUER, VerifyOptions::new())
        .await
        .expect_err("too large");
    assert!(matches!(error, ClientError::InvalidResponse { .. }) && error.to_string().contains("exceeds"), "{error:?}");

    // The envelope's own URL may be given: its error is the one reported when nothing else is found.
    let unavailable = axum::Router::new()
        .route(SIGNED_CARD_PATH, route_get(|| async { (axum::http::StatusCode::SERVICE_UNAVAILABLE, "not now") }));
    let server = TestServer::start(unavailable).await;
    let error = Client::new()
        .fetch_verified_card(&server.url(SIGNED_CARD_PATH), &key.public_key(), ISSUER, VerifyOptions::new())
        .await
        .expect_err("unavailable");
    assert_eq!(error.status(), Some(503), "{error:?}");
}
