//! Signed card envelopes (`accord_card::verify_card_json`) and the public keys they are checked
//! against: any bytes in, never a panic. The verifier is deterministic, an accepted envelope
//! carries its card, and — since the fuzzer cannot forge Ed25519 — every text it accepts must
//! canonicalize to bytes the seed key really signed: two texts with one signature must not mean
//! two different cards.
#![no_main]

use std::sync::LazyLock;
use std::time::{Duration, SystemTime};

use accord_card::{CryptoProvider, PublicKey, VerifyOptions, canonical_payload, verify_card_json};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// The key that signed the seeds in `fuzz/corpus/card_verify/` (`accord card sign`).
const PUBLIC_PEM: &str = include_str!("../corpus/card_verify/ed25519.public.pem");
/// The seeds: one signed over the SHAKE256 digest, one over the raw canonical bytes.
const SEEDS: [&str; 2] =
    [include_str!("../corpus/card_verify/signed.json"), include_str!("../corpus/card_verify/signed-raw.json")];

static KEY: LazyLock<PublicKey> = LazyLock::new(|| PublicKey::from_pem(PUBLIC_PEM).expect("the seed key reads"));
/// Verifying at the seeds' signing time keeps them valid whatever the clock says.
static OPTIONS: LazyLock<VerifyOptions> = LazyLock::new(|| {
    let seed: Value = serde_json::from_str(SEEDS[0]).expect("seed is JSON");
    let signed_at = seed["signedAt"].as_u64().expect("seed signedAt");
    VerifyOptions::new().at(SystemTime::UNIX_EPOCH + Duration::from_millis(signed_at))
});
static SIGNED: LazyLock<Vec<Vec<u8>>> = LazyLock::new(|| {
    SEEDS
        .iter()
        .map(|seed| payload(&serde_json::from_str(seed).expect("seed is JSON")).expect("seed payload"))
        .collect()
});

fn payload(envelope: &Value) -> Option<Vec<u8>> {
    canonical_payload(&envelope["card"], &envelope["signedAt"], &envelope["expiresAt"]).ok()
}

fuzz_target!(|data: &[u8]| {
    let outcome = verify_card_json(data, &*KEY, &OPTIONS);
    assert_eq!(outcome, verify_card_json(data, &*KEY, &OPTIONS), "not deterministic");
    assert_eq!(outcome.valid, outcome.reason.is_none());
    if outcome.valid {
        assert!(outcome.claims.is_some() && outcome.signing_input.is_some());
        let envelope: Value = serde_json::from_slice(data).expect("an accepted envelope is JSON");
        let signed = payload(&envelope).expect("an accepted envelope canonicalizes");
        assert!(SIGNED.contains(&signed), "accepted bytes the key never signed: {}", String::from_utf8_lossy(&signed));
    }
    if let Ok(value) = serde_json::from_slice::<Value>(data) {
        let problems = accord_card::card_problems(&value);
        assert_eq!(accord_card::validate_card_value(&value).is_ok(), problems.is_empty());
    }

    // The same bytes as a public key, PEM or DER: refused or read, never a panic; a key that
    // reads writes back to a key that reads the same.
    let provider = CryptoProvider::default_provider();
    if let Ok(key) = provider.public_key_from_spki_der(data) {
        let der = key.to_spki_der().expect("a read key writes");
        let again = provider.public_key_from_spki_der(&der).expect("a written key reads");
        assert_eq!(again.to_spki_der().expect("writes"), der);
    }
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(key) = provider.public_key_from_pem(text)
    {
        let pem = key.to_pem().expect("a read key writes");
        assert!(provider.public_key_from_pem(&pem).is_ok());
    }
});
