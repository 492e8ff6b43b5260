//! `accord card sign --jws`, `accord card verify` on JWS cards, `accord card jwks`, and the JWS
//! signature `accord serve --signing-key` adds to the served card, end to end through the binary.

mod support;

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::{Value, json};
use support::Served;

fn accord(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_accord")).args(args).env("ACCORD_LOG", "error").output().expect("run accord")
}

fn text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn explain(output: &Output) -> String {
    format!("stdout: {}\nstderr: {}", text(output), String::from_utf8_lossy(&output.stderr))
}

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("accord-jws-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Self(dir)
    }

    fn path(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }

    fn write(&self, name: &str, value: &Value) -> String {
        let path = self.path(name);
        std::fs::write(&path, serde_json::to_vec_pretty(value).expect("json")).expect("write");
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn agent_card() -> Value {
    json!({
        "name": "Example Agent",
        "description": "An agent whose card is signed, ünïcödé",
        "version": "1.0.0",
        "supportedInterfaces": [{"url": "https://agent.example.com/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": true},
        "defaultInputModes": ["application/json"],
        "defaultOutputModes": ["application/json"],
        "skills": [{"id": "echo", "name": "echo", "description": "Echoes.", "tags": ["echo"]}]
    })
}

#[test]
fn sign_with_three_algorithms_then_verify_by_pem_and_jwks() {
    let dir = Scratch::new("cli");
    let keys = dir.path("keys");
    for alg in ["ecdsa-p256", "ed25519", "ml-dsa-87"] {
        let made = accord(&["card", "keygen", "--alg", alg, "--out", &keys]);
        assert!(made.status.success(), "{alg}: {}", explain(&made));
    }
    let key = |alg: &str, kind: &str| dir.path(&format!("keys/{alg}.{kind}.pem"));
    let card = dir.write("card.json", &agent_card());

    // Three signers, one after the other, each with its kid.
    let mut current = card.clone();
    for (index, (alg, kid)) in [("ecdsa-p256", "es-1"), ("ed25519", "ed-1"), ("ml-dsa-87", "pq-1")].iter().enumerate() {
        let out = dir.path(&format!("signed-{index}.json"));
        let signed =
            accord(&["card", "sign", "--jws", "--key", &key(alg, "private"), "--kid", kid, &current, "--out", &out]);
        assert!(signed.status.success(), "{alg}: {}", explain(&signed));
        current = out;
    }
    let signed: Value = serde_json::from_slice(&std::fs::read(&current).expect("signed")).expect("json");
    assert_eq!(signed["signatures"].as_array().expect("signatures").len(), 3);

    // The JWKS of the three public keys, under the same kids.
    let jwks = accord(&[
        "card",
        "jwks",
        &key("ecdsa-p256", "public"),
        &key("ed25519", "public"),
        &key("ml-dsa-87", "public"),
        "--kid",
        "es-1",
        "--kid",
        "ed-1",
        "--kid",
        "pq-1",
    ]);
    assert!(jwks.status.success(), "{}", explain(&jwks));
    let jwks: Value = serde_json::from_slice(&jwks.stdout).expect("jwks json");
    let kinds: Vec<&str> =
        jwks["keys"].as_array().expect("keys").iter().map(|k| k["kty"].as_str().unwrap_or("")).collect();
    assert_eq!(kinds, ["EC", "OKP", "AKP"]);
    let jwks_path = dir.write("jwks.json", &jwks);

    let verified = accord(&["card", "verify", &current, "--jwks", &jwks_path]);
    assert_eq!(verified.status.code(), Some(0), "{}", explain(&verified));
    let out = text(&verified);
    assert!(out.starts_with("valid\n"), "{out}");
    for line in [
        "signature 0: valid (alg ES256, kid es-1",
        "signature 1: valid (alg EdDSA, kid ed-1",
        "signature 2: valid (alg ML-DSA-87, kid pq-1",
    ] {
        assert!(out.contains(line), "{line}: {out}");
    }
    // A PEM is trusted for any kid.
    let by_pem = accord(&["card", "verify", &current, "--pub", &key("ml-dsa-87", "public"), "--json"]);
    assert_eq!(by_pem.status.code(), Some(0), "{}", explain(&by_pem));
    let outcome: Value = serde_json::from_slice(&by_pem.stdout).expect("json");
    assert_eq!(outcome["signatures"][0]["reason"], "alg-key-mismatch");
    assert_eq!(outcome["signatures"][2]["valid"], true);
    // Only ES256 allowed: the ES256 signature carries the card alone.
    let only = accord(&["card", "verify", &current, "--jwks", &jwks_path, "--algorithms", "ES256", "--json"]);
    let outcome: Value = serde_json::from_slice(&only.stdout).expect("json");
    assert_eq!(only.status.code(), Some(0));
    assert_eq!(outcome["signatures"][1]["reason"], "alg-not-allowed");

    // Tampered: every signature fails, each algorithm with signature-mismatch.
    let mut tampered = signed.clone();
    tampered["skills"][0]["description"] = "Deletes everything.".into();
    let tampered = dir.write("tampered.json", &tampered);
    let refused = accord(&["card", "verify", &tampered, "--jwks", &jwks_path]);
    assert_eq!(refused.status.code(), Some(1), "{}", explain(&refused));
    let out = text(&refused);
    assert!(out.starts_with("invalid: signature-mismatch"), "{out}");
    assert_eq!(out.matches("invalid: signature-mismatch (alg").count(), 3, "{out}");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("signature-mismatch"));

    // Unknown kids: a JWKS with only another key.
    let other = dir.path("other");
    assert!(accord(&["card", "keygen", "--alg", "ed25519", "--out", &other]).status.success());
    let other_jwks = accord(&["card", "jwks", &dir.path("other/ed25519.public.pem"), "--kid", "someone-else"]);
    let other_jwks = dir.write("other-jwks.json", &serde_json::from_slice(&other_jwks.stdout).expect("jwks"));
    let unknown = accord(&["card", "verify", &current, "--jwks", &other_jwks]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(text(&unknown).starts_with("invalid: key-unknown"), "{}", text(&unknown));

    // The old envelope format still goes through the same command.
    let identity = dir.write(
        "identity.json",
        &json!({"issuer": "agent.example.com", "agentId": "bot", "version": "1.0.0", "capabilities": ["chat"]}),
    );
    let envelope = dir.path("envelope.json");
    let made = accord(&["card", "sign", "--key", &key("ml-dsa-87", "private"), &identity, "--out", &envelope]);
    assert!(made.status.success(), "{}", explain(&made));
    let checked = accord(&["card", "verify", &envelope, "--pub", &key("ml-dsa-87", "public")]);
    assert_eq!(checked.status.code(), Some(0), "{}", explain(&checked));
    assert!(text(&checked).contains("signing input: shake256-digest"));
    let two = accord(&[
        "card",
        "verify",
        &envelope,
        "--pub",
        &key("ml-dsa-87", "public"),
        "--pub",
        &key("ed25519", "public"),
    ]);
    assert_eq!(two.status.code(), Some(2), "an envelope has one key");
}

#[test]
fn bad_input_gets_clear_errors() {
    let dir = Scratch::new("bad");
    let keys = dir.path("keys");
    for alg in ["ed25519", "slh-dsa-shake-256f"] {
        assert!(accord(&["card", "keygen", "--alg", alg, "--out", &keys]).status.success());
    }
    let card = dir.write("card.json", &agent_card());
    let ed = dir.path("keys/ed25519.private.pem");

    let slh = accord(&["card", "sign", "--jws", "--key", &dir.path("keys/slh-dsa-shake-256f.private.pem"), &card]);
    assert_eq!(slh.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&slh.stderr).contains("no JWS identifier"), "{}", explain(&slh));
    let http_jku = accord(&["card", "sign", "--jws", "--key", &ed, "--jku", "http://keys.example/jwks", &card]);
    assert_eq!(http_jku.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&http_jku.stderr).contains("https"), "{}", explain(&http_jku));
    let not_object = dir.write("list.json", &json!([1, 2]));
    assert_eq!(accord(&["card", "sign", "--jws", "--key", &ed, &not_object]).status.code(), Some(1));
    assert_eq!(
        accord(&["card", "sign", "--key", &ed, "--kid", "x", &card]).status.code(),
        Some(2),
        "--kid needs --jws"
    );

    let signed = accord(&["card", "sign", "--jws", "--key", &ed, &card]);
    assert!(signed.status.success(), "{}", explain(&signed));
    let signed = dir.write("signed.json", &serde_json::from_slice(&signed.stdout).expect("json"));
    let no_keys = accord(&["card", "verify", &signed]);
    assert_eq!(no_keys.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&no_keys.stderr).contains("--pub"), "{}", explain(&no_keys));
    let bad_jwks = dir.write("bad-jwks.json", &json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "!!"}]}));
    let refused = accord(&["card", "verify", &signed, "--jwks", &bad_jwks]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("JWKS key 0"), "{}", explain(&refused));
    let bad_alg =
        accord(&["card", "verify", &signed, "--pub", &dir.path("keys/ed25519.public.pem"), "--algorithms", "HS256"]);
    assert_eq!(bad_alg.status.code(), Some(2));
    let remote_http = accord(&["card", "verify", &signed, "--jwks", "http://keys.example/jwks"]);
    assert_eq!(remote_http.status.code(), Some(2), "plain http only on loopback");
}

#[test]
fn serve_signing_key_signs_the_served_card() {
    let dir = Scratch::new("serve");
    let keys = dir.path("keys");
    assert!(accord(&["card", "keygen", "--alg", "ecdsa-p256", "--out", &keys]).status.success());
    let private = dir.path("keys/ecdsa-p256.private.pem");
    let public = dir.path("keys/ecdsa-p256.public.pem");
    let served = Served::start(&["--store", "memory", "--signing-key", &private, "--card-kid", "demo-es-1"]);

    let jwks = accord(&["card", "jwks", &public, "--kid", "demo-es-1"]);
    let jwks = dir.write("jwks.json", &serde_json::from_slice(&jwks.stdout).expect("jwks"));
    let verified = accord(&["card", "verify", &served.url, "--jws", "--jwks", &jwks]);
    assert_eq!(verified.status.code(), Some(0), "{}", explain(&verified));
    assert!(text(&verified).contains("signature 0: valid (alg ES256, kid demo-es-1"), "{}", text(&verified));

    // The envelope is still served and verifies with the same key.
    let envelope = accord(&["card", "verify", &served.url, "--pub", &public, "--issuer", "127.0.0.1"]);
    assert_eq!(envelope.status.code(), Some(0), "{}", explain(&envelope));
    assert!(text(&envelope).contains("algorithm: ecdsa-p256"));

    drop(served);

    // A bad jku stops serve before it listens.
    let bad = accord(&["serve", "--port", "0", "--signing-key", &private, "--card-jku", "ftp://x"]);
    assert_eq!(bad.status.code(), Some(2), "{}", explain(&bad));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--card-jku"));
}
