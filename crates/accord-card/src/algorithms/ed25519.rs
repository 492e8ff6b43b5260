//! Ed25519 (RFC 8032) over `ed25519-dalek`.
//!
//! Private keys are written as RFC 8410 PKCS#8 v1 (no embedded public key), the form OpenSSL and
//! Node write, so their PEMs round-trip byte for byte. Verification is `verify_strict`, which
//! refuses small-order keys and non-canonical signatures.

use ed25519_dalek::pkcs8::{DecodePrivateKey, EncodePrivateKey, EncodePublicKey, KeypairBytes};
use ed25519_dalek::{Signature, Signer};
use zeroize::Zeroizing;

use super::{encoding, malformed, pkcs8_parts, random_bytes, spki_key};
use crate::keys::{Algorithm, KeyError, Randomness};
use crate::provider::{SignatureAlgorithm, SigningKey, VerifyingKey};

const ALGORITHM: Algorithm = Algorithm::Ed25519;

#[derive(Debug)]
pub(crate) struct Ed25519Algorithm;

impl SignatureAlgorithm for Ed25519Algorithm {
    fn algorithm(&self) -> Algorithm {
        ALGORITHM
    }

    fn generate(&self) -> Result<Box<dyn SigningKey>, KeyError> {
        let secret = random_bytes::<32>()?;
        Ok(Box::new(Ed25519SigningKey(ed25519_dalek::SigningKey::from_bytes(&secret))))
    }

    fn signing_key_from_pkcs8_der(&self, der: &[u8]) -> Result<Box<dyn SigningKey>, KeyError> {
        // Checks the OID and parameters with the same messages as the other algorithms.
        pkcs8_parts(der, ALGORITHM)?;
        let keypair = KeypairBytes::from_pkcs8_der(der).map_err(malformed)?;
        let key = ed25519_dalek::SigningKey::from_bytes(&keypair.secret_key);
        if let Some(public) = &keypair.public_key
            && public.0 != key.verifying_key().to_bytes()
        {
            return Err(KeyError::InconsistentKeyPair { algorithm: ALGORITHM });
        }
        Ok(Box::new(Ed25519SigningKey(key)))
    }

    fn verifying_key_from_spki_der(&self, der: &[u8]) -> Result<Box<dyn VerifyingKey>, KeyError> {
        let raw = spki_key(der, ALGORITHM)?;
        let bytes: [u8; 32] = raw.as_slice().try_into().map_err(|_| KeyError::Malformed {
            detail: format!("Ed25519 public key must be 32 bytes, not {}", raw.len()),
        })?;
        let key = ed25519_dalek::VerifyingKey::from_bytes(&bytes)
            .map_err(|_| KeyError::Malformed { detail: "Ed25519 public key is not a curve point".into() })?;
        Ok(Box::new(Ed25519VerifyingKey(key)))
    }
}

struct Ed25519SigningKey(ed25519_dalek::SigningKey);

impl SigningKey for Ed25519SigningKey {
    fn algorithm(&self) -> Algorithm {
        ALGORITHM
    }

    fn sign(&self, message: &[u8], _randomness: Randomness) -> Result<Vec<u8>, KeyError> {
        let signature = self.0.try_sign(message).map_err(|_| KeyError::SigningFailed { algorithm: ALGORITHM })?;
        Ok(signature.to_bytes().to_vec())
    }

    fn verifying_key(&self) -> Box<dyn VerifyingKey> {
        Box::new(Ed25519VerifyingKey(self.0.verifying_key()))
    }

    fn to_pkcs8_der(&self) -> Result<Zeroizing<Vec<u8>>, KeyError> {
        let keypair = KeypairBytes { secret_key: self.0.to_bytes(), public_key: None };
        let document = keypair.to_pkcs8_der().map_err(encoding)?;
        Ok(Zeroizing::new(document.as_bytes().to_vec()))
    }
}

struct Ed25519VerifyingKey(ed25519_dalek::VerifyingKey);

impl VerifyingKey for Ed25519VerifyingKey {
    fn algorithm(&self) -> Algorithm {
        ALGORITHM
    }

    fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        match Signature::from_slice(signature) {
            Ok(signature) => self.0.verify_strict(message, &signature).is_ok(),
            Err(_) => false,
        }
    }

    fn to_spki_der(&self) -> Result<Vec<u8>, KeyError> {
        self.0.to_public_key_der().map(|document| document.as_bytes().to_vec()).map_err(encoding)
    }
}
