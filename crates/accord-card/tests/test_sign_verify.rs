//! Signing and verifying envelopes: every rejection reason, their order, both signing inputs,
//! every algorithm, envelopes made by other implementations, and the audit event of each outcome.

use std::fs;
use std::num::NonZeroUsize;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use accord_card::{Algorithm, Card, Randomness};
use accord_card::{
    AuditAction, AuditEvent, AuditOutcome, AuditSink, CardError, CardErrorCode, CardOptions, CryptoProvider,
    JsonLinesSink, PrivateKey, PublicKey, RejectReason, SignOptions, SignedEnvelope, SigningInput, VerifyOptions,
    VerifyOutcome, create_card, sign_card, verify_card, verify_card_json,
};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

/// 2026-01-01T00:00:00Z, the signing time of every envelope here and of the golden files.
const T0_MS: u64 = 1_767_225_600_000;
const DAY_MS: u64 = 86_400_000;

fn at_ms(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

fn golden(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/keys").join(name);
    fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

struct Fixture {
    key: PrivateKey,
    public_pem: String,
    /// Signed at T0 over the SHAKE256 digest, and over the raw canonical bytes.
    digest: SignedEnvelope,
    raw: SignedEnvelope,
}

fn card() -> Card {
    create_card(
        CardOptions::new("agent.example.com", "ops-bot-1")
            .capability("chat.respond")
            .capability("tool.search")
            .endpoint("https://agent.example.com/a2a/v1")
            .metadata(json!({"owner": "ops", "é": [1, 2.5, null]})),
    )
    .expect("card")
}

fn fixture(algorithm: Algorithm) -> &'static Fixture {
    static FIXTURES: OnceLock<Vec<Fixture>> = OnceLock::new();
    let fixtures = FIXTURES.get_or_init(|| {
        // SLH-DSA signing takes about a second: each key signs exactly twice, once here.
        std::thread::scope(|scope| {
            let handles: Vec<_> = [
                "ml-dsa-87.pyca.private.pem",
                "slh-dsa-shake-256f.noble.private.pem",
                "ed25519.openssl.private.pem",
                "p256.openssl.private.pem",
            ]
            .into_iter()
            .map(|file| {
                scope.spawn(move || {
                    let key = PrivateKey::from_pem(&golden(file)).expect("golden key");
                    let sign = |input| {
                        let options = SignOptions::new().at(at_ms(T0_MS)).with_signing_input(input);
                        sign_card(&card(), &key, &options).expect("sign")
                    };
                    let (digest, raw) = (sign(SigningInput::Shake256Digest), sign(SigningInput::RawCanonical));
                    let public_pem = key.public_key().to_pem().expect("pem");
                    Fixture { key, public_pem, digest, raw }
                })
            })
            .collect();
            handles.into_iter().map(|handle| handle.join().expect("fixture thread")).collect()
        })
    });
    fixtures.iter().find(|fixture| fixture.key.algorithm() == algorithm).expect("fixture for algorithm")
}

fn ml_dsa() -> &'static Fixture {
    fixture(Algorithm::MlDsa87)
}

/// Collects audit events.
#[derive(Default)]
struct Capture(Mutex<Vec<AuditEvent>>);

impl AuditSink for Capture {
    fn record(&self, event: &AuditEvent) {
        self.0.lock().expect("lock").push(event.clone());
    }
}

impl Capture {
    fn only(&self) -> AuditEvent {
        let events = self.0.lock().expect("lock");
        assert_eq!(events.len(), 1, "exactly one audit event: {events:?}");
        events[0].clone()
    }
}

/// Verifies at T0 + 1 min with a fresh capture; returns the outcome and the one audit event.
fn verify_with(envelope: &Value, key: &str, options: VerifyOptions) -> (VerifyOutcome, AuditEvent) {
    let capture = Arc::new(Capture::default());
    let outcome = verify_card(envelope, key, &options.with_audit_sink(capture.clone()));
    (outcome, capture.only())
}

fn options() -> VerifyOptions {
    VerifyOptions::new().at(at_ms(T0_MS + 60_000))
}

fn verify(envelope: &Value) -> (VerifyOutcome, AuditEvent) {
    verify_with(envelope, &ml_dsa().public_pem, options())
}

/// Asserts a denial with `reason`, and its audit event.
fn assert_rejected(envelope: &Value, reason: &str) -> AuditEvent {
    let (outcome, event) = verify(envelope);
    assert_denied(&outcome, &event, reason);
    event
}

fn assert_denied(outcome: &VerifyOutcome, event: &AuditEvent, reason: &str) {
    assert!(!outcome.valid, "expected {reason}, got a valid card");
    assert_eq!(outcome.reason.map(RejectReason::as_str), Some(reason));
    assert_eq!(outcome.claims, None);
    assert_eq!(event.action, AuditAction::CardRejected);
    assert_eq!(event.outcome, AuditOutcome::Denied);
    assert_eq!(event.reason.map(RejectReason::as_str), Some(reason));
}

fn good() -> Value {
    ml_dsa().digest.to_value()
}

fn edit(mut envelope: Value, change: impl FnOnce(&mut Value)) -> Value {
    change(&mut envelope);
    envelope
}

#[test]
fn every_algorithm_and_signing_input_verifies_and_reports_what_matched() {
    for algorithm in Algorithm::ALL {
        let fixture = fixture(algorithm);
        for (envelope, input) in
            [(&fixture.digest, SigningInput::Shake256Digest), (&fixture.raw, SigningInput::RawCanonical)]
        {
            assert_eq!(envelope.signed_at, T0_MS);
            assert_eq!(envelope.expires_at, T0_MS + DAY_MS);
            let (outcome, event) = verify_with(&envelope.to_value(), &fixture.public_pem, options());
            assert!(outcome.valid, "{algorithm} {input}: {:?}", outcome.reason);
            assert_eq!(outcome.reason, None);
            assert_eq!(outcome.claims.as_ref(), Some(&card()));
            assert_eq!(outcome.signing_input, Some(input), "{algorithm}");
            assert_eq!(outcome.algorithm, Some(algorithm));
            assert_eq!(event.action, AuditAction::CardVerified);
            assert_eq!(event.outcome, AuditOutcome::Success);
            assert_eq!(event.reason, None);
            assert_eq!(event.metadata.issuer.as_deref(), Some("agent.example.com"));
            assert_eq!(event.metadata.agent_id.as_deref(), Some("ops-bot-1"));
            assert_eq!(event.metadata.algorithm, Some(algorithm));
            assert_eq!(event.metadata.signing_input, Some(input));
            assert_eq!(event.metadata.key_fingerprint.as_deref(), fixture.key.public_key().fingerprint());
            // A key already read works the same as its PEM.
            let public = PublicKey::from_pem(&fixture.public_pem).expect("pem");
            assert!(verify_card(&envelope.to_value(), &public, &options()).valid);
        }
        assert_eq!(fixture.digest.signature.len(), algorithm.signature_len().div_ceil(3) * 4, "padded base64");
    }
}

#[test]
fn the_envelope_has_the_blamejs_shape() {
    let envelope = good();
    let keys: Vec<&str> = envelope.as_object().expect("object").keys().map(String::as_str).collect();
    assert_eq!(keys, vec!["card", "expiresAt", "signature", "signedAt"]);
    assert!(envelope["signedAt"].is_u64() && envelope["expiresAt"].is_u64());
    let json = serde_json::to_string(&ml_dsa().digest).expect("json");
    let parsed: SignedEnvelope = serde_json::from_str(&json).expect("parse");
    assert_eq!(&parsed, &ml_dsa().digest);
    assert_eq!(serde_json::to_value(&parsed).expect("value"), envelope);
    // The signed bytes are the canonical envelope without its signature.
    let canonical = String::from_utf8(ml_dsa().digest.canonical_payload().expect("jcs")).expect("utf-8");
    assert!(canonical.starts_with(r#"{"card":{"agentId":"ops-bot-1","capabilities":["chat.respond","tool.search"]"#));
    assert!(canonical.ends_with(&format!(r#"}},"expiresAt":{},"signedAt":{T0_MS}}}"#, T0_MS + DAY_MS)), "{canonical}");
}

#[test]
fn envelopes_signed_by_other_implementations_verify() {
    for (envelope, public, input) in [
        ("envelope.ml-dsa-87.pyca.raw-canonical.json", "ml-dsa-87.pyca.public.pem", SigningInput::RawCanonical),
        ("envelope.ml-dsa-87.pyca.shake256-digest.json", "ml-dsa-87.pyca.public.pem", SigningInput::Shake256Digest),
        (
            "envelope.ml-dsa-87.noble-deterministic.shake256-digest.json",
            "ml-dsa-87.pyca.public.pem",
            SigningInput::Shake256Digest,
        ),
        (
            "envelope.slh-dsa-shake-256f.noble-deterministic.shake256-digest.json",
            "slh-dsa-shake-256f.noble.public.pem",
            SigningInput::Shake256Digest,
        ),
    ] {
        let outcome = verify_card_json(golden(envelope).as_bytes(), &golden(public), &options());
        assert!(outcome.valid, "{envelope}: {:?}", outcome.reason);
        assert_eq!(outcome.signing_input, Some(input), "{envelope}");
        assert_eq!(outcome.claims.map(|card| card.agent_id), Some("golden-bot".to_owned()));
    }
}

#[test]
fn envelope_not_object() {
    for envelope in [json!([]), json!("envelope"), json!(null), json!(7), json!([good()])] {
        let event = assert_rejected(&envelope, "envelope-not-object");
        assert_eq!(event.metadata.issuer, None);
    }
    let capture = Arc::new(Capture::default());
    let options = options().with_audit_sink(capture.clone());
    for text in [&b"not json"[..], b"", b"{\"card\":1,\"card\":2}", b"{} {}"] {
        let outcome = verify_card_json(text, &ml_dsa().public_pem, &options);
        assert_eq!(outcome.reason, Some(RejectReason::EnvelopeNotObject), "{}", String::from_utf8_lossy(text));
    }
    assert_eq!(capture.0.lock().expect("lock").len(), 4, "one audit event each");
}

#[test]
fn envelope_shape() {
    type Edit = Box<dyn Fn(&mut Value)>;
    let cases: Vec<Edit> = vec![
        Box::new(|e| {
            e.as_object_mut().map(|o| o.remove("card"));
        }),
        Box::new(|e| e["card"] = json!(null)),
        Box::new(|e| e["card"] = json!(false)),
        Box::new(|e| e["card"] = json!(0)),
        Box::new(|e| e["card"] = json!("")),
        Box::new(|e| {
            e.as_object_mut().map(|o| o.remove("signature"));
        }),
        Box::new(|e| e["signature"] = json!("")),
        Box::new(|e| e["signature"] = json!(12)),
        Box::new(|e| e["signature"] = json!(["x"])),
        Box::new(|e| e["signedAt"] = json!("1767225600000")),
        Box::new(|e| {
            e.as_object_mut().map(|o| o.remove("expiresAt"));
        }),
        Box::new(|e| e["expiresAt"] = json!(null)),
    ];
    for (index, change) in cases.into_iter().enumerate() {
        let envelope = edit(good(), change);
        let event = assert_rejected(&envelope, "envelope-shape");
        assert_eq!(event.metadata.issuer, None, "case {index}");
    }
}

#[test]
fn card_shape_reasons_carry_the_card_error_code() {
    let cases = [
        (json!(5), "card-shape:a2a/bad-card"),
        (json!(["card"]), "card-shape:a2a/bad-card"),
        (json!({"issuer": "i", "agentId": "a", "capabilities": []}), "card-shape:a2a/missing-field"),
        (json!({"issuer": "i i", "agentId": "a", "capabilities": [], "version": "1.0"}), "card-shape:a2a/bad-field"),
        (
            json!({"issuer": "i", "agentId": "a", "capabilities": [], "version": "1.0",
                   "endpoints": [{"url": "http://localhost.evil/"}]}),
            "card-shape:a2a/insecure-endpoint",
        ),
    ];
    for (card, reason) in cases {
        let event = assert_rejected(&edit(good(), |e| e["card"] = card.clone()), reason);
        assert!(event.metadata.detail.as_deref().is_some_and(|detail| detail.starts_with("a2a/")), "{reason}");
        // Nothing from a card that failed validation is echoed into the audit log.
        assert_eq!((event.metadata.issuer, event.metadata.agent_id), (None, None));
    }
    assert_eq!(RejectReason::CardShape(CardErrorCode::MissingField).to_string(), "card-shape:a2a/missing-field");
}

#[test]
fn issuer_mismatch() {
    let (outcome, event) = verify_with(&good(), &ml_dsa().public_pem, options().with_expected_issuer("other.example"));
    assert_denied(&outcome, &event, "issuer-mismatch");
    assert_eq!(event.metadata.expected.as_deref(), Some("other.example"));
    assert_eq!(event.metadata.got.as_deref(), Some("agent.example.com"));
    let (outcome, _) = verify_with(&good(), &ml_dsa().public_pem, options().with_expected_issuer("agent.example.com"));
    assert!(outcome.valid);
}

#[test]
fn expired_and_future_signed_respect_the_clock_skew() {
    let key = &ml_dsa().key;
    let short = sign_card(&card(), key, &SignOptions::new().with_ttl(Duration::from_millis(1)).at(at_ms(T0_MS)))
        .expect("sign")
        .to_value();
    let pem = &ml_dsa().public_pem;
    let skew = VerifyOptions::new().clock_skew().as_millis() as u64;
    assert_eq!(skew, 300_000);

    // Zero skew: one millisecond after expiry is expired (blamejs: ttlMs 1, clockSkewMs 0).
    let zero = |now| VerifyOptions::new().with_clock_skew(Duration::ZERO).at(at_ms(now));
    let (outcome, event) = verify_with(&short, pem, zero(T0_MS + 2));
    assert_denied(&outcome, &event, "expired");
    assert_eq!(event.metadata.expires_at, Some((T0_MS + 1).into()));
    assert_eq!(event.metadata.now, Some(T0_MS + 2));
    assert!(verify_with(&short, pem, zero(T0_MS + 1)).0.valid, "at expiresAt exactly it is still valid");

    // Default skew: valid until expiresAt + 5 min.
    let default = |now| VerifyOptions::new().at(at_ms(now));
    assert!(verify_with(&short, pem, default(T0_MS + 1 + skew)).0.valid);
    let (outcome, event) = verify_with(&short, pem, default(T0_MS + 2 + skew));
    assert_denied(&outcome, &event, "expired");

    // Signed in the future: tolerated up to the skew.
    assert!(verify_with(&good(), pem, default(T0_MS - skew)).0.valid);
    let (outcome, event) = verify_with(&good(), pem, default(T0_MS - skew - 1));
    assert_denied(&outcome, &event, "future-signed");
    assert_eq!(event.metadata.signed_at, Some(T0_MS.into()));
    assert_eq!(event.metadata.now, Some(T0_MS - skew - 1));
    let (outcome, event) = verify_with(&good(), pem, zero(T0_MS - 1));
    assert_denied(&outcome, &event, "future-signed");
}

#[test]
fn card_too_large() {
    let size = ml_dsa().digest.canonical_payload().expect("jcs").len();
    let limit = |bytes| options().with_max_bytes(NonZeroUsize::new(bytes).expect("non-zero"));
    assert!(verify_with(&good(), &ml_dsa().public_pem, limit(size)).0.valid);
    let (outcome, event) = verify_with(&good(), &ml_dsa().public_pem, limit(size - 1));
    assert_denied(&outcome, &event, "card-too-large");
    assert_eq!((event.metadata.bytes, event.metadata.max_bytes), (Some(size), Some(size - 1)));

    // The default limit is 64 KiB of canonical bytes.
    let padding = "x".repeat(70 * 1024);
    let huge = edit(good(), |e| e["card"]["metadata"] = json!({"padding": padding}));
    assert_rejected(&huge, "card-too-large");
}

#[test]
fn signature_base64_bad() {
    let signature = good()["signature"].as_str().expect("signature").to_owned();
    for bad in [
        "not base64!".to_owned(),
        signature.trim_end_matches('=').to_owned(),    // unpadded
        signature.replace('+', "-").replace('/', "_"), // URL-safe alphabet
        format!("{signature}AAAA="),
        format!(" {signature}"),
    ] {
        if bad == signature {
            continue;
        }
        assert_rejected(&edit(good(), |e| e["signature"] = json!(bad)), "signature-base64-bad");
    }
}

#[test]
fn unreadable_and_unsupported_keys() {
    for (key, reason) in [
        ("", "key-malformed"),
        ("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", "key-malformed"),
        (golden("ml-dsa-87.pyca.private.pem").as_str(), "key-malformed"),
        (golden("x25519.openssl.public.pem").as_str(), "key-unsupported"),
    ] {
        let (outcome, event) = verify_with(&good(), key, options());
        assert_denied(&outcome, &event, reason);
        assert!(event.metadata.detail.is_some(), "{reason}");
        assert_eq!(event.metadata.algorithm, None);
    }
    // A provider without Ed25519 does not accept an Ed25519 key.
    let ed25519 = fixture(Algorithm::Ed25519);
    let post_quantum = options().with_provider(CryptoProvider::post_quantum_only());
    let (outcome, event) = verify_with(&ed25519.digest.to_value(), &ed25519.public_pem, post_quantum);
    assert_denied(&outcome, &event, "key-unsupported");
    assert!(event.metadata.detail.as_deref().is_some_and(|detail| detail.contains("1.3.101.112")));
}

#[test]
fn signature_mismatch() {
    // blamejs's own test: a capability pushed after signing.
    let tampered = edit(good(), |e| e["card"]["capabilities"].as_array_mut().expect("array").push(json!("sneaky")));
    let event = assert_rejected(&tampered, "signature-mismatch");
    assert_eq!(event.metadata.issuer.as_deref(), Some("agent.example.com"));
    assert_eq!(event.metadata.agent_id.as_deref(), Some("ops-bot-1"));
    assert_eq!(event.metadata.algorithm, Some(Algorithm::MlDsa87));

    // The timestamps are signed too.
    assert_rejected(&edit(good(), |e| e["expiresAt"] = json!(T0_MS + 2 * DAY_MS)), "signature-mismatch");
    // A signature by the right key over something else, and another algorithm's signature.
    let other = STANDARD.encode(ml_dsa().key.sign(b"something else", Randomness::Deterministic).expect("sign"));
    assert_rejected(&edit(good(), |e| e["signature"] = json!(other)), "signature-mismatch");
    let other_card = &fixture(Algorithm::MlDsa87).digest;
    let mut renamed = other_card.clone();
    renamed.card.agent_id = "ops-bot-2".into();
    let swapped = edit(renamed.to_value(), |e| e["signature"] = json!(other_card.signature));
    assert_rejected(&swapped, "signature-mismatch");
    let ed25519 = fixture(Algorithm::Ed25519).digest.signature.clone();
    assert_rejected(&edit(good(), |e| e["signature"] = json!(ed25519)), "signature-mismatch");
    let (outcome, event) = verify_with(&good(), &fixture(Algorithm::SlhDsaShake256f).public_pem, options());
    assert_denied(&outcome, &event, "signature-mismatch");
    assert_eq!(outcome.algorithm, Some(Algorithm::SlhDsaShake256f));
}

#[test]
fn the_first_failing_check_wins_in_blamejs_order() {
    // An envelope with every defect; removing them one at a time walks the reasons in order.
    let skew = 300_000;
    let now = T0_MS + 60_000;
    let mut envelope = json!({
        "card": {"issuer": "someone.else", "agentId": "a", "capabilities": [], "version": "1.0",
                 "metadata": {"padding": "x".repeat(300)}},
        "signedAt": now + skew + 1,
        "expiresAt": now - skew - 1,
        "signature": "***",
    });
    let options =
        options().with_expected_issuer("agent.example.com").with_max_bytes(NonZeroUsize::new(250).expect("non-zero"));
    let unsupported = golden("x25519.openssl.public.pem");
    let mut reasons = Vec::new();
    let mut step = |envelope: &Value, key: &str| {
        let outcome = verify_card(envelope, key, &options);
        reasons.push(outcome.reason.map_or("valid", RejectReason::as_str));
    };
    step(&json!([envelope.clone()]), &unsupported);
    let mut no_signature = envelope.clone();
    no_signature["signature"] = json!("");
    step(&no_signature, &unsupported);
    let card = envelope["card"].clone();
    envelope["card"]["version"] = json!(null);
    step(&envelope, &unsupported);
    envelope["card"] = card;
    step(&envelope, &unsupported);
    envelope["card"]["issuer"] = json!("agent.example.com");
    step(&envelope, &unsupported);
    envelope["expiresAt"] = json!(now + DAY_MS);
    step(&envelope, &unsupported);
    envelope["signedAt"] = json!(now);
    step(&envelope, &unsupported);
    envelope["card"]["metadata"] = json!({});
    step(&envelope, &unsupported);
    envelope["signature"] = json!("AAAA");
    step(&envelope, "not a key");
    step(&envelope, &unsupported);
    step(&envelope, &ml_dsa().public_pem);
    assert_eq!(
        reasons,
        vec![
            "envelope-not-object",
            "envelope-shape",
            "card-shape:a2a/missing-field",
            "issuer-mismatch",
            "expired",
            "future-signed",
            "card-too-large",
            "signature-base64-bad",
            "key-malformed",
            "key-unsupported",
            "signature-mismatch",
        ]
    );
}

#[test]
fn sign_card_checks_its_inputs() {
    let key = &ml_dsa().key;
    let sign = |ttl: Duration| sign_card(&card(), key, &SignOptions::new().with_ttl(ttl).at(at_ms(T0_MS)));
    for ttl in [Duration::ZERO, Duration::from_micros(1500), Duration::from_nanos(1), Duration::from_secs(u64::MAX)] {
        let error = sign(ttl).expect_err("expected an error");
        assert_eq!(error, CardError::BadTtl, "{ttl:?}");
        assert_eq!(error.code().as_str(), "a2a/bad-ttl");
    }
    // expiresAt must stay an integer every JSON peer reads exactly.
    let to_limit = Duration::from_millis(accord_card::envelope::MAX_SAFE_INTEGER - T0_MS);
    assert_eq!(sign(to_limit).expect("sign").expires_at, accord_card::envelope::MAX_SAFE_INTEGER);
    assert_eq!(sign(to_limit + Duration::from_millis(1)).expect_err("expected an error"), CardError::BadTtl);

    // A card built by hand is validated before signing.
    let mut bad = card();
    bad.issuer = "not valid".into();
    assert_eq!(
        sign_card(&bad, key, &SignOptions::new()).expect_err("expected an error").code(),
        CardErrorCode::BadField
    );
    bad = card();
    bad.endpoints = Some(vec![accord_card::Endpoint::new("http://localhost.evil/")]);
    assert_eq!(
        sign_card(&bad, key, &SignOptions::new()).expect_err("expected an error").code(),
        CardErrorCode::InsecureEndpoint
    );
}

#[test]
fn signing_emits_card_signed_with_public_facts_only() {
    let capture = Arc::new(Capture::default());
    let options = SignOptions::new().at(at_ms(T0_MS)).with_audit_sink(capture.clone());
    let envelope = sign_card(&card(), &ml_dsa().key, &options).expect("sign");
    let event = capture.only();
    assert_eq!(event.action, AuditAction::CardSigned);
    assert_eq!(event.outcome, AuditOutcome::Success);
    assert_eq!(event.at, T0_MS);
    assert_eq!(event.metadata.issuer.as_deref(), Some("agent.example.com"));
    assert_eq!(event.metadata.agent_id.as_deref(), Some("ops-bot-1"));
    assert_eq!(event.metadata.expires_at, Some((T0_MS + DAY_MS).into()));
    assert_eq!(event.metadata.algorithm, Some(Algorithm::MlDsa87));
    assert_eq!(event.metadata.signing_input, Some(SigningInput::Shake256Digest));
    let line = event.to_json_line();
    assert!(!line.contains(&envelope.signature[..40]), "no signature in the event");
    let private = golden("ml-dsa-87.pyca.private.pem");
    let body = private.lines().nth(1).expect("body");
    assert!(!line.contains(&body[..12]), "no key material in the event");
}

#[test]
fn deterministic_signing_reproduces_golden_envelopes() {
    let key = PrivateKey::from_pem(&golden("ml-dsa-87.noble-both.private.pem")).expect("key");
    let golden_envelope: Value =
        serde_json::from_str(&golden("envelope.ml-dsa-87.noble-deterministic.shake256-digest.json")).expect("json");
    let card: Card = serde_json::from_value(golden_envelope["card"].clone()).expect("card");
    let options = SignOptions::new().at(at_ms(T0_MS)).with_randomness(Randomness::Deterministic);
    let envelope = sign_card(&card, &key, &options).expect("sign");
    assert_eq!(envelope.to_value(), golden_envelope);
}

#[test]
fn json_lines_sink_writes_one_line_per_event() {
    let sink = Arc::new(JsonLinesSink::new(Vec::new()));
    let options = options().with_audit_sink(sink.clone());
    assert!(verify_card(&good(), &ml_dsa().public_pem, &options).valid);
    verify_card(&json!(1), &ml_dsa().public_pem, &options);
    verify_card(&good(), &ml_dsa().public_pem, &options.clone().with_expected_issuer("x"));
    let text = String::from_utf8(sink.take()).expect("utf-8");
    let lines: Vec<Value> = text.lines().map(|line| serde_json::from_str(line).expect("json line")).collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["action"], "a2a.card_verified");
    assert_eq!(lines[0]["outcome"], "success");
    assert_eq!(lines[0]["metadata"]["issuer"], "agent.example.com");
    assert_eq!(lines[0]["metadata"]["agentId"], "ops-bot-1");
    assert_eq!(lines[0]["metadata"]["signingInput"], "shake256-digest");
    assert_eq!(lines[0]["metadata"]["algorithm"], "ml-dsa-87");
    assert_eq!(
        lines[1],
        json!({"action": "a2a.card_rejected", "outcome": "denied", "reason": "envelope-not-object",
                                "at": T0_MS + 60_000, "metadata": {}})
    );
    assert_eq!(lines[2]["reason"], "issuer-mismatch");
    assert_eq!(lines[2]["metadata"]["expected"], "x");
    assert_eq!(lines[2]["metadata"]["got"], "agent.example.com");
    assert!(sink.take().is_empty(), "take empties the buffer");
}

#[test]
fn verify_outcome_serializes_for_the_cli() {
    let outcome = verify_card(&good(), &ml_dsa().public_pem, &options());
    let json = serde_json::to_value(&outcome).expect("json");
    assert_eq!(json["valid"], true);
    assert_eq!(json["reason"], Value::Null);
    assert_eq!(json["signingInput"], "shake256-digest");
    assert_eq!(json["claims"]["agentId"], "ops-bot-1");
    let denied = serde_json::to_value(verify_card(&json!({}), &ml_dsa().public_pem, &options())).expect("json");
    assert_eq!(denied["reason"], "envelope-shape");
}

#[test]
fn mutated_envelopes_never_panic_and_never_verify_different_content() {
    let original = serde_json::to_vec(&good()).expect("json");
    let reference = good();
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let options = options();
    let mut accepted = 0;
    for _ in 0..400 {
        let mut mutated = original.clone();
        for _ in 0..=next() % 3 {
            let index = (next() % mutated.len() as u64) as usize;
            match next() % 3 {
                0 => mutated[index] ^= 1 << (next() % 8),
                1 => {
                    mutated.remove(index);
                }
                _ => mutated.insert(index, b" {}[]\",:0a\\"[(next() % 11) as usize]),
            }
        }
        let outcome = verify_card_json(&mutated, &ml_dsa().public_pem, &options);
        if outcome.valid {
            // Only a change that leaves the JSON meaning intact (such as added whitespace) may pass.
            let parsed: Value = serde_json::from_slice(&mutated).expect("accepted text parses");
            assert_eq!(parsed, reference, "accepted {}", String::from_utf8_lossy(&mutated));
            accepted += 1;
        }
    }
    assert!(accepted < 400, "most mutations must be refused");
}
