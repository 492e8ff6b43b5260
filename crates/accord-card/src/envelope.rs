//! The signed envelope `{card, signedAt, expiresAt, signature}` and how it is signed.
//!
//! The signed bytes are the RFC 8785 canonical form of `{card, signedAt, expiresAt}` (the
//! envelope without its signature). By default the signature covers the 64-byte SHAKE256 digest
//! of those bytes, as the blamejs documentation describes; [`SigningInput::RawCanonical`] signs
//! the canonical bytes themselves, which is what the shipped blamejs code does. The signature is
//! standard, padded base64. There is no `alg` member: the verifier's key decides the algorithm.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::audit::{AuditAction, AuditEvent, AuditOutcome, AuditSink};
use crate::card::{Card, CardError, validate_card_value};
use crate::jcs::{CanonError, canonicalize_value, shake256_64};
use crate::keys::{PrivateKey, Randomness};

/// The TTL of a signed card when none is given: 24 hours.
pub const DEFAULT_TTL: Duration = Duration::from_secs(24 * 60 * 60);
/// The largest integer every JSON implementation reads exactly (2^53 − 1); `expiresAt` must
/// not exceed it.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// What the signature is computed over.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum SigningInput {
    /// The 64-byte SHAKE256 digest of the canonical bytes (the documented blamejs behaviour,
    /// Accord's default).
    #[default]
    #[serde(rename = "shake256-digest")]
    Shake256Digest,
    /// The canonical bytes themselves (what blamejs's shipped code signs).
    #[serde(rename = "raw-canonical")]
    RawCanonical,
}

impl SigningInput {
    /// `shake256-digest` or `raw-canonical`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Shake256Digest => "shake256-digest",
            Self::RawCanonical => "raw-canonical",
        }
    }

    /// The message to sign or verify, given the canonical bytes.
    pub fn message(self, canonical: &[u8]) -> Vec<u8> {
        match self {
            Self::Shake256Digest => shake256_64(canonical).to_vec(),
            Self::RawCanonical => canonical.to_vec(),
        }
    }
}

impl fmt::Display for SigningInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A signed card, as published.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignedEnvelope {
    /// The card.
    pub card: Card,
    /// When it was signed, in ms since the Unix epoch.
    pub signed_at: u64,
    /// When it stops being valid, in ms since the Unix epoch.
    pub expires_at: u64,
    /// The signature, standard padded base64.
    pub signature: String,
}

impl SignedEnvelope {
    /// The envelope as a JSON value (what [`crate::verify_card`] takes).
    pub fn to_value(&self) -> Value {
        let mut envelope = Map::new();
        envelope.insert("card".into(), self.card.to_value());
        envelope.insert("signedAt".into(), self.signed_at.into());
        envelope.insert("expiresAt".into(), self.expires_at.into());
        envelope.insert("signature".into(), self.signature.clone().into());
        Value::Object(envelope)
    }

    /// The canonical bytes the signature covers (before any digest).
    pub fn canonical_payload(&self) -> Result<Vec<u8>, CanonError> {
        canonical_payload(&self.card.to_value(), &self.signed_at.into(), &self.expires_at.into())
    }
}

/// The RFC 8785 bytes of `{card, signedAt, expiresAt}`: what a signature covers, before any
/// digest. The timestamps are taken as the JSON numbers they are in the envelope.
pub fn canonical_payload(card: &Value, signed_at: &Value, expires_at: &Value) -> Result<Vec<u8>, CanonError> {
    let mut payload = Map::new();
    payload.insert("card".into(), card.clone());
    payload.insert("signedAt".into(), signed_at.clone());
    payload.insert("expiresAt".into(), expires_at.clone());
    canonicalize_value(&Value::Object(payload))
}

/// How to sign a card. The defaults: 24 h TTL, SHAKE256 digest, hedged signatures, the system
/// clock, no audit sink.
#[derive(Clone, Default)]
pub struct SignOptions {
    ttl: Option<Duration>,
    signing_input: SigningInput,
    randomness: Randomness,
    now: Option<SystemTime>,
    audit_sink: Option<Arc<dyn AuditSink>>,
}

impl SignOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// How long the signed card stays valid: a positive whole number of milliseconds.
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// What the signature covers.
    pub fn with_signing_input(mut self, signing_input: SigningInput) -> Self {
        self.signing_input = signing_input;
        self
    }

    /// Hedged (default) or deterministic signatures.
    pub fn with_randomness(mut self, randomness: Randomness) -> Self {
        self.randomness = randomness;
        self
    }

    /// Signs as if the clock read `now` (for tests and reproducible files).
    pub fn at(mut self, now: SystemTime) -> Self {
        self.now = Some(now);
        self
    }

    /// Also records the audit event in `sink`.
    pub fn with_audit_sink(mut self, sink: Arc<dyn AuditSink>) -> Self {
        self.audit_sink = Some(sink);
        self
    }

    /// The TTL that will be used.
    pub fn ttl(&self) -> Duration {
        self.ttl.unwrap_or(DEFAULT_TTL)
    }

    /// What the signature will cover.
    pub fn signing_input(&self) -> SigningInput {
        self.signing_input
    }
}

impl fmt::Debug for SignOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SignOptions")
            .field("ttl", &self.ttl())
            .field("signing_input", &self.signing_input)
            .field("randomness", &self.randomness)
            .field("now", &self.now)
            .field("audit_sink", &self.audit_sink.is_some())
            .finish()
    }
}

/// Milliseconds since the Unix epoch; a clock before 1970 reads 0.
pub(crate) fn unix_millis(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |since| u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
}

/// Signs a card (blamejs `signCard`): validates it, stamps `signedAt` and `expiresAt`, and signs
/// the canonical `{card, signedAt, expiresAt}`. Emits an `a2a.card_signed` audit event.
///
/// ```
/// use accord_card::{Algorithm, CardOptions, PrivateKey, SignOptions, VerifyOptions, create_card, sign_card, verify_card};
///
/// let key = PrivateKey::generate(Algorithm::MlDsa87).unwrap();
/// let card = create_card(CardOptions::new("agent.example.com", "ops-bot-1").capability("chat.respond")).unwrap();
/// let envelope = sign_card(&card, &key, &SignOptions::new()).unwrap();
/// let outcome = verify_card(&envelope.to_value(), &key.public_key(), &VerifyOptions::new());
/// assert!(outcome.valid);
/// ```
pub fn sign_card(card: &Card, key: &PrivateKey, options: &SignOptions) -> Result<SignedEnvelope, CardError> {
    let card_value = card.to_value();
    validate_card_value(&card_value)?;

    let ttl = options.ttl();
    let ttl_ms = u64::try_from(ttl.as_millis()).map_err(|_| CardError::BadTtl)?;
    if ttl_ms == 0 || !ttl.subsec_nanos().is_multiple_of(1_000_000) {
        return Err(CardError::BadTtl);
    }
    let now = options.now.unwrap_or_else(SystemTime::now);
    let signed_at = unix_millis(now);
    let expires_at = signed_at.checked_add(ttl_ms).filter(|at| *at <= MAX_SAFE_INTEGER).ok_or(CardError::BadTtl)?;

    // The card passed validation and the timestamps are integers, so canonicalization only fails
    // for a number serde_json cannot hold as a double; the card is then not a valid card.
    let canonical =
        canonical_payload(&card_value, &signed_at.into(), &expires_at.into()).map_err(|_| CardError::BadCard)?;
    let message = options.signing_input.message(&canonical);
    let signature = key.sign(&message, options.randomness).map_err(CardError::BadKey)?;

    let mut event = AuditEvent::new(AuditAction::CardSigned, AuditOutcome::Success, signed_at);
    event.metadata.issuer = Some(card.issuer.clone());
    event.metadata.agent_id = Some(card.agent_id.clone());
    event.metadata.signed_at = Some(signed_at.into());
    event.metadata.expires_at = Some(expires_at.into());
    event.metadata.algorithm = Some(key.algorithm());
    event.metadata.signing_input = Some(options.signing_input);
    event.metadata.key_fingerprint = key.public_key().fingerprint().map(str::to_owned);
    event.emit(options.audit_sink.as_ref());

    Ok(SignedEnvelope { card: card.clone(), signed_at, expires_at, signature: STANDARD.encode(signature) })
}
