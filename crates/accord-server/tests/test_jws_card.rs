//! The JWS signatures of the served card over real HTTP: every card route carries them, they
//! verify against the keys' JWKS, they survive revalidation, and a tampered card fails for each
//! algorithm.

use std::sync::Arc;

use accord_client::accord_card::jws::{JwsSignOptions, JwsVerifyOptions, TrustStore, verify_agent_card};
use accord_client::accord_card::{Algorithm, CryptoProvider, PrivateKey, RejectReason, public_key_to_jwk};
use accord_engine::{Agent, Completion, Outcome, Run, Skill};
use accord_server::{AgentRouterExt, JwsCardConfig, SIGNED_CARD_PATH, ServerConfig, SignedCardConfig};
use accord_test_support::TestServer;
use serde_json::{Value, json};

const ALGORITHMS: [(Algorithm, &str); 3] =
    [(Algorithm::EcdsaP256, "es-1"), (Algorithm::Ed25519, "ed-1"), (Algorithm::MlDsa87, "pq-1")];

fn agent() -> Agent {
    let echo = |run: Run| async move { Ok(Outcome::Completed(Completion::new(run.input().clone()))) };
    Agent::builder("jws-test").version("3.0.0").skill(Skill::builder("echo").invoke(echo)).build().expect("agent")
}

fn keys() -> Vec<(Arc<PrivateKey>, &'static str)> {
    ALGORITHMS.iter().map(|(algorithm, kid)| (Arc::new(PrivateKey::generate(*algorithm).expect("key")), *kid)).collect()
}

fn config(keys: &[(Arc<PrivateKey>, &'static str)]) -> JwsCardConfig {
    keys.iter().fold(JwsCardConfig::new(), |config, (key, kid)| {
        config.signer(Arc::clone(key), JwsSignOptions::new().with_kid(*kid)).expect("signer")
    })
}

fn trust(keys: &[(Arc<PrivateKey>, &'static str)]) -> TrustStore {
    let jwks: Vec<Value> =
        keys.iter().map(|(key, kid)| public_key_to_jwk(&key.public_key(), Some(kid)).expect("jwk")).collect();
    let mut store = TrustStore::new();
    store.add_jwks(&json!({ "keys": jwks }), &CryptoProvider::default()).expect("jwks");
    store
}

async fn get(url: &str) -> reqwest::Response {
    reqwest::Client::new().get(url).send().await.expect("response")
}

#[tokio::test]
async fn the_served_card_carries_one_valid_signature_per_key_on_every_card_route() {
    let keys = keys();
    let envelope_key = Arc::new(PrivateKey::generate(Algorithm::Ed25519).expect("key"));
    let signed = SignedCardConfig::new(envelope_key, "agent.example.com", "bot").expect("envelope");
    let server =
        TestServer::start(agent().router_with(ServerConfig::default().jws_card(config(&keys)).signed_card(signed)))
            .await;
    let store = trust(&keys);

    for path in ["/.well-known/agent-card.json", "/.well-known/agent.json"] {
        let card: Value = get(&server.url(path)).await.json().await.expect("card");
        assert_eq!(card["name"], "jws-test");
        let outcome = verify_agent_card(&card, &store, &JwsVerifyOptions::new());
        assert!(outcome.valid, "{path}: {outcome:?}");
        assert_eq!(outcome.signatures.len(), 3);
        assert!(outcome.signatures.iter().all(|verdict| verdict.valid), "{path}: {outcome:?}");
        let kids: Vec<_> = outcome.signatures.iter().map(|verdict| verdict.kid.clone().unwrap_or_default()).collect();
        assert_eq!(kids, ["es-1", "ed-1", "pq-1"]);
    }
    // The envelope route is unaffected.
    let envelope: Value = get(&server.url(SIGNED_CARD_PATH)).await.json().await.expect("envelope");
    assert!(envelope.get("signature").is_some() && envelope["card"].get("signatures").is_none());
}

#[tokio::test]
async fn a_tampered_served_card_fails_for_each_algorithm() {
    let keys = keys();
    let server = TestServer::start(agent().router_with(ServerConfig::default().jws_card(config(&keys)))).await;
    let card: Value = get(&server.url("/.well-known/agent-card.json")).await.json().await.expect("card");
    for (index, (key, kid)) in keys.iter().enumerate() {
        let mut only = TrustStore::new();
        only.add_key(Some(kid), key.public_key());
        assert!(verify_agent_card(&card, &only, &JwsVerifyOptions::new()).valid, "{kid}");
        let mut tampered = card.clone();
        tampered["skills"][0]["description"] = "Something else.".into();
        let outcome = verify_agent_card(&tampered, &only, &JwsVerifyOptions::new());
        assert!(!outcome.valid, "{kid}");
        assert_eq!(outcome.signatures[index].reason, Some(RejectReason::SignatureMismatch), "{kid}");
        // The other signatures are by keys this store does not know.
        assert_eq!(outcome.signatures[(index + 1) % 3].reason, Some(RejectReason::KeyUnknown), "{kid}");
        // A key of another algorithm under this kid: the mismatch is named, never tried.
        let (other, _) = &keys[(index + 1) % 3];
        let mut wrong = TrustStore::new();
        wrong.add_key(Some(kid), other.public_key());
        let outcome = verify_agent_card(&card, &wrong, &JwsVerifyOptions::new());
        assert_eq!(outcome.signatures[index].reason, Some(RejectReason::AlgKeyMismatch), "{kid}");
    }
}

#[tokio::test]
async fn the_signed_card_keeps_its_etag_and_follows_the_base_path() {
    let keys = keys();
    let router = agent().router_with(ServerConfig::default().jws_card(config(&keys)));
    let server = TestServer::start(axum::Router::new().nest("/agents/one", router)).await;
    let url = server.url("/agents/one/.well-known/agent-card.json");
    let first = get(&url).await;
    let etag = first.headers()["etag"].to_str().expect("etag").to_owned();
    let first: Value = first.json().await.expect("card");
    let second = get(&url).await;
    assert_eq!(second.headers()["etag"].to_str().expect("etag"), etag, "randomized signatures are made once");
    let revalidated = reqwest::Client::new().get(&url).header("if-none-match", &etag).send().await.expect("response");
    assert_eq!(revalidated.status(), 304);
    assert!(first["supportedInterfaces"][0]["url"].as_str().expect("url").contains("/agents/one"));
    assert!(verify_agent_card(&first, &trust(&keys), &JwsVerifyOptions::new()).valid);
}
