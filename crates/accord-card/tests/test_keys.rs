//! Keys: PEM reading and writing against files made by independent implementations
//! (`testdata/keys/README.md`), algorithm detection from the OID, typed errors for everything
//! else, and signatures that match other implementations byte for byte.

use std::fs;
use std::path::Path;

use accord_card::{
    Algorithm, CryptoProvider, KeyError, PrivateKey, PublicKey, Randomness, canonical_payload, shake256_64,
};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

fn golden(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/keys").join(name);
    fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn der_of(pem: &str) -> Vec<u8> {
    let body: String = pem.lines().filter(|line| !line.starts_with("-----")).collect();
    STANDARD.decode(body).expect("PEM body is base64")
}

#[test]
fn pyca_ml_dsa_87_keys_are_read_and_written_back_byte_for_byte() {
    let private_pem = golden("ml-dsa-87.pyca.private.pem");
    let public_pem = golden("ml-dsa-87.pyca.public.pem");
    let key = PrivateKey::from_pem(&private_pem).expect("pyca private key");
    assert_eq!(key.algorithm(), Algorithm::MlDsa87);
    assert_eq!(key.to_pem().expect("pem").as_str(), private_pem);
    assert_eq!(key.public_key().to_pem().expect("pem"), public_pem, "same public key derived from the seed");
    let public = PublicKey::from_pem(&public_pem).expect("pyca public key");
    assert_eq!(public.algorithm(), Algorithm::MlDsa87);
    assert_eq!(public.to_pem().expect("pem"), public_pem);
    assert_eq!(public, key.public_key());
    assert_eq!(public.fingerprint(), key.public_key().fingerprint());
    assert!(public.fingerprint().is_some_and(|f| f.starts_with("sha256:") && f.len() == 71));
}

#[test]
fn noble_slh_dsa_and_openssl_ed25519_keys_round_trip() {
    for (name, algorithm) in
        [("slh-dsa-shake-256f.noble", Algorithm::SlhDsaShake256f), ("ed25519.openssl", Algorithm::Ed25519)]
    {
        let private_pem = golden(&format!("{name}.private.pem"));
        let public_pem = golden(&format!("{name}.public.pem"));
        let key = PrivateKey::from_pem(&private_pem).unwrap_or_else(|error| panic!("{name}: {error}"));
        assert_eq!(key.algorithm(), algorithm, "{name}");
        assert_eq!(key.to_pem().expect("pem").as_str(), private_pem, "{name}");
        assert_eq!(key.public_key().to_pem().expect("pem"), public_pem, "{name}");
        let public = PublicKey::from_pem(&public_pem).unwrap_or_else(|error| panic!("{name}: {error}"));
        assert_eq!(public.algorithm(), algorithm, "{name}");
        assert_eq!(public.to_pem().expect("pem"), public_pem, "{name}");
        // DER entry points agree with PEM.
        let from_der = PrivateKey::from_pkcs8_der(&der_of(&private_pem)).expect("der");
        assert_eq!(from_der.public_key(), public, "{name}");
        assert_eq!(PublicKey::from_spki_der(&der_of(&public_pem)).expect("der"), public, "{name}");
    }
}

#[test]
fn openssl_both_form_gives_the_seed_and_is_checked() {
    let both = PrivateKey::from_pem(&golden("ml-dsa-87.noble-both.private.pem")).expect("both form");
    // Same seed as the pyca key, so it is written back in pyca's seed-only form.
    assert_eq!(both.to_pem().expect("pem").as_str(), golden("ml-dsa-87.pyca.private.pem"));
    assert_eq!(both.public_key().to_pem().expect("pem"), golden("ml-dsa-87.pyca.public.pem"));

    let mismatched = PrivateKey::from_pem(&golden("ml-dsa-87.noble-both-mismatched.private.pem"));
    assert_eq!(
        mismatched.expect_err("expected an error"),
        KeyError::InconsistentKeyPair { algorithm: Algorithm::MlDsa87 }
    );

    match PrivateKey::from_pem(&golden("ml-dsa-87.noble-expanded.private.pem")) {
        Err(KeyError::UnsupportedEncoding { algorithm: Algorithm::MlDsa87, detail }) => {
            assert!(detail.contains("seed"), "{detail}");
        }
        other => panic!("expected UnsupportedEncoding, got {other:?}"),
    }
}

#[test]
fn unsupported_algorithms_are_typed_errors() {
    let (file, oid) = ("x25519.openssl.private.pem", "1.3.101.110");
    let error = PrivateKey::from_pem(&golden(file)).expect_err("expected an error");
    assert_eq!(error, KeyError::UnsupportedAlgorithm { oid: oid.into() }, "{file}");
    assert!(error.to_string().contains(oid));
    // A provider without Ed25519 and ECDSA treats those keys the same way.
    let post_quantum = CryptoProvider::post_quantum_only();
    assert_eq!(
        post_quantum.public_key_from_pem(&golden("ed25519.openssl.public.pem")).expect_err("expected an error"),
        KeyError::UnsupportedAlgorithm { oid: "1.3.101.112".into() }
    );
    assert_eq!(
        post_quantum.public_key_from_pem(&golden("p256.openssl.public.pem")).expect_err("expected an error"),
        KeyError::UnsupportedAlgorithm { oid: "1.2.840.10045.2.1".into() }
    );
    assert_eq!(
        post_quantum.generate(Algorithm::Ed25519).expect_err("expected an error"),
        KeyError::AlgorithmNotInProvider { algorithm: Algorithm::Ed25519 }
    );
}

#[test]
fn openssl_p256_keys_are_ecdsa_p256_keys() {
    let private = PrivateKey::from_pem(&golden("p256.openssl.private.pem")).expect("OpenSSL P-256 private key");
    let public = PublicKey::from_pem(&golden("p256.openssl.public.pem")).expect("OpenSSL P-256 public key");
    assert_eq!(private.algorithm(), Algorithm::EcdsaP256);
    assert_eq!(private.public_key(), public, "the pair belongs together");
    assert_eq!(public.to_pem().expect("pem"), golden("p256.openssl.public.pem"), "SPKI written back identically");
    let signature = private.sign(b"message", Randomness::Hedged).expect("sign");
    assert_eq!(signature.len(), 64, "JOSE r || s");
    assert!(public.verify(b"message", &signature));
    assert!(!public.verify(b"massage", &signature));
    // Written and read back by Accord, the key is the same key.
    let again = PrivateKey::from_pem(&private.to_pem().expect("pem")).expect("read back");
    assert_eq!(again.public_key(), public);
}

#[test]
fn wrong_kinds_of_pem_are_typed_errors() {
    let encrypted = PrivateKey::from_pem(&golden("ed25519.openssl.encrypted.pem")).expect_err("expected an error");
    assert_eq!(
        encrypted,
        KeyError::UnexpectedPemLabel { found: "ENCRYPTED PRIVATE KEY".into(), expected: "PRIVATE KEY" }
    );
    let public_as_private = PrivateKey::from_pem(&golden("ml-dsa-87.pyca.public.pem")).expect_err("expected an error");
    assert_eq!(public_as_private, KeyError::UnexpectedPemLabel { found: "PUBLIC KEY".into(), expected: "PRIVATE KEY" });
    let private_as_public = PublicKey::from_pem(&golden("ml-dsa-87.pyca.private.pem")).expect_err("expected an error");
    assert_eq!(private_as_public, KeyError::UnexpectedPemLabel { found: "PRIVATE KEY".into(), expected: "PUBLIC KEY" });

    for garbage in ["", "hello", "-----BEGIN PUBLIC KEY-----\n!!!!\n-----END PUBLIC KEY-----\n"] {
        assert!(matches!(PublicKey::from_pem(garbage), Err(KeyError::Pem { .. })), "{garbage:?}");
        assert!(matches!(PrivateKey::from_pem(garbage), Err(KeyError::Pem { .. })), "{garbage:?}");
    }
    let not_a_key = "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n";
    assert!(matches!(PublicKey::from_pem(not_a_key), Err(KeyError::Malformed { .. })));
    // Surrounding whitespace and CRLF line endings are fine.
    let crlf = format!("\n  {}  \n", golden("ml-dsa-87.pyca.public.pem").replace('\n', "\r\n"));
    assert_eq!(PublicKey::from_pem(&crlf).expect("crlf").algorithm(), Algorithm::MlDsa87);
}

#[test]
fn public_keys_of_the_wrong_length_are_malformed() {
    // SPKI with a known OID but a 10-byte key: SEQUENCE { SEQUENCE { OID }, BIT STRING }.
    for (oid, algorithm) in [
        (vec![0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03, 0x13], Algorithm::MlDsa87),
        (vec![0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03, 0x1f], Algorithm::SlhDsaShake256f),
        (vec![0x2b, 0x65, 0x70], Algorithm::Ed25519),
    ] {
        let mut algorithm_id = vec![0x06, oid.len() as u8];
        algorithm_id.extend(&oid);
        let mut body = vec![0x30, algorithm_id.len() as u8];
        body.extend(algorithm_id);
        body.extend([0x03, 11, 0]);
        body.extend([7u8; 10]);
        let mut der = vec![0x30, body.len() as u8];
        der.extend(body);
        match PublicKey::from_spki_der(&der) {
            Err(KeyError::Malformed { detail }) => assert!(detail.contains("bytes"), "{algorithm}: {detail}"),
            other => panic!("{algorithm}: expected Malformed, got {other:?}"),
        }
    }
}

#[test]
fn corrupted_key_files_never_panic() {
    let files = [
        "ml-dsa-87.pyca.private.pem",
        "ml-dsa-87.pyca.public.pem",
        "ml-dsa-87.noble-both.private.pem",
        "slh-dsa-shake-256f.noble.private.pem",
        "slh-dsa-shake-256f.noble.public.pem",
        "ed25519.openssl.private.pem",
        "ed25519.openssl.public.pem",
    ];
    for file in files {
        let der = der_of(&golden(file));
        let parse = |bytes: &[u8]| {
            let _ = PrivateKey::from_pkcs8_der(bytes);
            let _ = PublicKey::from_spki_der(bytes);
        };
        // Every truncation is refused.
        for len in 0..der.len() {
            assert!(PrivateKey::from_pkcs8_der(&der[..len]).is_err(), "{file} truncated to {len}");
            assert!(PublicKey::from_spki_der(&der[..len]).is_err(), "{file} truncated to {len}");
        }
        // Flipped bits in the structure (first 40 bytes) give an error or a key, never a panic.
        for index in 0..der.len().min(40) {
            for bit in [0x01, 0x80] {
                let mut corrupted = der.clone();
                corrupted[index] ^= bit;
                parse(&corrupted);
            }
        }
    }
}

#[test]
fn private_keys_do_not_print_themselves() {
    let pem = golden("ml-dsa-87.pyca.private.pem");
    let key = PrivateKey::from_pem(&pem).expect("key");
    let printed = format!("{key:?} {key:#?}");
    assert!(printed.contains("MlDsa87"), "{printed}");
    let body = pem.lines().nth(1).expect("body line");
    assert!(!printed.contains(&body[..16]), "{printed}");
    assert!(!printed.contains("000102030405"), "{printed}");
    let public = format!("{:?}", key.public_key());
    assert!(public.contains("sha256:"), "{public}");
}

#[test]
fn generated_keys_sign_verify_and_round_trip() {
    for algorithm in [Algorithm::MlDsa87, Algorithm::Ed25519] {
        let key = PrivateKey::generate(algorithm).expect("generate");
        let public = key.public_key();
        let signature = key.sign(b"message", Randomness::Hedged).expect("sign");
        assert_eq!(signature.len(), algorithm.signature_len(), "{algorithm}");
        assert!(public.verify(b"message", &signature), "{algorithm}");
        assert!(!public.verify(b"messagE", &signature), "{algorithm}");
        assert!(!public.verify(b"message", &signature[1..]), "{algorithm}");
        assert!(!public.verify(b"message", &[]), "{algorithm}");
        let mut flipped = signature.clone();
        flipped[signature.len() / 2] ^= 1;
        assert!(!public.verify(b"message", &flipped), "{algorithm}");

        let reread = PrivateKey::from_pem(&key.to_pem().expect("pem")).expect("reread");
        assert_eq!(reread.public_key(), public, "{algorithm}");
        assert_eq!(PublicKey::from_pem(&public.to_pem().expect("pem")).expect("reread"), public);
        // Two fresh keys differ.
        assert_ne!(PrivateKey::generate(algorithm).expect("generate").public_key(), public, "{algorithm}");
    }
    // SLH-DSA signing costs about a second, so only key generation and PEM here.
    let slh = PrivateKey::generate(Algorithm::SlhDsaShake256f).expect("generate");
    let reread = PrivateKey::from_pem(&slh.to_pem().expect("pem")).expect("reread");
    assert_eq!(reread.public_key(), slh.public_key());
}

#[test]
fn hedged_ml_dsa_signatures_differ_and_deterministic_ones_repeat() {
    let key = PrivateKey::from_pem(&golden("ml-dsa-87.pyca.private.pem")).expect("key");
    let a = key.sign(b"same", Randomness::Hedged).expect("sign");
    let b = key.sign(b"same", Randomness::Hedged).expect("sign");
    assert_ne!(a, b);
    let c = key.sign(b"same", Randomness::Deterministic).expect("sign");
    let d = key.sign(b"same", Randomness::Deterministic).expect("sign");
    assert_eq!(c, d);
}

/// The signed digest of a golden envelope, computed by Accord.
fn digest_of(envelope: &Value) -> [u8; 64] {
    let canonical = canonical_payload(&envelope["card"], &envelope["signedAt"], &envelope["expiresAt"]).expect("jcs");
    shake256_64(&canonical)
}

#[test]
fn deterministic_signatures_match_noble_byte_for_byte() {
    for (key_file, envelope_file) in [
        ("ml-dsa-87.noble-both.private.pem", "envelope.ml-dsa-87.noble-deterministic.shake256-digest.json"),
        (
            "slh-dsa-shake-256f.noble.private.pem",
            "envelope.slh-dsa-shake-256f.noble-deterministic.shake256-digest.json",
        ),
    ] {
        let key = PrivateKey::from_pem(&golden(key_file)).expect("key");
        let envelope: Value = serde_json::from_str(&golden(envelope_file)).expect("envelope");
        let signature = key.sign(&digest_of(&envelope), Randomness::Deterministic).expect("sign");
        assert_eq!(STANDARD.encode(signature), envelope["signature"].as_str().expect("signature"), "{envelope_file}");
    }
}
