//! Public keys as JSON Web Keys (RFC 7517): what a JWKS publishes and what a JWS verifier reads.
//!
//! | key | `kty` | members | JOSE `alg` |
//! | --- | --- | --- | --- |
//! | ECDSA P-256 | `EC` | `crv: "P-256"`, `x`, `y` (RFC 7518 §6.2) | `ES256` |
//! | Ed25519 | `OKP` | `crv: "Ed25519"`, `x` (RFC 8037) | `EdDSA` |
//! | ML-DSA-87 | `AKP` | `alg: "ML-DSA-87"`, `pub` (IETF draft for ML-DSA in JOSE and COSE) | `ML-DSA-87` |
//!
//! Every byte string is base64url without padding. A JWK is read by rebuilding the SPKI document
//! of its key and reading that through the [`CryptoProvider`], so a JWK and a PEM of the same key
//! are the same [`PublicKey`] with the same fingerprint. Private members (`d`, `priv`) are never
//! read or written here: private keys live in PKCS#8 files.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use pkcs8::der::asn1::{BitStringRef, ObjectIdentifier};
use pkcs8::der::{Decode, Encode};
use pkcs8::spki::{AlgorithmIdentifierRef, SubjectPublicKeyInfoRef};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::algorithms::ecdsa_p256::{P256_CURVE_OID, UNCOMPRESSED_POINT_LEN};
use crate::jcs::canonicalize_value;
use crate::jws::JwsAlgorithm;
use crate::keys::{Algorithm, KeyError, PublicKey};
use crate::provider::CryptoProvider;

/// A public key read from a JWK, with what the JWK says about its use.
#[derive(Debug, Clone)]
pub struct Jwk {
    /// The key.
    pub key: PublicKey,
    /// The JWK's `kid`, if any.
    pub kid: Option<String>,
    /// The JWK's `alg`, if any: the one JWS algorithm the key may then be used with.
    pub alg: Option<JwsAlgorithm>,
}

fn malformed(detail: impl Into<String>) -> KeyError {
    KeyError::Malformed { detail: detail.into() }
}

fn member<'a>(jwk: &'a Map<String, Value>, name: &str) -> Result<&'a str, KeyError> {
    jwk.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| malformed(format!("JWK member {name:?} missing or not a string")))
}

fn bytes_member(jwk: &Map<String, Value>, name: &str) -> Result<Vec<u8>, KeyError> {
    URL_SAFE_NO_PAD
        .decode(member(jwk, name)?)
        .map_err(|_| malformed(format!("JWK member {name:?} is not base64url without padding")))
}

/// The SPKI DER of a raw public key of `algorithm`.
fn spki_der(algorithm: Algorithm, raw: &[u8]) -> Result<Vec<u8>, KeyError> {
    let oid = ObjectIdentifier::new(algorithm.oid()).map_err(|error| malformed(error.to_string()))?;
    let curve = ObjectIdentifier::new(P256_CURVE_OID).map_err(|error| malformed(error.to_string()))?;
    let parameters = match algorithm {
        Algorithm::EcdsaP256 => Some(pkcs8::der::AnyRef::from(&curve)),
        _ => None,
    };
    let info = SubjectPublicKeyInfoRef {
        algorithm: AlgorithmIdentifierRef { oid, parameters },
        subject_public_key: BitStringRef::from_bytes(raw).map_err(|error| malformed(error.to_string()))?,
    };
    info.to_der().map_err(|error| KeyError::Encoding { detail: error.to_string() })
}

/// Reads a public JWK with `provider`. A `kty`, `crv` or `alg` Accord has no algorithm for is
/// [`KeyError::UnsupportedAlgorithm`] (a JWKS reader skips those keys); a JWK that names a
/// supported kind but is broken is [`KeyError::Malformed`].
pub fn public_key_from_jwk(jwk: &Value, provider: &CryptoProvider) -> Result<Jwk, KeyError> {
    let Some(jwk) = jwk.as_object() else { return Err(malformed("a JWK must be a JSON object")) };
    let kid = match jwk.get("kid") {
        None => None,
        Some(Value::String(kid)) => Some(kid.clone()),
        Some(_) => return Err(malformed("JWK member \"kid\" must be a string")),
    };
    let alg = match jwk.get("alg") {
        None => None,
        Some(Value::String(name)) => Some(
            JwsAlgorithm::from_name(name)
                .ok_or_else(|| KeyError::UnsupportedAlgorithm { oid: format!("JWK alg {name}") })?,
        ),
        Some(_) => return Err(malformed("JWK member \"alg\" must be a string")),
    };
    let kty = member(jwk, "kty")?;
    let (algorithm, raw) = match kty {
        "EC" => {
            let crv = member(jwk, "crv")?;
            if crv != "P-256" {
                return Err(KeyError::UnsupportedAlgorithm { oid: format!("JWK EC curve {crv}") });
            }
            let (x, y) = (bytes_member(jwk, "x")?, bytes_member(jwk, "y")?);
            if x.len() != 32 || y.len() != 32 {
                return Err(malformed("P-256 JWK coordinates must be 32 bytes each"));
            }
            let mut point = Vec::with_capacity(UNCOMPRESSED_POINT_LEN);
            point.push(4);
            point.extend_from_slice(&x);
            point.extend_from_slice(&y);
            (Algorithm::EcdsaP256, point)
        }
        "OKP" => {
            let crv = member(jwk, "crv")?;
            if crv != "Ed25519" {
                return Err(KeyError::UnsupportedAlgorithm { oid: format!("JWK OKP curve {crv}") });
            }
            (Algorithm::Ed25519, bytes_member(jwk, "x")?)
        }
        "AKP" => match alg {
            Some(JwsAlgorithm::MlDsa87) => (Algorithm::MlDsa87, bytes_member(jwk, "pub")?),
            Some(other) => return Err(malformed(format!("an AKP JWK cannot have alg {other}"))),
            None => return Err(malformed("an AKP JWK must name its algorithm in \"alg\"")),
        },
        other => return Err(KeyError::UnsupportedAlgorithm { oid: format!("JWK kty {other}") }),
    };
    if let Some(alg) = alg
        && alg.key_algorithm() != algorithm
    {
        return Err(malformed(format!("JWK alg {alg} does not fit a {algorithm} key")));
    }
    let key = provider.public_key_from_spki_der(&spki_der(algorithm, &raw)?)?;
    Ok(Jwk { key, kid, alg })
}

/// The raw public key inside an SPKI document.
fn raw_public_key(key: &PublicKey) -> Result<Vec<u8>, KeyError> {
    let der = key.to_spki_der()?;
    let info = SubjectPublicKeyInfoRef::from_der(&der).map_err(|error| malformed(error.to_string()))?;
    info.subject_public_key
        .as_bytes()
        .map(<[u8]>::to_vec)
        .ok_or_else(|| malformed("public key bit string has unused bits"))
}

/// The required members of `key`'s JWK (no `kid`, `use` or `alg` unless the key type needs it):
/// what the RFC 7638 thumbprint hashes.
fn required_members(key: &PublicKey) -> Result<Map<String, Value>, KeyError> {
    let raw = raw_public_key(key)?;
    let mut jwk = Map::new();
    match key.algorithm() {
        Algorithm::EcdsaP256 => {
            if raw.len() != UNCOMPRESSED_POINT_LEN {
                return Err(malformed("P-256 public key is not an uncompressed point"));
            }
            jwk.insert("kty".into(), "EC".into());
            jwk.insert("crv".into(), "P-256".into());
            jwk.insert("x".into(), URL_SAFE_NO_PAD.encode(&raw[1..33]).into());
            jwk.insert("y".into(), URL_SAFE_NO_PAD.encode(&raw[33..]).into());
        }
        Algorithm::Ed25519 => {
            jwk.insert("kty".into(), "OKP".into());
            jwk.insert("crv".into(), "Ed25519".into());
            jwk.insert("x".into(), URL_SAFE_NO_PAD.encode(&raw).into());
        }
        Algorithm::MlDsa87 => {
            jwk.insert("kty".into(), "AKP".into());
            jwk.insert("alg".into(), JwsAlgorithm::MlDsa87.name().into());
            jwk.insert("pub".into(), URL_SAFE_NO_PAD.encode(&raw).into());
        }
        other => {
            return Err(KeyError::UnsupportedEncoding {
                algorithm: other,
                detail: "no JWK form is defined for this algorithm",
            });
        }
    }
    Ok(jwk)
}

/// The RFC 7638 thumbprint of `key`: base64url SHA-256 of the canonical JSON of its required
/// members. Accord's default `kid`.
pub fn jwk_thumbprint(key: &PublicKey) -> Result<String, KeyError> {
    let members = required_members(key)?;
    let canonical = canonicalize_value(&Value::Object(members)).map_err(|error| malformed(error.to_string()))?;
    Ok(URL_SAFE_NO_PAD.encode(Sha256::digest(&canonical)))
}

/// `key` as a public JWK with `kid` (its thumbprint when `None`), `use: "sig"` and `alg`.
pub fn public_key_to_jwk(key: &PublicKey, kid: Option<&str>) -> Result<Value, KeyError> {
    let mut jwk = required_members(key)?;
    let kid = match kid {
        Some(kid) => kid.to_owned(),
        None => jwk_thumbprint(key)?,
    };
    jwk.insert("kid".into(), kid.into());
    jwk.insert("use".into(), "sig".into());
    if let Some(alg) = JwsAlgorithm::for_key(key.algorithm()) {
        jwk.insert("alg".into(), alg.name().into());
    }
    Ok(Value::Object(jwk))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::PrivateKey;

    #[test]
    fn every_jws_key_round_trips_through_its_jwk() {
        for algorithm in [Algorithm::EcdsaP256, Algorithm::Ed25519, Algorithm::MlDsa87] {
            let key = PrivateKey::generate(algorithm).expect("key").public_key();
            let jwk = public_key_to_jwk(&key, None).expect("jwk");
            let read = public_key_from_jwk(&jwk, &CryptoProvider::default()).expect("read");
            assert_eq!(read.key, key, "{algorithm}");
            assert_eq!(read.kid.as_deref(), Some(jwk_thumbprint(&key).expect("thumbprint").as_str()));
            assert_eq!(read.alg, JwsAlgorithm::for_key(algorithm));
        }
    }

    #[test]
    fn the_rfc_8037_thumbprint_example() {
        // RFC 8037 appendix A.3.
        let jwk =
            serde_json::json!({"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"});
        let key = public_key_from_jwk(&jwk, &CryptoProvider::default()).expect("jwk").key;
        assert_eq!(jwk_thumbprint(&key).expect("thumbprint"), "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k");
    }

    #[test]
    fn unsupported_and_broken_jwks_are_told_apart() {
        let provider = CryptoProvider::default();
        let unsupported = [
            serde_json::json!({"kty": "RSA", "n": "AQAB", "e": "AQAB"}),
            serde_json::json!({"kty": "EC", "crv": "P-384", "x": "AA", "y": "AA"}),
            serde_json::json!({"kty": "OKP", "crv": "X25519", "x": "AA"}),
        ];
        for jwk in unsupported {
            assert!(
                matches!(public_key_from_jwk(&jwk, &provider), Err(KeyError::UnsupportedAlgorithm { .. })),
                "{jwk}"
            );
        }
        let broken = [
            serde_json::json!({"kty": "OKP", "crv": "Ed25519"}),
            serde_json::json!({"kty": "OKP", "crv": "Ed25519", "x": "not base64!"}),
            serde_json::json!({"kty": "EC", "crv": "P-256", "x": "AAAA", "y": "AAAA"}),
            serde_json::json!({"kty": "AKP", "pub": "AAAA"}),
            serde_json::json!({"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", "alg": "ES256"}),
            serde_json::json!("a string"),
        ];
        for jwk in broken {
            assert!(matches!(public_key_from_jwk(&jwk, &provider), Err(KeyError::Malformed { .. })), "{jwk}");
        }
    }
}
