//! ECDSA over P-256 with SHA-256 (JOSE `ES256`) over `aws-lc-rs`, which the workspace already
//! builds for TLS and JWT checks.
//!
//! Keys are read from PKCS#8 `id-ecPublicKey` documents on the `prime256v1` curve (what OpenSSL,
//! pyca `cryptography` and Node write) and written back as PKCS#8 v1. Signatures are the fixed
//! 64-byte `r ‖ s` form JOSE uses (RFC 7518 §3.4), never DER. ECDSA signatures always carry
//! fresh randomness: [`Randomness::Deterministic`] is accepted and ignored.

use aws_lc_rs::encoding::{AsDer, PublicKeyX509Der};
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair, ParsedPublicKey,
};
use pkcs8::der::Decode;
use pkcs8::{PrivateKeyInfoRef, SubjectPublicKeyInfoRef};
use zeroize::Zeroizing;

use crate::keys::{Algorithm, KeyError, Randomness};
use crate::provider::{SignatureAlgorithm, SigningKey, VerifyingKey};

const ALGORITHM: Algorithm = Algorithm::EcdsaP256;
/// `id-ecPublicKey` (RFC 5480).
pub(crate) const EC_PUBLIC_KEY_OID: &str = "1.2.840.10045.2.1";
/// `prime256v1` / `secp256r1` (RFC 5480).
pub(crate) const P256_CURVE_OID: &str = "1.2.840.10045.3.1.7";
/// The length of an uncompressed SEC 1 point: `04 ‖ x ‖ y`.
pub(crate) const UNCOMPRESSED_POINT_LEN: usize = 65;

#[derive(Debug)]
pub(crate) struct EcdsaP256Algorithm;

fn not_p256(what: &str) -> KeyError {
    KeyError::Malformed { detail: format!("{what} is not a valid ECDSA P-256 key") }
}

/// Checks that an AlgorithmIdentifier is `id-ecPublicKey` on P-256: another curve is an
/// unsupported algorithm, named by its curve.
fn check_curve(oid: &str, parameters: Option<pkcs8::der::AnyRef<'_>>) -> Result<(), KeyError> {
    if oid != EC_PUBLIC_KEY_OID {
        return Err(KeyError::UnsupportedAlgorithm { oid: oid.to_owned() });
    }
    let curve = parameters
        .and_then(|any| any.decode_as::<pkcs8::der::asn1::ObjectIdentifier>().ok())
        .map(|curve| curve.to_string());
    match curve.as_deref() {
        Some(P256_CURVE_OID) => Ok(()),
        Some(other) => Err(KeyError::UnsupportedAlgorithm { oid: format!("{oid} on curve {other}") }),
        None => Err(KeyError::Malformed { detail: "EC key without a named curve".into() }),
    }
}

impl SignatureAlgorithm for EcdsaP256Algorithm {
    fn algorithm(&self) -> Algorithm {
        ALGORITHM
    }

    fn generate(&self) -> Result<Box<dyn SigningKey>, KeyError> {
        let key = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).map_err(|_| KeyError::Randomness)?;
        Ok(Box::new(EcdsaP256SigningKey(key)))
    }

    fn signing_key_from_pkcs8_der(&self, der: &[u8]) -> Result<Box<dyn SigningKey>, KeyError> {
        let info =
            PrivateKeyInfoRef::from_der(der).map_err(|error| KeyError::Malformed { detail: error.to_string() })?;
        check_curve(&info.algorithm.oid.to_string(), info.algorithm.parameters)?;
        // aws-lc checks that the embedded public key, when present, belongs to the private key.
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der)
            .map_err(|_| not_p256("the PKCS#8 document"))?;
        Ok(Box::new(EcdsaP256SigningKey(key)))
    }

    fn verifying_key_from_spki_der(&self, der: &[u8]) -> Result<Box<dyn VerifyingKey>, KeyError> {
        let info = SubjectPublicKeyInfoRef::from_der(der)
            .map_err(|error| KeyError::Malformed { detail: error.to_string() })?;
        check_curve(&info.algorithm.oid.to_string(), info.algorithm.parameters)?;
        let point = info.subject_public_key.as_bytes().unwrap_or_default();
        if point.len() != UNCOMPRESSED_POINT_LEN || point.first() != Some(&4) {
            return Err(KeyError::Malformed {
                detail: "ECDSA P-256 public key must be an uncompressed point (65 bytes)".into(),
            });
        }
        let parsed = ParsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point).map_err(|_| not_p256("the public key"))?;
        Ok(Box::new(EcdsaP256VerifyingKey(parsed)))
    }
}

struct EcdsaP256SigningKey(EcdsaKeyPair);

impl SigningKey for EcdsaP256SigningKey {
    fn algorithm(&self) -> Algorithm {
        ALGORITHM
    }

    fn sign(&self, message: &[u8], _randomness: Randomness) -> Result<Vec<u8>, KeyError> {
        let signature =
            self.0.sign(&SystemRandom::new(), message).map_err(|_| KeyError::SigningFailed { algorithm: ALGORITHM })?;
        Ok(signature.as_ref().to_vec())
    }

    fn verifying_key(&self) -> Box<dyn VerifyingKey> {
        // The key pair's own public point always parses; should it not, verification fails
        // closed through a key that verifies nothing.
        match ParsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, self.0.public_key().as_ref()) {
            Ok(parsed) => Box::new(EcdsaP256VerifyingKey(parsed)),
            Err(_) => Box::new(BrokenKey),
        }
    }

    fn to_pkcs8_der(&self) -> Result<Zeroizing<Vec<u8>>, KeyError> {
        let document = self
            .0
            .to_pkcs8v1()
            .map_err(|_| KeyError::Encoding { detail: "cannot write the EC key as PKCS#8".into() })?;
        Ok(Zeroizing::new(document.as_ref().to_vec()))
    }
}

struct EcdsaP256VerifyingKey(ParsedPublicKey);

impl VerifyingKey for EcdsaP256VerifyingKey {
    fn algorithm(&self) -> Algorithm {
        ALGORITHM
    }

    fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        signature.len() == 64 && self.0.verify_sig(message, signature).is_ok()
    }

    fn to_spki_der(&self) -> Result<Vec<u8>, KeyError> {
        let der: PublicKeyX509Der<'static> =
            self.0.as_der().map_err(|_| KeyError::Encoding { detail: "cannot write the EC public key".into() })?;
        Ok(der.as_ref().to_vec())
    }
}

/// A key that verifies nothing and cannot be written (see `verifying_key`).
struct BrokenKey;

impl VerifyingKey for BrokenKey {
    fn algorithm(&self) -> Algorithm {
        ALGORITHM
    }

    fn verify(&self, _message: &[u8], _signature: &[u8]) -> bool {
        false
    }

    fn to_spki_der(&self) -> Result<Vec<u8>, KeyError> {
        Err(KeyError::Encoding { detail: "the EC public key could not be read back".into() })
    }
}
