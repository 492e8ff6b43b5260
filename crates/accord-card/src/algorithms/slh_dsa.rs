//! SLH-DSA-SHAKE-256f (FIPS 205) over RustCrypto's `slh-dsa`.
//!
//! The PKCS#8 private key is the raw `SK.seed ‖ SK.prf ‖ PK.seed ‖ PK.root` (128 bytes) and the
//! SPKI key is `PK.seed ‖ PK.root` (64 bytes). On read, `PK.root` is recomputed from the seeds:
//! a private key whose stored public half does not match would otherwise sign happily and never
//! verify.

use pkcs8::{EncodePrivateKey, EncodePublicKey};
use slh_dsa::{Shake256f, Signature};
use zeroize::Zeroizing;

use super::{encoding, pkcs8_parts, random_bytes, spki_key};
use crate::keys::{Algorithm, KeyError, Randomness};
use crate::provider::{SignatureAlgorithm, SigningKey, VerifyingKey};

const ALGORITHM: Algorithm = Algorithm::SlhDsaShake256f;
/// The security parameter n of SHAKE-256f, in bytes.
const N: usize = 32;

#[derive(Debug)]
pub(crate) struct SlhDsaShake256fAlgorithm;

impl SignatureAlgorithm for SlhDsaShake256fAlgorithm {
    fn algorithm(&self) -> Algorithm {
        ALGORITHM
    }

    fn generate(&self) -> Result<Box<dyn SigningKey>, KeyError> {
        let seeds = random_bytes::<{ 3 * N }>()?;
        let key = slh_dsa::SigningKey::<Shake256f>::slh_keygen_internal(&seeds[..N], &seeds[N..2 * N], &seeds[2 * N..]);
        Ok(Box::new(SlhDsaSigningKey(key)))
    }

    fn signing_key_from_pkcs8_der(&self, der: &[u8]) -> Result<Box<dyn SigningKey>, KeyError> {
        let parts = pkcs8_parts(der, ALGORITHM)?;
        let raw = parts.private_key.as_slice();
        if raw.len() != 4 * N {
            return Err(KeyError::Malformed {
                detail: format!("SLH-DSA-SHAKE-256f private key must be {} bytes, not {}", 4 * N, raw.len()),
            });
        }
        // Recompute the key from its three seeds and insist that the stored public half agrees.
        let key = slh_dsa::SigningKey::<Shake256f>::slh_keygen_internal(&raw[..N], &raw[N..2 * N], &raw[2 * N..3 * N]);
        let public = key.as_ref().to_bytes();
        if public.as_slice() != &raw[2 * N..] {
            return Err(KeyError::InconsistentKeyPair { algorithm: ALGORITHM });
        }
        if let Some(stored) = parts.public_key
            && stored.as_slice() != public.as_slice()
        {
            return Err(KeyError::InconsistentKeyPair { algorithm: ALGORITHM });
        }
        Ok(Box::new(SlhDsaSigningKey(key)))
    }

    fn verifying_key_from_spki_der(&self, der: &[u8]) -> Result<Box<dyn VerifyingKey>, KeyError> {
        let raw = spki_key(der, ALGORITHM)?;
        let key = slh_dsa::VerifyingKey::<Shake256f>::try_from(raw.as_slice()).map_err(|_| KeyError::Malformed {
            detail: format!("SLH-DSA-SHAKE-256f public key must be {} bytes, not {}", 2 * N, raw.len()),
        })?;
        Ok(Box::new(SlhDsaVerifyingKey(key)))
    }
}

struct SlhDsaSigningKey(slh_dsa::SigningKey<Shake256f>);

impl SigningKey for SlhDsaSigningKey {
    fn algorithm(&self) -> Algorithm {
        ALGORITHM
    }

    fn sign(&self, message: &[u8], randomness: Randomness) -> Result<Vec<u8>, KeyError> {
        let fresh;
        let opt_rand = match randomness {
            Randomness::Hedged => {
                fresh = random_bytes::<N>()?;
                Some(&fresh[..])
            }
            // FIPS 205: the deterministic variant uses PK.seed, which is what `None` selects.
            Randomness::Deterministic => None,
        };
        let signature = self
            .0
            .try_sign_with_context(message, &[], opt_rand)
            .map_err(|_| KeyError::SigningFailed { algorithm: ALGORITHM })?;
        Ok(signature.to_vec())
    }

    fn verifying_key(&self) -> Box<dyn VerifyingKey> {
        Box::new(SlhDsaVerifyingKey(self.0.as_ref().clone()))
    }

    fn to_pkcs8_der(&self) -> Result<Zeroizing<Vec<u8>>, KeyError> {
        let document = self.0.to_pkcs8_der().map_err(encoding)?;
        Ok(Zeroizing::new(document.as_bytes().to_vec()))
    }
}

struct SlhDsaVerifyingKey(slh_dsa::VerifyingKey<Shake256f>);

impl VerifyingKey for SlhDsaVerifyingKey {
    fn algorithm(&self) -> Algorithm {
        ALGORITHM
    }

    fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        match Signature::<Shake256f>::try_from(signature) {
            Ok(signature) => self.0.try_verify_with_context(message, &[], &signature).is_ok(),
            Err(_) => false,
        }
    }

    fn to_spki_der(&self) -> Result<Vec<u8>, KeyError> {
        self.0.to_public_key_der().map(|document| document.as_bytes().to_vec()).map_err(encoding)
    }
}
