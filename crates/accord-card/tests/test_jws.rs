//! JWS card signatures (`AgentCard.signatures`): signing, verifying against a trust store or a
//! JWKS, and every reason a signature is refused, for each algorithm.

use std::sync::Arc;

use accord_card::jws::{
    JwsAlgorithm, JwsSignOptions, JwsVerifyOptions, TrustStore, card_signing_payload, sign_agent_card,
    verify_agent_card, verify_agent_card_json,
};
use accord_card::{
    Algorithm, AuditAction, AuditOutcome, CryptoProvider, JsonLinesSink, PrivateKey, RejectReason, public_key_to_jwk,
};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

const JWS_KEYS: [Algorithm; 3] = [Algorithm::EcdsaP256, Algorithm::Ed25519, Algorithm::MlDsa87];

fn card() -> Value {
    json!({
        "name": "Example Agent",
        "description": "Signs its card ünïcödé 😀",
        "version": "1.0.0",
        "supportedInterfaces": [{"url": "https://agent.example.com/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": true, "pushNotifications": false},
        "defaultInputModes": ["application/json"],
        "defaultOutputModes": ["application/json"],
        "skills": [{"id": "echo", "name": "echo", "description": "Echoes.", "tags": ["echo"]}]
    })
}

fn trust(kid: &str, key: &PrivateKey) -> TrustStore {
    let mut store = TrustStore::new();
    store.add_key(Some(kid), key.public_key());
    store
}

fn signed(algorithm: Algorithm, kid: &str) -> (PrivateKey, Value) {
    let key = PrivateKey::generate(algorithm).expect("key");
    let card = sign_agent_card(&card(), &key, &JwsSignOptions::new().with_kid(kid)).expect("sign");
    (key, card)
}

fn reason(card: &Value, store: &TrustStore) -> Option<RejectReason> {
    let outcome = verify_agent_card(card, store, &JwsVerifyOptions::new());
    assert!(!outcome.valid, "{outcome:?}");
    outcome.reason
}

/// Rewrites the protected header of signature 0 (the signature itself is left as it was).
fn with_header(card: &Value, change: impl FnOnce(&mut serde_json::Map<String, Value>)) -> Value {
    let mut card = card.clone();
    let protected = card["signatures"][0]["protected"].as_str().expect("protected");
    let mut header: serde_json::Map<String, Value> =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(protected).expect("b64")).expect("json");
    change(&mut header);
    card["signatures"][0]["protected"] = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&header).expect("json")).into();
    card
}

#[test]
fn each_algorithm_signs_with_the_documented_header_and_verifies() {
    for algorithm in JWS_KEYS {
        let (key, card) = signed(algorithm, "key-1");
        let signature = &card["signatures"][0];
        let header: Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD.decode(signature["protected"].as_str().expect("protected")).expect("b64url"),
        )
        .expect("json");
        let alg = JwsAlgorithm::for_key(algorithm).expect("jws alg");
        assert_eq!(header, json!({"alg": alg.name(), "kid": "key-1", "typ": "JOSE"}), "{algorithm}");
        let raw = URL_SAFE_NO_PAD.decode(signature["signature"].as_str().expect("sig")).expect("b64url");
        assert_eq!(raw.len(), algorithm.signature_len(), "{algorithm}");

        let sink = Arc::new(JsonLinesSink::new(Vec::new()));
        let outcome =
            verify_agent_card(&card, &trust("key-1", &key), &JwsVerifyOptions::new().with_audit_sink(sink.clone()));
        assert!(outcome.valid, "{algorithm}: {outcome:?}");
        assert_eq!(outcome.signatures[0].key_fingerprint.as_deref(), key.public_key().fingerprint());
        let event: Value = serde_json::from_slice(&sink.take()).expect("one audit line");
        assert_eq!(event["action"], AuditAction::CardVerified.as_str());
        assert_eq!(event["outcome"], AuditOutcome::Success.as_str());
        assert_eq!(event["metadata"]["kid"], "key-1");
        assert_eq!(event["metadata"]["jwsAlg"], alg.name());
        assert_eq!(event["metadata"]["algorithm"], algorithm.name());
        // The payload is the canonical card: re-signing the JSON text in another member order
        // and spacing verifies the same.
        let text = serde_json::to_string_pretty(&card).expect("json");
        assert!(verify_agent_card_json(text.as_bytes(), &trust("key-1", &key), &JwsVerifyOptions::new()).valid);
    }
}

#[test]
fn a_tampered_card_fails_with_signature_mismatch_for_each_algorithm() {
    for algorithm in JWS_KEYS {
        let (key, card) = signed(algorithm, "k");
        let store = trust("k", &key);
        let sink = Arc::new(JsonLinesSink::new(Vec::new()));
        let mut tampered = card.clone();
        tampered["skills"][0]["description"] = "Deletes everything.".into();
        let outcome = verify_agent_card(&tampered, &store, &JwsVerifyOptions::new().with_audit_sink(sink.clone()));
        assert_eq!(outcome.reason, Some(RejectReason::SignatureMismatch), "{algorithm}");
        let event: Value = serde_json::from_slice(&sink.take()).expect("audit line");
        assert_eq!(event["action"], "a2a.card_rejected");
        assert_eq!(event["reason"], "signature-mismatch");

        // A new member of the A2A card counts too; one A2A does not define (a Lucid card's
        // `entrypoints`) is outside the payload, as for the official SDKs.
        let mut added = card.clone();
        added["iconUrl"] = "https://example.com/icon.svg".into();
        assert_eq!(reason(&added, &store), Some(RejectReason::SignatureMismatch), "{algorithm}");
        let mut lucid = card.clone();
        lucid["entrypoints"] = json!({"echo": {"description": "not covered by the JWS"}});
        lucid["capabilities"]["stateTransitionHistory"] = true.into();
        lucid["skills"][0]["x-note"] = "not an A2A member either".into();
        assert!(verify_agent_card(&lucid, &store, &JwsVerifyOptions::new()).valid, "{algorithm}");
        // A flipped signature bit, and a tampered protected header.
        let mut flipped = card.clone();
        let mut raw = URL_SAFE_NO_PAD.decode(card["signatures"][0]["signature"].as_str().expect("sig")).expect("b64");
        raw[10] ^= 1;
        flipped["signatures"][0]["signature"] = URL_SAFE_NO_PAD.encode(&raw).into();
        assert_eq!(reason(&flipped, &store), Some(RejectReason::SignatureMismatch), "{algorithm}");
        let retyped = with_header(&card, |header| {
            header.insert("typ".into(), "JWT".into());
        });
        assert_eq!(reason(&retyped, &store), Some(RejectReason::SignatureMismatch), "{algorithm}");
    }
}

#[test]
fn empty_members_and_signatures_are_outside_the_payload() {
    let (key, card) = signed(Algorithm::Ed25519, "k");
    let store = trust("k", &key);
    let mut padded = card.clone();
    padded["documentationUrl"] = "".into();
    padded["securitySchemes"] = json!({});
    padded["capabilities"]["extensions"] = json!([]);
    padded["iconUrl"] = Value::Null;
    assert!(verify_agent_card(&padded, &store, &JwsVerifyOptions::new()).valid);
    assert_eq!(card_signing_payload(&padded).expect("payload"), card_signing_payload(&card).expect("payload"));
}

#[test]
fn several_signers_each_get_a_verdict() {
    let es = PrivateKey::generate(Algorithm::EcdsaP256).expect("key");
    let ed = PrivateKey::generate(Algorithm::Ed25519).expect("key");
    let pq = PrivateKey::generate(Algorithm::MlDsa87).expect("key");
    let mut card = card();
    for (kid, key) in [("es", &es), ("ed", &ed), ("pq", &pq)] {
        card = sign_agent_card(&card, key, &JwsSignOptions::new().with_kid(kid)).expect("sign");
    }
    assert_eq!(card["signatures"].as_array().expect("list").len(), 3);
    let mut all = TrustStore::new();
    all.add_key(Some("es"), es.public_key()).add_key(Some("ed"), ed.public_key()).add_key(Some("pq"), pq.public_key());
    let outcome = verify_agent_card(&card, &all, &JwsVerifyOptions::new());
    assert!(outcome.valid);
    assert!(outcome.signatures.iter().all(|verdict| verdict.valid), "{outcome:?}");

    // Trusting only the post-quantum key: the card is valid through it alone.
    let outcome = verify_agent_card(&card, &trust("pq", &pq), &JwsVerifyOptions::new());
    assert!(outcome.valid);
    let reasons: Vec<_> = outcome.signatures.iter().map(|verdict| verdict.reason).collect();
    assert_eq!(reasons, [Some(RejectReason::KeyUnknown), Some(RejectReason::KeyUnknown), None]);

    // Allowing only ML-DSA-87 makes the classical signatures not allowed, whatever the keys.
    let outcome = verify_agent_card(&card, &all, &JwsVerifyOptions::new().with_algorithms([JwsAlgorithm::MlDsa87]));
    assert!(outcome.valid);
    assert_eq!(outcome.signatures[0].reason, Some(RejectReason::AlgNotAllowed));
    assert_eq!(outcome.signatures[1].reason, Some(RejectReason::AlgNotAllowed));
}

#[test]
fn unknown_kids_and_keys_of_another_algorithm_are_refused() {
    for algorithm in JWS_KEYS {
        let (key, card) = signed(algorithm, "right");
        assert_eq!(reason(&card, &trust("wrong", &key)), Some(RejectReason::KeyUnknown), "{algorithm}");
        assert_eq!(reason(&card, &TrustStore::new()), Some(RejectReason::KeyUnknown), "{algorithm}");
        // A key pinned for any kid is used, but must still be the signer's.
        let other = PrivateKey::generate(algorithm).expect("key");
        let mut pinned = TrustStore::new();
        pinned.add_key(None, other.public_key());
        assert_eq!(reason(&card, &pinned), Some(RejectReason::SignatureMismatch), "{algorithm}");
        pinned.add_key(None, key.public_key());
        assert!(verify_agent_card(&card, &pinned, &JwsVerifyOptions::new()).valid, "{algorithm}");
    }
    // The header says ES256, the key under that kid is Ed25519 (and the other way round).
    let (es, es_card) = signed(Algorithm::EcdsaP256, "k");
    let ed = PrivateKey::generate(Algorithm::Ed25519).expect("key");
    assert_eq!(reason(&es_card, &trust("k", &ed)), Some(RejectReason::AlgKeyMismatch));
    let relabelled = with_header(&es_card, |header| {
        header.insert("alg".into(), "EdDSA".into());
    });
    assert_eq!(reason(&relabelled, &trust("k", &es)), Some(RejectReason::AlgKeyMismatch));
    let as_ml_dsa = with_header(&es_card, |header| {
        header.insert("alg".into(), "ML-DSA-87".into());
    });
    assert_eq!(reason(&as_ml_dsa, &trust("k", &es)), Some(RejectReason::AlgKeyMismatch));
}

#[test]
fn a_jwks_declares_the_one_algorithm_of_each_key() {
    let (key, card) = signed(Algorithm::EcdsaP256, "es-1");
    let mut jwk = public_key_to_jwk(&key.public_key(), Some("es-1")).expect("jwk");
    let jwks = json!({"keys": [{"kty": "RSA", "kid": "rsa", "n": "AQAB", "e": "AQAB"}, jwk.clone(),
                              {"kty": "OKP", "crv": "Ed25519", "use": "enc", "x": "AA"}]});
    let mut store = TrustStore::new();
    assert_eq!(store.add_jwks(&jwks, &CryptoProvider::default()), Ok(2), "RSA and the enc key are skipped");
    assert!(verify_agent_card(&card, &store, &JwsVerifyOptions::new()).valid);

    // The ES256 key, published with no alg, is refused when the header says EdDSA; and a JWK
    // whose alg is not its key type's is not a key at all.
    jwk["alg"] = "EdDSA".into();
    let mut store = TrustStore::new();
    assert!(store.add_jwks(&json!({"keys": [jwk]}), &CryptoProvider::default()).is_err());
    assert!(TrustStore::new().add_jwks(&json!({"keys": "none"}), &CryptoProvider::default()).is_err());
}

#[test]
fn malformed_headers_none_and_critical_extensions_are_refused() {
    let (key, card) = signed(Algorithm::Ed25519, "k");
    let store = trust("k", &key);
    let cases: Vec<(&str, Value, RejectReason)> = vec![
        (
            "alg none",
            with_header(&card, |h| {
                h.insert("alg".into(), "none".into());
            }),
            RejectReason::AlgNone,
        ),
        (
            "alg NONE",
            with_header(&card, |h| {
                h.insert("alg".into(), "NONE".into());
            }),
            RejectReason::AlgNone,
        ),
        (
            "alg HS256",
            with_header(&card, |h| {
                h.insert("alg".into(), "HS256".into());
            }),
            RejectReason::AlgUnsupported,
        ),
        (
            "no alg",
            with_header(&card, |h| {
                h.remove("alg");
            }),
            RejectReason::HeaderMalformed,
        ),
        (
            "no kid",
            with_header(&card, |h| {
                h.remove("kid");
            }),
            RejectReason::HeaderMalformed,
        ),
        (
            "numeric kid",
            with_header(&card, |h| {
                h.insert("kid".into(), 7.into());
            }),
            RejectReason::HeaderMalformed,
        ),
        (
            "crit",
            with_header(&card, |h| {
                h.insert("crit".into(), json!(["exp"]));
            }),
            RejectReason::CritUnsupported,
        ),
        (
            "b64",
            with_header(&card, |h| {
                h.insert("b64".into(), false.into());
            }),
            RejectReason::CritUnsupported,
        ),
    ];
    for (name, card, expected) in cases {
        assert_eq!(reason(&card, &store), Some(expected), "{name}");
    }

    let mut edited = card.clone();
    edited["signatures"][0]["protected"] = "not base64!".into();
    assert_eq!(reason(&edited, &store), Some(RejectReason::HeaderMalformed));
    edited["signatures"][0]["protected"] = URL_SAFE_NO_PAD.encode("[1]").into();
    assert_eq!(reason(&edited, &store), Some(RejectReason::HeaderMalformed));
    edited["signatures"][0]["protected"] = URL_SAFE_NO_PAD.encode(r#"{"alg":"EdDSA","alg":"none","kid":"k"}"#).into();
    assert_eq!(reason(&edited, &store), Some(RejectReason::HeaderMalformed), "duplicate members");

    let mut unprotected = card.clone();
    unprotected["signatures"][0]["header"] = json!({"kid": "other"});
    assert_eq!(reason(&unprotected, &store), Some(RejectReason::HeaderMalformed), "kid in both headers");
    unprotected["signatures"][0]["header"] = json!({"crit": ["x"]});
    assert_eq!(reason(&unprotected, &store), Some(RejectReason::CritUnsupported));
    unprotected["signatures"][0]["header"] = json!({"note": "not signed"});
    assert!(verify_agent_card(&unprotected, &store, &JwsVerifyOptions::new()).valid);

    let mut padded = card.clone();
    padded["signatures"][0]["signature"] =
        format!("{}==", card["signatures"][0]["signature"].as_str().expect("s")).into();
    assert_eq!(reason(&padded, &store), Some(RejectReason::SignatureBase64Bad));
}

#[test]
fn card_level_failures_have_their_own_reasons() {
    let (key, card) = signed(Algorithm::Ed25519, "k");
    let store = trust("k", &key);
    assert_eq!(reason(&json!([card.clone()]), &store), Some(RejectReason::CardNotObject));
    assert_eq!(reason(&json!({"name": "x"}), &store), Some(RejectReason::NoSignatures));
    assert_eq!(reason(&json!({"name": "x", "signatures": []}), &store), Some(RejectReason::NoSignatures));
    assert_eq!(reason(&json!({"name": "x", "signatures": {}}), &store), Some(RejectReason::SignatureShape));
    assert_eq!(reason(&json!({"name": "x", "signatures": ["jws"]}), &store), Some(RejectReason::SignatureShape));
    assert_eq!(
        reason(&json!({"name": "x", "signatures": [{"protected": 1, "signature": "x"}]}), &store),
        Some(RejectReason::SignatureShape)
    );
    let outcome = verify_agent_card_json(b"{\"a\":1,\"a\":2}", &store, &JwsVerifyOptions::new());
    assert_eq!(outcome.reason, Some(RejectReason::CardNotObject), "duplicate members");
    let big = sign_agent_card(&json!({"name": "x".repeat(70_000)}), &key, &JwsSignOptions::new().with_kid("k"))
        .expect("sign");
    assert_eq!(reason(&big, &store), Some(RejectReason::CardTooLarge));
}

#[test]
fn signing_refuses_what_it_cannot_express() {
    let slh = PrivateKey::generate(Algorithm::SlhDsaShake256f).expect("key");
    assert!(sign_agent_card(&card(), &slh, &JwsSignOptions::new()).is_err(), "SLH-DSA has no JOSE identifier");
    let ed = PrivateKey::generate(Algorithm::Ed25519).expect("key");
    assert!(sign_agent_card(&json!([]), &ed, &JwsSignOptions::new()).is_err());
    assert!(sign_agent_card(&json!({"signatures": "x"}), &ed, &JwsSignOptions::new()).is_err());
    assert!(sign_agent_card(&card(), &ed, &JwsSignOptions::new().with_kid("")).is_err());
    assert!(sign_agent_card(&card(), &ed, &JwsSignOptions::new().with_jku("http://keys.example/jwks")).is_err());
    let with_jku =
        sign_agent_card(&card(), &ed, &JwsSignOptions::new().with_jku("https://keys.example/jwks.json")).expect("sign");
    let outcome = verify_agent_card(
        &with_jku,
        &{
            let mut store = TrustStore::new();
            store.add_key(None, ed.public_key());
            store
        },
        &JwsVerifyOptions::new(),
    );
    assert!(outcome.valid);
    assert_eq!(outcome.signatures[0].jku.as_deref(), Some("https://keys.example/jwks.json"));
    // The default kid is the key's RFC 7638 thumbprint.
    assert_eq!(
        outcome.signatures[0].kid.as_deref(),
        Some(accord_card::jwk_thumbprint(&ed.public_key()).expect("thumbprint").as_str())
    );
}
