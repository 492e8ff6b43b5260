//! The crypto provider: which signature algorithms are available, as a value.
//!
//! Like rustls's `CryptoProvider`, a provider is a list of algorithm objects. The default one
//! has ML-DSA-87, SLH-DSA-SHAKE-256f, Ed25519 and ECDSA P-256; a deployment that accepts only post-quantum
//! keys builds a provider without the classical ones, and adding an algorithm means adding an object, not
//! changing the card code. Keys are read and written through the provider so that the
//! algorithm always comes from the key's own OID.

use std::fmt;

use pkcs8::der::Decode;
use pkcs8::{PrivateKeyInfoRef, SubjectPublicKeyInfoRef};
use zeroize::Zeroizing;

use crate::algorithms;
use crate::keys::{
    Algorithm, KeyError, PRIVATE_KEY_PEM_LABEL, PUBLIC_KEY_PEM_LABEL, PrivateKey, PublicKey, Randomness, decode_pem,
};

/// One signature algorithm: how to make, read and write its keys.
pub trait SignatureAlgorithm: Send + Sync + fmt::Debug {
    /// Which algorithm this is.
    fn algorithm(&self) -> Algorithm;

    /// Generates a fresh key pair from the operating system's randomness.
    fn generate(&self) -> Result<Box<dyn SigningKey>, KeyError>;

    /// Reads a DER PKCS#8 private key whose OID is this algorithm's.
    fn signing_key_from_pkcs8_der(&self, der: &[u8]) -> Result<Box<dyn SigningKey>, KeyError>;

    /// Reads a DER SPKI public key whose OID is this algorithm's.
    fn verifying_key_from_spki_der(&self, der: &[u8]) -> Result<Box<dyn VerifyingKey>, KeyError>;
}

/// A private key held by a provider. Implementations must not expose key material through
/// `Debug` or errors, and should zeroize it on drop.
pub trait SigningKey: Send + Sync {
    /// The key's algorithm.
    fn algorithm(&self) -> Algorithm;

    /// Signs `message` as is (pure mode, empty context).
    fn sign(&self, message: &[u8], randomness: Randomness) -> Result<Vec<u8>, KeyError>;

    /// The matching public key.
    fn verifying_key(&self) -> Box<dyn VerifyingKey>;

    /// The key as DER PKCS#8.
    fn to_pkcs8_der(&self) -> Result<Zeroizing<Vec<u8>>, KeyError>;
}

/// A public key held by a provider.
pub trait VerifyingKey: Send + Sync {
    /// The key's algorithm.
    fn algorithm(&self) -> Algorithm;

    /// Whether `signature` signs `message` (pure mode, empty context). Never panics, whatever
    /// the signature bytes.
    fn verify(&self, message: &[u8], signature: &[u8]) -> bool;

    /// The key as DER SPKI.
    fn to_spki_der(&self) -> Result<Vec<u8>, KeyError>;
}

/// ML-DSA-87 (FIPS 204) from RustCrypto's `ml-dsa`.
pub static ML_DSA_87: &dyn SignatureAlgorithm = &algorithms::ml_dsa::MlDsa87Algorithm;
/// SLH-DSA-SHAKE-256f (FIPS 205) from RustCrypto's `slh-dsa`.
pub static SLH_DSA_SHAKE_256F: &dyn SignatureAlgorithm = &algorithms::slh_dsa::SlhDsaShake256fAlgorithm;
/// Ed25519 (RFC 8032) from `ed25519-dalek`, with strict verification.
pub static ED25519: &dyn SignatureAlgorithm = &algorithms::ed25519::Ed25519Algorithm;
/// ECDSA P-256 with SHA-256 (JOSE `ES256`) from `aws-lc-rs`.
pub static ECDSA_P256: &dyn SignatureAlgorithm = &algorithms::ecdsa_p256::EcdsaP256Algorithm;

/// The set of signature algorithms a signer or verifier accepts.
#[derive(Debug, Clone)]
pub struct CryptoProvider {
    /// The algorithms, in order of preference.
    pub algorithms: Vec<&'static dyn SignatureAlgorithm>,
}

impl Default for CryptoProvider {
    fn default() -> Self {
        Self::default_provider()
    }
}

impl CryptoProvider {
    /// ML-DSA-87, SLH-DSA-SHAKE-256f, Ed25519 and ECDSA P-256.
    pub fn default_provider() -> Self {
        Self { algorithms: vec![ML_DSA_87, SLH_DSA_SHAKE_256F, ED25519, ECDSA_P256] }
    }

    /// Only the post-quantum algorithms: an Ed25519 or ECDSA key is then an unsupported algorithm.
    pub fn post_quantum_only() -> Self {
        Self { algorithms: vec![ML_DSA_87, SLH_DSA_SHAKE_256F] }
    }

    /// The implementation of `algorithm`, if this provider has it.
    pub fn find(&self, algorithm: Algorithm) -> Option<&'static dyn SignatureAlgorithm> {
        self.algorithms.iter().copied().find(|candidate| candidate.algorithm() == algorithm)
    }

    fn find_by_oid(&self, oid: &str) -> Result<&'static dyn SignatureAlgorithm, KeyError> {
        Algorithm::from_oid(oid)
            .and_then(|algorithm| self.find(algorithm))
            .ok_or_else(|| KeyError::UnsupportedAlgorithm { oid: oid.to_owned() })
    }

    /// Generates a fresh private key.
    pub fn generate(&self, algorithm: Algorithm) -> Result<PrivateKey, KeyError> {
        let implementation = self.find(algorithm).ok_or(KeyError::AlgorithmNotInProvider { algorithm })?;
        implementation.generate().map(PrivateKey::from_signing_key)
    }

    /// Reads a PKCS#8 `PRIVATE KEY` PEM; the algorithm comes from the key's OID.
    pub fn private_key_from_pem(&self, pem: &str) -> Result<PrivateKey, KeyError> {
        let (label, der) = decode_pem(pem)?;
        if label != PRIVATE_KEY_PEM_LABEL {
            return Err(KeyError::UnexpectedPemLabel { found: label, expected: PRIVATE_KEY_PEM_LABEL });
        }
        self.private_key_from_pkcs8_der(&der)
    }

    /// Reads a DER PKCS#8 private key; the algorithm comes from the key's OID.
    pub fn private_key_from_pkcs8_der(&self, der: &[u8]) -> Result<PrivateKey, KeyError> {
        let info =
            PrivateKeyInfoRef::from_der(der).map_err(|error| KeyError::Malformed { detail: error.to_string() })?;
        let implementation = self.find_by_oid(&info.algorithm.oid.to_string())?;
        implementation.signing_key_from_pkcs8_der(der).map(PrivateKey::from_signing_key)
    }

    /// Reads an SPKI `PUBLIC KEY` PEM; the algorithm comes from the key's OID.
    pub fn public_key_from_pem(&self, pem: &str) -> Result<PublicKey, KeyError> {
        let (label, der) = decode_pem(pem)?;
        if label != PUBLIC_KEY_PEM_LABEL {
            return Err(KeyError::UnexpectedPemLabel { found: label, expected: PUBLIC_KEY_PEM_LABEL });
        }
        self.public_key_from_spki_der(&der)
    }

    /// Reads a DER SPKI public key; the algorithm comes from the key's OID.
    pub fn public_key_from_spki_der(&self, der: &[u8]) -> Result<PublicKey, KeyError> {
        let info = SubjectPublicKeyInfoRef::from_der(der)
            .map_err(|error| KeyError::Malformed { detail: error.to_string() })?;
        let implementation = self.find_by_oid(&info.algorithm.oid.to_string())?;
        implementation.verifying_key_from_spki_der(der).map(PublicKey::from_verifying_key)
    }
}
