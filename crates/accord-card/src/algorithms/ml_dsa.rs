//! ML-DSA-87 (FIPS 204) over RustCrypto's `ml-dsa`.
//!
//! Private keys are written in the seed-only PKCS#8 form of RFC 9881 (what `ml-dsa`, pyca
//! `cryptography` and `openssl -provparam ml-dsa.output_formats=seed-only` write). On read, the
//! `both` form (seed and expanded key, OpenSSL 3.5's default) is accepted by taking the seed and
//! checking that the expanded key is the one it derives. The expanded-only form carries no seed
//! and is refused.

use ml_dsa::{EncodedSignature, EncodedVerifyingKey, ExpandedSigningKey, MlDsa87, Seed, Signature};
use pkcs8::der::asn1::OctetStringRef;
use pkcs8::der::{Decode, Reader, SliceReader};
use pkcs8::{EncodePrivateKey, EncodePublicKey};
use zeroize::Zeroizing;

use super::{encoding, malformed, pkcs8_parts, random_bytes, spki_key};
use crate::keys::{Algorithm, KeyError, Randomness};
use crate::provider::{SignatureAlgorithm, SigningKey, VerifyingKey};

const ALGORITHM: Algorithm = Algorithm::MlDsa87;
const SEED_LEN: usize = 32;
/// `[0] IMPLICIT OCTET STRING` of the seed-only form.
const SEED_TAG: u8 = 0x80;
const SEQUENCE_TAG: u8 = 0x30;
const OCTET_STRING_TAG: u8 = 0x04;

type SeedBytes = Zeroizing<[u8; SEED_LEN]>;

#[derive(Debug)]
pub(crate) struct MlDsa87Algorithm;

impl SignatureAlgorithm for MlDsa87Algorithm {
    fn algorithm(&self) -> Algorithm {
        ALGORITHM
    }

    fn generate(&self) -> Result<Box<dyn SigningKey>, KeyError> {
        let seed = random_bytes::<SEED_LEN>()?;
        Ok(Box::new(MlDsa87SigningKey::from_seed(&seed)))
    }

    fn signing_key_from_pkcs8_der(&self, der: &[u8]) -> Result<Box<dyn SigningKey>, KeyError> {
        let parts = pkcs8_parts(der, ALGORITHM)?;
        let key = match parts.private_key.first() {
            Some(&SEED_TAG) => MlDsa87SigningKey::from_seed(&*seed_only(&parts.private_key)?),
            Some(&SEQUENCE_TAG) => {
                let (seed, expanded) = seed_and_expanded(&parts.private_key)?;
                let key = MlDsa87SigningKey::from_seed(&seed);
                if !key.expands_to(&expanded) {
                    return Err(KeyError::InconsistentKeyPair { algorithm: ALGORITHM });
                }
                key
            }
            Some(&OCTET_STRING_TAG) => {
                return Err(KeyError::UnsupportedEncoding {
                    algorithm: ALGORITHM,
                    detail: "expanded-key-only private key has no seed; export it with the seed \
                             (OpenSSL: -provparam ml-dsa.output_formats=seed-only)",
                });
            }
            _ => {
                return Err(KeyError::Malformed {
                    detail: "ML-DSA private key is not seed, expandedKey or both".into(),
                });
            }
        };
        if let Some(public) = parts.public_key
            && public.as_slice() != key.public.encode().as_slice()
        {
            return Err(KeyError::InconsistentKeyPair { algorithm: ALGORITHM });
        }
        Ok(Box::new(key))
    }

    fn verifying_key_from_spki_der(&self, der: &[u8]) -> Result<Box<dyn VerifyingKey>, KeyError> {
        let raw = spki_key(der, ALGORITHM)?;
        let encoded = EncodedVerifyingKey::<MlDsa87>::try_from(raw.as_slice()).map_err(|_| KeyError::Malformed {
            detail: format!("ML-DSA-87 public key must be 2592 bytes, not {}", raw.len()),
        })?;
        Ok(Box::new(MlDsa87VerifyingKey(ml_dsa::VerifyingKey::decode(&encoded))))
    }
}

/// The 32-byte seed of the seed-only form: exactly `80 20 <seed>`.
fn seed_only(private_key: &[u8]) -> Result<SeedBytes, KeyError> {
    match private_key {
        [SEED_TAG, 0x20, seed @ ..] if seed.len() == SEED_LEN => {
            let mut out = Zeroizing::new([0u8; SEED_LEN]);
            out.copy_from_slice(seed);
            Ok(out)
        }
        _ => Err(KeyError::Malformed { detail: "ML-DSA seed must be a 32-byte [0] OCTET STRING".into() }),
    }
}

/// The seed and expanded key of the `both` form: `SEQUENCE { OCTET STRING, OCTET STRING }`.
fn seed_and_expanded(private_key: &[u8]) -> Result<(SeedBytes, Zeroizing<Vec<u8>>), KeyError> {
    let mut reader = SliceReader::new(private_key).map_err(malformed)?;
    let (seed, expanded) = reader
        .sequence(|inner| {
            let seed = <&OctetStringRef>::decode(inner)?;
            let expanded = <&OctetStringRef>::decode(inner)?;
            Ok::<_, pkcs8::der::Error>((seed.as_bytes(), expanded.as_bytes()))
        })
        .map_err(malformed)?;
    reader.finish().map_err(malformed)?;
    if seed.len() != SEED_LEN {
        return Err(KeyError::Malformed { detail: "ML-DSA seed must be 32 bytes".into() });
    }
    let mut out = Zeroizing::new([0u8; SEED_LEN]);
    out.copy_from_slice(seed);
    Ok((out, Zeroizing::new(expanded.to_vec())))
}

struct MlDsa87SigningKey {
    seed: Zeroizing<[u8; SEED_LEN]>,
    expanded: ExpandedSigningKey<MlDsa87>,
    public: ml_dsa::VerifyingKey<MlDsa87>,
}

impl MlDsa87SigningKey {
    fn from_seed(seed: &[u8; SEED_LEN]) -> Self {
        let expanded = ExpandedSigningKey::<MlDsa87>::from_seed(&Seed::from(*seed));
        let public = expanded.verifying_key();
        Self { seed: Zeroizing::new(*seed), expanded, public }
    }

    /// Whether `expanded` is the FIPS 204 skEncode of this key.
    fn expands_to(&self, expanded: &[u8]) -> bool {
        // The expanded encoding is read-only here: it is compared, never decoded, so a malformed
        // one cannot reach `ml-dsa`'s panicking decoder.
        #[allow(deprecated)]
        let ours = Zeroizing::new(self.expanded.to_expanded().to_vec());
        ours.as_slice() == expanded
    }
}

impl SigningKey for MlDsa87SigningKey {
    fn algorithm(&self) -> Algorithm {
        ALGORITHM
    }

    fn sign(&self, message: &[u8], randomness: Randomness) -> Result<Vec<u8>, KeyError> {
        let signature = match randomness {
            Randomness::Hedged => self.expanded.sign_randomized(message, &[], &mut getrandom::SysRng),
            Randomness::Deterministic => self.expanded.sign_deterministic(message, &[]),
        }
        .map_err(|_| KeyError::SigningFailed { algorithm: ALGORITHM })?;
        Ok(signature.encode().to_vec())
    }

    fn verifying_key(&self) -> Box<dyn VerifyingKey> {
        Box::new(MlDsa87VerifyingKey(self.public.clone()))
    }

    fn to_pkcs8_der(&self) -> Result<Zeroizing<Vec<u8>>, KeyError> {
        let key = ml_dsa::SigningKey::<MlDsa87>::from_seed(&Seed::from(*self.seed));
        let document = key.to_pkcs8_der().map_err(encoding)?;
        Ok(Zeroizing::new(document.as_bytes().to_vec()))
    }
}

struct MlDsa87VerifyingKey(ml_dsa::VerifyingKey<MlDsa87>);

impl VerifyingKey for MlDsa87VerifyingKey {
    fn algorithm(&self) -> Algorithm {
        ALGORITHM
    }

    fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        let Ok(encoded) = EncodedSignature::<MlDsa87>::try_from(signature) else {
            return false;
        };
        match Signature::<MlDsa87>::decode(&encoded) {
            Some(signature) => self.0.verify_with_context(message, &[], &signature),
            None => false,
        }
    }

    fn to_spki_der(&self) -> Result<Vec<u8>, KeyError> {
        self.0.to_public_key_der().map(|document| document.as_bytes().to_vec()).map_err(encoding)
    }
}
