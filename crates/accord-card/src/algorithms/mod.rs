//! The built-in algorithm implementations behind [`crate::provider`]. Everything generic over a
//! parameter set is instantiated here, inside this crate, so that the workspace's opt-level for
//! this crate applies to it (post-quantum code is very slow unoptimised).

pub(crate) mod ecdsa_p256;
pub(crate) mod ed25519;
pub(crate) mod ml_dsa;
pub(crate) mod slh_dsa;

use pkcs8::der::Decode;
use pkcs8::{PrivateKeyInfoRef, SubjectPublicKeyInfoRef};
use zeroize::Zeroizing;

use crate::keys::{Algorithm, KeyError};

fn malformed(error: impl std::fmt::Display) -> KeyError {
    KeyError::Malformed { detail: error.to_string() }
}

/// The fields of a PKCS#8 document, after checking that its algorithm is `algorithm` with no
/// parameters (FIPS 204/205 and RFC 8410 AlgorithmIdentifiers have none).
pub(crate) struct Pkcs8Parts {
    pub(crate) private_key: Zeroizing<Vec<u8>>,
    pub(crate) public_key: Option<Vec<u8>>,
}

pub(crate) fn pkcs8_parts(der: &[u8], algorithm: Algorithm) -> Result<Pkcs8Parts, KeyError> {
    let info = PrivateKeyInfoRef::from_der(der).map_err(malformed)?;
    let oid = info.algorithm.oid.to_string();
    if oid != algorithm.oid() {
        return Err(KeyError::UnsupportedAlgorithm { oid });
    }
    if info.algorithm.parameters.is_some() {
        return Err(KeyError::Malformed { detail: format!("{algorithm} AlgorithmIdentifier must have no parameters") });
    }
    let public_key = match info.public_key {
        Some(bits) => Some(
            bits.as_bytes()
                .ok_or_else(|| KeyError::Malformed { detail: "public key bit string has unused bits".into() })?
                .to_vec(),
        ),
        None => None,
    };
    Ok(Pkcs8Parts { private_key: Zeroizing::new(info.private_key.as_bytes().to_vec()), public_key })
}

/// The raw public key of an SPKI document, after checking its algorithm as for PKCS#8.
pub(crate) fn spki_key(der: &[u8], algorithm: Algorithm) -> Result<Vec<u8>, KeyError> {
    let info = SubjectPublicKeyInfoRef::from_der(der).map_err(malformed)?;
    let oid = info.algorithm.oid.to_string();
    if oid != algorithm.oid() {
        return Err(KeyError::UnsupportedAlgorithm { oid });
    }
    if info.algorithm.parameters.is_some() {
        return Err(KeyError::Malformed { detail: format!("{algorithm} AlgorithmIdentifier must have no parameters") });
    }
    info.subject_public_key
        .as_bytes()
        .map(<[u8]>::to_vec)
        .ok_or_else(|| KeyError::Malformed { detail: "public key bit string has unused bits".into() })
}

fn encoding(error: impl std::fmt::Display) -> KeyError {
    KeyError::Encoding { detail: error.to_string() }
}

fn random_bytes<const N: usize>() -> Result<Zeroizing<[u8; N]>, KeyError> {
    let mut bytes = Zeroizing::new([0u8; N]);
    getrandom::fill(bytes.as_mut_slice()).map_err(|_| KeyError::Randomness)?;
    Ok(bytes)
}
