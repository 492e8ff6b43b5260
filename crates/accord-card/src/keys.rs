//! Signing keys: the algorithms Accord knows, the key values a caller holds, and how they are
//! read from and written to PEM (PKCS#8 `PRIVATE KEY`, SPKI `PUBLIC KEY`).
//!
//! The algorithm of a PEM is never passed in: it is read from the key's own OID and looked up
//! in a [`CryptoProvider`], so an unknown OID is a typed [`KeyError::UnsupportedAlgorithm`]. A
//! [`PrivateKey`] never prints its material, and every buffer that held it is zeroized.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use pkcs8::der::pem::LineEnding;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use crate::provider::{CryptoProvider, SigningKey, VerifyingKey};

/// PEM label of a PKCS#8 private key.
pub const PRIVATE_KEY_PEM_LABEL: &str = "PRIVATE KEY";
/// PEM label of an SPKI public key.
pub const PUBLIC_KEY_PEM_LABEL: &str = "PUBLIC KEY";

/// A signature algorithm Accord can use for cards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Algorithm {
    /// ML-DSA-87 (FIPS 204), pure mode, empty context. The default.
    #[serde(rename = "ml-dsa-87")]
    MlDsa87,
    /// SLH-DSA-SHAKE-256f (FIPS 205), pure mode, empty context: the hash-based choice.
    #[serde(rename = "slh-dsa-shake-256f")]
    SlhDsaShake256f,
    /// Ed25519 (RFC 8032): small and fast, not post-quantum.
    #[serde(rename = "ed25519")]
    Ed25519,
    /// ECDSA on P-256 with SHA-256 (JOSE `ES256`): for JWS card signatures that official A2A
    /// SDKs verify; not post-quantum.
    #[serde(rename = "ecdsa-p256")]
    EcdsaP256,
}

impl Algorithm {
    /// Every algorithm, in order of preference.
    pub const ALL: [Algorithm; 4] =
        [Algorithm::MlDsa87, Algorithm::SlhDsaShake256f, Algorithm::Ed25519, Algorithm::EcdsaP256];

    /// The lower-case name used on the command line and in audit events (`ml-dsa-87`, …).
    pub fn name(self) -> &'static str {
        match self {
            Self::MlDsa87 => "ml-dsa-87",
            Self::SlhDsaShake256f => "slh-dsa-shake-256f",
            Self::Ed25519 => "ed25519",
            Self::EcdsaP256 => "ecdsa-p256",
        }
    }

    /// The dotted OID that identifies the algorithm in PKCS#8 and SPKI (for ECDSA P-256,
    /// `id-ecPublicKey`, whose curve parameter must then be `prime256v1`).
    pub fn oid(self) -> &'static str {
        match self {
            Self::MlDsa87 => "2.16.840.1.101.3.4.3.19",
            Self::SlhDsaShake256f => "2.16.840.1.101.3.4.3.31",
            Self::Ed25519 => "1.3.101.112",
            Self::EcdsaP256 => "1.2.840.10045.2.1",
        }
    }

    /// The algorithm with this dotted OID, if Accord knows it.
    pub fn from_oid(oid: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|algorithm| algorithm.oid() == oid)
    }

    /// The exact length of a signature in bytes.
    pub fn signature_len(self) -> usize {
        match self {
            Self::MlDsa87 => 4627,
            Self::SlhDsaShake256f => 49856,
            Self::Ed25519 | Self::EcdsaP256 => 64,
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Algorithm {
    type Err = KeyError;

    /// Parses a name as printed by [`Algorithm::name`], ignoring ASCII case.
    fn from_str(name: &str) -> Result<Self, KeyError> {
        Self::ALL
            .into_iter()
            .find(|algorithm| algorithm.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| KeyError::UnknownAlgorithmName { name: name.to_owned() })
    }
}

/// How a signature's randomness is chosen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Randomness {
    /// Fresh randomness from the operating system mixed into each signature (FIPS 204/205
    /// "hedged"): the default, and what production signing should use.
    #[default]
    Hedged,
    /// No added randomness: the same key and message always give the same signature. For
    /// known-answer tests and golden files. Ed25519 is always deterministic.
    Deterministic,
}

/// Why a key could not be read, written or used.
///
/// No variant carries key material.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyError {
    /// The text is not a PEM document.
    Pem {
        /// What the PEM decoder found wrong.
        detail: String,
    },
    /// The PEM document is not the kind asked for (a public key where a private key was
    /// expected, an encrypted private key, a certificate, …).
    UnexpectedPemLabel {
        /// The label that was found.
        found: String,
        /// The label that was expected.
        expected: &'static str,
    },
    /// The DER inside is not a well-formed PKCS#8 or SPKI structure, or the key bytes are not a
    /// valid key of the algorithm.
    Malformed {
        /// What was wrong.
        detail: String,
    },
    /// The key's OID names an algorithm the provider does not have.
    UnsupportedAlgorithm {
        /// The dotted OID found in the key.
        oid: String,
    },
    /// The algorithm is known but this encoding of the private key is not accepted.
    UnsupportedEncoding {
        /// The key's algorithm.
        algorithm: Algorithm,
        /// Which encoding, and what to do instead.
        detail: &'static str,
    },
    /// The halves of a key pair do not belong together (for example the public key stored in a
    /// PKCS#8 document, or the expanded key next to an ML-DSA seed).
    InconsistentKeyPair {
        /// The key's algorithm.
        algorithm: Algorithm,
    },
    /// The provider has no implementation of this algorithm.
    AlgorithmNotInProvider {
        /// The algorithm asked for.
        algorithm: Algorithm,
    },
    /// The name is not one of [`Algorithm::name`].
    UnknownAlgorithmName {
        /// The name given.
        name: String,
    },
    /// The operating system's random number generator failed.
    Randomness,
    /// The signer could not produce a signature.
    SigningFailed {
        /// The key's algorithm.
        algorithm: Algorithm,
    },
    /// A key could not be encoded as DER or PEM.
    Encoding {
        /// What failed.
        detail: String,
    },
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Pem { detail } => write!(f, "not a PEM document: {detail}"),
            Self::UnexpectedPemLabel { found, expected } => {
                write!(f, "PEM label is {found:?}, expected {expected:?}")
            }
            Self::Malformed { detail } => write!(f, "malformed key: {detail}"),
            Self::UnsupportedAlgorithm { oid } => write!(f, "unsupported key algorithm (OID {oid})"),
            Self::UnsupportedEncoding { algorithm, detail } => {
                write!(f, "unsupported {algorithm} key encoding: {detail}")
            }
            Self::InconsistentKeyPair { algorithm } => {
                write!(f, "the {algorithm} private and public key parts do not match")
            }
            Self::AlgorithmNotInProvider { algorithm } => write!(f, "the crypto provider has no {algorithm}"),
            Self::UnknownAlgorithmName { name } => {
                write!(f, "unknown algorithm {name:?} (expected ml-dsa-87, slh-dsa-shake-256f, ed25519 or ecdsa-p256)")
            }
            Self::Randomness => f.write_str("the system random number generator failed"),
            Self::SigningFailed { algorithm } => write!(f, "{algorithm} signing failed"),
            Self::Encoding { detail } => write!(f, "cannot encode key: {detail}"),
        }
    }
}

impl std::error::Error for KeyError {}

/// A private signing key of any supported algorithm.
///
/// `Debug` shows only the algorithm. The key material is zeroized when dropped.
pub struct PrivateKey {
    inner: Box<dyn SigningKey>,
}

impl PrivateKey {
    /// Wraps a provider's signing key.
    pub fn from_signing_key(inner: Box<dyn SigningKey>) -> Self {
        Self { inner }
    }

    /// Generates a new key with the default provider.
    pub fn generate(algorithm: Algorithm) -> Result<Self, KeyError> {
        CryptoProvider::default_provider().generate(algorithm)
    }

    /// Reads a PKCS#8 `PRIVATE KEY` PEM with the default provider; the algorithm comes from the
    /// key's OID.
    pub fn from_pem(pem: &str) -> Result<Self, KeyError> {
        CryptoProvider::default_provider().private_key_from_pem(pem)
    }

    /// Reads a DER PKCS#8 private key with the default provider.
    pub fn from_pkcs8_der(der: &[u8]) -> Result<Self, KeyError> {
        CryptoProvider::default_provider().private_key_from_pkcs8_der(der)
    }

    /// The key's algorithm.
    pub fn algorithm(&self) -> Algorithm {
        self.inner.algorithm()
    }

    /// The matching public key.
    pub fn public_key(&self) -> PublicKey {
        PublicKey::from_verifying_key(self.inner.verifying_key())
    }

    /// Signs `message` as is (pure mode, empty context).
    pub fn sign(&self, message: &[u8], randomness: Randomness) -> Result<Vec<u8>, KeyError> {
        self.inner.sign(message, randomness)
    }

    /// The key as DER PKCS#8 (ML-DSA in the seed-only form of RFC 9881).
    pub fn to_pkcs8_der(&self) -> Result<Zeroizing<Vec<u8>>, KeyError> {
        self.inner.to_pkcs8_der()
    }

    /// The key as a PKCS#8 `PRIVATE KEY` PEM with `\n` line endings.
    pub fn to_pem(&self) -> Result<Zeroizing<String>, KeyError> {
        let der = self.to_pkcs8_der()?;
        pkcs8::der::pem::encode_string(PRIVATE_KEY_PEM_LABEL, LineEnding::LF, &der)
            .map(Zeroizing::new)
            .map_err(|error| KeyError::Encoding { detail: error.to_string() })
    }
}

impl fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrivateKey").field("algorithm", &self.algorithm()).finish_non_exhaustive()
    }
}

/// A public verification key of any supported algorithm. Cheap to clone.
#[derive(Clone)]
pub struct PublicKey {
    inner: Arc<dyn VerifyingKey>,
    fingerprint: Option<String>,
}

impl PublicKey {
    /// Wraps a provider's verifying key.
    pub fn from_verifying_key(inner: Box<dyn VerifyingKey>) -> Self {
        let fingerprint = inner.to_spki_der().ok().map(|der| fingerprint_of(&der));
        Self { inner: Arc::from(inner), fingerprint }
    }

    /// Reads an SPKI `PUBLIC KEY` PEM with the default provider; the algorithm comes from the
    /// key's OID.
    pub fn from_pem(pem: &str) -> Result<Self, KeyError> {
        CryptoProvider::default_provider().public_key_from_pem(pem)
    }

    /// Reads a DER SPKI public key with the default provider.
    pub fn from_spki_der(der: &[u8]) -> Result<Self, KeyError> {
        CryptoProvider::default_provider().public_key_from_spki_der(der)
    }

    /// The key's algorithm.
    pub fn algorithm(&self) -> Algorithm {
        self.inner.algorithm()
    }

    /// Whether `signature` is a valid signature of `message` (pure mode, empty context). A
    /// signature of the wrong length is simply not valid.
    pub fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        self.inner.verify(message, signature)
    }

    /// The key as DER SPKI.
    pub fn to_spki_der(&self) -> Result<Vec<u8>, KeyError> {
        self.inner.to_spki_der()
    }

    /// The key as an SPKI `PUBLIC KEY` PEM with `\n` line endings.
    pub fn to_pem(&self) -> Result<String, KeyError> {
        let der = self.to_spki_der()?;
        pkcs8::der::pem::encode_string(PUBLIC_KEY_PEM_LABEL, LineEnding::LF, &der)
            .map_err(|error| KeyError::Encoding { detail: error.to_string() })
    }

    /// `sha256:` and the lower-case hex SHA-256 of the SPKI DER: a stable, public name for the
    /// key in logs and audit events.
    pub fn fingerprint(&self) -> Option<&str> {
        self.fingerprint.as_deref()
    }
}

impl PartialEq for PublicKey {
    fn eq(&self, other: &Self) -> bool {
        self.algorithm() == other.algorithm()
            && matches!((self.to_spki_der(), other.to_spki_der()), (Ok(a), Ok(b)) if a == b)
    }
}

impl Eq for PublicKey {}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PublicKey")
            .field("algorithm", &self.algorithm())
            .field("fingerprint", &self.fingerprint)
            .finish()
    }
}

fn fingerprint_of(spki_der: &[u8]) -> String {
    let digest = Sha256::digest(spki_der);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for byte in digest {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// Decodes one PEM document into its label and DER bytes (zeroized on drop, since they may be
/// a private key). Surrounding whitespace is ignored.
pub(crate) fn decode_pem(pem: &str) -> Result<(String, Zeroizing<Vec<u8>>), KeyError> {
    let (label, der) = pkcs8::der::pem::decode_vec(pem.trim().as_bytes())
        .map_err(|error| KeyError::Pem { detail: error.to_string() })?;
    Ok((label.to_owned(), Zeroizing::new(der)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_oids_round_trip() {
        for algorithm in Algorithm::ALL {
            assert_eq!(algorithm.name().parse::<Algorithm>(), Ok(algorithm));
            assert_eq!(algorithm.name().to_uppercase().parse::<Algorithm>(), Ok(algorithm));
            assert_eq!(Algorithm::from_oid(algorithm.oid()), Some(algorithm));
            assert_eq!(serde_json::to_value(algorithm).expect("json"), serde_json::json!(algorithm.name()));
        }
        assert!(matches!("rsa".parse::<Algorithm>(), Err(KeyError::UnknownAlgorithmName { .. })));
        assert_eq!(Algorithm::from_oid("1.2.840.113549.1.1.1"), None, "RSA");
    }

    #[test]
    fn fingerprint_is_sha256_of_the_der() {
        let fingerprint = fingerprint_of(b"abc");
        assert_eq!(fingerprint, "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
