//! The official A2A card signature on the served card: `signatures`, one JWS per configured key
//! (see `accord_card::jws`), added to the card the card routes serve.
//!
//! The card differs only by the origin and base path a request used, so the signatures are made
//! once per base URL and kept while the card's signed payload stays the same: the served body,
//! and so its entity tag, do not change from one request to the next (ES256 and hedged ML-DSA
//! signatures are randomized). At most [`MAX_SIGNED_ORIGINS`] base URLs are remembered.
//!
//! This module owns the signing and its cache; the card is built by the card builder (`card.rs`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use accord_card::jws::{JwsAlgorithm, JwsError, JwsSignOptions, card_signing_payload, sign_agent_card_signature};
use accord_card::{KeyError, PrivateKey};
use serde_json::Value;

/// How many base URLs the signature cache remembers.
pub const MAX_SIGNED_ORIGINS: usize = 16;

/// The keys the served card is signed with (several signers give several `signatures`).
///
/// ```
/// use std::sync::Arc;
///
/// use accord_card::jws::JwsSignOptions;
/// use accord_card::{Algorithm, PrivateKey};
/// use accord_server::{JwsCardConfig, ServerConfig};
///
/// let es256 = Arc::new(PrivateKey::generate(Algorithm::EcdsaP256)?);
/// let ml_dsa = Arc::new(PrivateKey::generate(Algorithm::MlDsa87)?);
/// let jws = JwsCardConfig::new()
///     .signer(es256, JwsSignOptions::new().with_kid("es-2026"))?
///     .signer(ml_dsa, JwsSignOptions::new().with_kid("pq-2026"))?;
/// let config = ServerConfig::default().jws_card(jws);
/// # let _ = config;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct JwsCardConfig {
    signers: Vec<(Arc<PrivateKey>, JwsSignOptions)>,
}

impl JwsCardConfig {
    /// No signer yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a signer. A key without a JWS algorithm (SLH-DSA) is refused here, not when serving.
    pub fn signer(mut self, key: Arc<PrivateKey>, options: JwsSignOptions) -> Result<Self, JwsError> {
        if JwsAlgorithm::for_key(key.algorithm()).is_none() {
            return Err(JwsError::Key(KeyError::UnsupportedEncoding {
                algorithm: key.algorithm(),
                detail: "this algorithm has no JWS identifier; use ml-dsa-87, ed25519 or ecdsa-p256",
            }));
        }
        self.signers.push((key, options));
        Ok(self)
    }

    /// How many signers there are.
    pub fn len(&self) -> usize {
        self.signers.len()
    }

    /// Whether there is no signer.
    pub fn is_empty(&self) -> bool {
        self.signers.is_empty()
    }
}

struct Signed {
    /// The canonical payload the signatures cover.
    payload: Vec<u8>,
    signatures: Vec<Value>,
    /// A counter value, for forgetting the least recently served base URL.
    last_served: u64,
}

/// Signs served cards and remembers the signatures per base URL.
pub(crate) struct CardSigner {
    config: JwsCardConfig,
    cache: Mutex<(u64, HashMap<String, Signed>)>,
}

impl CardSigner {
    pub(crate) fn new(config: JwsCardConfig) -> Self {
        Self { config, cache: Mutex::new((0, HashMap::new())) }
    }

    /// `card` (the card served from `base_url`) with its `signatures`. A card that cannot be
    /// signed is served unsigned, and the reason logged: a card is still a card without them.
    pub(crate) fn sign(&self, base_url: &str, mut card: Value) -> Value {
        let payload = match card_signing_payload(&card) {
            Ok(payload) => payload,
            Err(error) => {
                tracing::error!(%base_url, %error, "the card cannot be signed; serving it unsigned");
                return card;
            }
        };
        let signatures = match self.cached(base_url, &payload) {
            Some(signatures) => signatures,
            None => match self.make(&card) {
                Ok(signatures) => {
                    self.remember(base_url, payload, signatures.clone());
                    signatures
                }
                Err(error) => {
                    tracing::error!(%base_url, %error, "signing the card failed; serving it unsigned");
                    return card;
                }
            },
        };
        if let Some(members) = card.as_object_mut() {
            let mut all = match members.remove("signatures") {
                Some(Value::Array(existing)) => existing,
                _ => Vec::new(),
            };
            all.extend(signatures);
            members.insert("signatures".into(), Value::Array(all));
        }
        card
    }

    fn make(&self, card: &Value) -> Result<Vec<Value>, JwsError> {
        self.config
            .signers
            .iter()
            .map(|(key, options)| sign_agent_card_signature(card, key, options).map(|signature| signature.to_value()))
            .collect()
    }

    fn cached(&self, base_url: &str, payload: &[u8]) -> Option<Vec<Value>> {
        let mut guard = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        let (clock, cache) = &mut *guard;
        *clock += 1;
        let entry = cache.get_mut(base_url).filter(|entry| entry.payload == payload)?;
        entry.last_served = *clock;
        Some(entry.signatures.clone())
    }

    fn remember(&self, base_url: &str, payload: Vec<u8>, signatures: Vec<Value>) {
        let mut guard = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        let (clock, cache) = &mut *guard;
        if !cache.contains_key(base_url) && cache.len() >= MAX_SIGNED_ORIGINS {
            let oldest = cache.iter().min_by_key(|(_, entry)| entry.last_served).map(|(url, _)| url.clone());
            if let Some(oldest) = oldest {
                cache.remove(&oldest);
            }
        }
        cache.insert(base_url.to_owned(), Signed { payload, signatures, last_served: *clock });
    }
}

impl std::fmt::Debug for CardSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CardSigner").field("signers", &self.config.signers.len()).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use accord_card::Algorithm;
    use accord_card::jws::{JwsVerifyOptions, TrustStore, verify_agent_card};
    use serde_json::json;

    use super::*;

    #[test]
    fn signatures_are_reused_per_origin_until_the_card_changes() {
        let key = Arc::new(PrivateKey::generate(Algorithm::EcdsaP256).expect("key"));
        let signer = CardSigner::new(
            JwsCardConfig::new().signer(Arc::clone(&key), JwsSignOptions::new().with_kid("k")).expect("signer"),
        );
        let first = signer.sign("http://a", json!({"name": "a"}));
        assert_eq!(signer.sign("http://a", json!({"name": "a"})), first, "same body for the same card");
        let changed = signer.sign("http://a", json!({"name": "b"}));
        assert_ne!(changed["signatures"], first["signatures"]);
        let mut trust = TrustStore::new();
        trust.add_key(Some("k"), key.public_key());
        assert!(verify_agent_card(&changed, &trust, &JwsVerifyOptions::new()).valid);
        for origin in 0..(MAX_SIGNED_ORIGINS + 4) {
            signer.sign(&format!("http://o{origin}"), json!({"name": "a"}));
        }
        assert_eq!(signer.cache.lock().expect("lock").1.len(), MAX_SIGNED_ORIGINS);
    }

    #[test]
    fn slh_dsa_keys_are_refused_when_configured() {
        let key = Arc::new(PrivateKey::generate(Algorithm::SlhDsaShake256f).expect("key"));
        assert!(JwsCardConfig::new().signer(key, JwsSignOptions::new()).is_err());
    }
}
