//! Verifying a signed envelope (blamejs `verifyCard`).
//!
//! [`verify_card`] never fails and never panics on what a peer sends: a bad envelope, key or
//! signature is a [`VerifyOutcome`] with `valid: false` and a [`RejectReason`]. The checks run
//! in the blamejs order and the first failure wins:
//!
//! 1. the envelope is not a JSON object → `envelope-not-object`
//! 2. `card` or `signature` is missing or falsy, or `signedAt` / `expiresAt` is not a number →
//!    `envelope-shape`
//! 3. the card fails validation → `card-shape:<code>`, e.g. `card-shape:a2a/missing-field`
//! 4. the issuer is not the expected one → `issuer-mismatch`
//! 5. `expiresAt + skew < now` → `expired`
//! 6. `signedAt − skew > now` → `future-signed`
//! 7. the canonical bytes are longer than the limit → `card-too-large`
//! 8. the signature is not standard base64 → `signature-base64-bad`
//! 9. the public key PEM cannot be read → `key-malformed`, or names an algorithm the provider
//!    lacks → `key-unsupported` (Accord's additions; blamejs throws here)
//! 10. the signature verifies over neither the SHAKE256 digest nor the raw canonical bytes →
//!     `signature-mismatch`
//!
//! Every outcome, accept or deny, emits an audit event.

use std::fmt;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::audit::{AuditAction, AuditEvent, AuditOutcome, AuditSink};
use crate::card::{Card, CardErrorCode, card_from_value, is_truthy, validate_card_value};
use crate::envelope::{SigningInput, canonical_payload, unix_millis};
use crate::jcs::parse_strict;
use crate::keys::{Algorithm, KeyError, PublicKey};
use crate::provider::CryptoProvider;

/// The default limit on the canonical signed bytes: 64 KiB.
pub const DEFAULT_MAX_BYTES: NonZeroUsize = match NonZeroUsize::new(64 * 1024) {
    Some(limit) => limit,
    None => unreachable!(),
};
/// The default tolerance for clock differences between signer and verifier: 5 minutes.
pub const DEFAULT_CLOCK_SKEW: Duration = Duration::from_secs(5 * 60);

/// Why a signed card was refused: the envelope's reasons, and the JWS card signature's
/// (`crate::jws`), which share the audit events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RejectReason {
    /// `envelope-not-object`: the envelope is not a JSON object.
    EnvelopeNotObject,
    /// `envelope-shape`: `card` or `signature` missing or falsy, a non-string signature, or a
    /// non-number `signedAt` / `expiresAt`.
    EnvelopeShape,
    /// `card-shape:<code>`: the card fails validation with this code.
    CardShape(CardErrorCode),
    /// `issuer-mismatch`: the card's issuer is not the expected one.
    IssuerMismatch,
    /// `expired`: `expiresAt` plus the skew is before now.
    Expired,
    /// `future-signed`: `signedAt` minus the skew is after now.
    FutureSigned,
    /// `card-too-large`: the canonical signed bytes exceed the limit.
    CardTooLarge,
    /// `signature-base64-bad`: the signature is not standard padded base64 (for a JWS: not
    /// base64url without padding).
    SignatureBase64Bad,
    /// `key-malformed`: the verification key could not be read.
    KeyMalformed,
    /// `key-unsupported`: the verification key's algorithm is not in the provider.
    KeyUnsupported,
    /// `signature-mismatch`: the signature does not verify.
    SignatureMismatch,
    /// `card-not-object` (JWS): the agent card is not a JSON object.
    CardNotObject,
    /// `no-signatures` (JWS): the card has no `signatures`, or an empty list.
    NoSignatures,
    /// `signature-shape` (JWS): `signatures` is not a list, or an entry is not
    /// `{protected, signature[, header]}` with string members.
    SignatureShape,
    /// `card-not-canonical` (JWS): the card has no RFC 8785 form (a number that is not a finite
    /// double, nesting too deep).
    CardNotCanonical,
    /// `header-malformed` (JWS): the protected header is not base64url JSON object text, lacks
    /// `alg` or `kid`, has a member of the wrong type, or shares a member with the unprotected
    /// header.
    HeaderMalformed,
    /// `alg-none` (JWS): the header asks for no signature at all; always refused.
    AlgNone,
    /// `alg-unsupported` (JWS): the header names an algorithm Accord does not implement.
    AlgUnsupported,
    /// `alg-not-allowed` (JWS): the algorithm is implemented but not in the verifier's list.
    AlgNotAllowed,
    /// `crit-unsupported` (JWS): the header has `crit` (or `b64`): an extension this verifier
    /// does not understand, which RFC 7515 requires it to refuse.
    CritUnsupported,
    /// `key-unknown` (JWS): no trusted key has the header's `kid`.
    KeyUnknown,
    /// `alg-key-mismatch` (JWS): the trusted key for the `kid` is not of the header's algorithm,
    /// or declares another `alg`.
    AlgKeyMismatch,
}

impl RejectReason {
    /// The reason as blamejs spells it, e.g. `card-shape:a2a/missing-field`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::EnvelopeNotObject => "envelope-not-object",
            Self::EnvelopeShape => "envelope-shape",
            Self::CardShape(code) => match code {
                CardErrorCode::BadCard => "card-shape:a2a/bad-card",
                CardErrorCode::MissingField => "card-shape:a2a/missing-field",
                CardErrorCode::BadField => "card-shape:a2a/bad-field",
                CardErrorCode::InsecureEndpoint => "card-shape:a2a/insecure-endpoint",
                CardErrorCode::BadTtl => "card-shape:a2a/bad-ttl",
                CardErrorCode::BadKey => "card-shape:a2a/bad-key",
            },
            Self::IssuerMismatch => "issuer-mismatch",
            Self::Expired => "expired",
            Self::FutureSigned => "future-signed",
            Self::CardTooLarge => "card-too-large",
            Self::SignatureBase64Bad => "signature-base64-bad",
            Self::KeyMalformed => "key-malformed",
            Self::KeyUnsupported => "key-unsupported",
            Self::SignatureMismatch => "signature-mismatch",
            Self::CardNotObject => "card-not-object",
            Self::NoSignatures => "no-signatures",
            Self::SignatureShape => "signature-shape",
            Self::CardNotCanonical => "card-not-canonical",
            Self::HeaderMalformed => "header-malformed",
            Self::AlgNone => "alg-none",
            Self::AlgUnsupported => "alg-unsupported",
            Self::AlgNotAllowed => "alg-not-allowed",
            Self::CritUnsupported => "crit-unsupported",
            Self::KeyUnknown => "key-unknown",
            Self::AlgKeyMismatch => "alg-key-mismatch",
        }
    }
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for RejectReason {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// The key a card is checked against: a PEM as published by the issuer, or a key already read.
#[derive(Debug, Clone, Copy)]
pub enum VerifierKey<'a> {
    /// An SPKI `PUBLIC KEY` PEM, read with the options' provider; unreadable or unsupported keys
    /// become [`RejectReason::KeyMalformed`] / [`RejectReason::KeyUnsupported`].
    Pem(&'a str),
    /// A key already read.
    Key(&'a PublicKey),
}

impl<'a> From<&'a str> for VerifierKey<'a> {
    fn from(pem: &'a str) -> Self {
        Self::Pem(pem)
    }
}

impl<'a> From<&'a String> for VerifierKey<'a> {
    fn from(pem: &'a String) -> Self {
        Self::Pem(pem)
    }
}

impl<'a> From<&'a PublicKey> for VerifierKey<'a> {
    fn from(key: &'a PublicKey) -> Self {
        Self::Key(key)
    }
}

/// How to verify. The defaults: 64 KiB limit, 5 minutes of clock skew, any issuer, the system
/// clock, the default provider, no audit sink.
#[derive(Clone)]
pub struct VerifyOptions {
    max_bytes: NonZeroUsize,
    clock_skew: Duration,
    expected_issuer: Option<String>,
    now: Option<SystemTime>,
    provider: CryptoProvider,
    audit_sink: Option<Arc<dyn AuditSink>>,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        Self {
            max_bytes: DEFAULT_MAX_BYTES,
            clock_skew: DEFAULT_CLOCK_SKEW,
            expected_issuer: None,
            now: None,
            provider: CryptoProvider::default_provider(),
            audit_sink: None,
        }
    }
}

impl VerifyOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// The limit on the canonical signed bytes.
    pub fn with_max_bytes(mut self, max_bytes: NonZeroUsize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// The tolerated clock difference on `signedAt` and `expiresAt`.
    pub fn with_clock_skew(mut self, clock_skew: Duration) -> Self {
        self.clock_skew = clock_skew;
        self
    }

    /// Refuse a card whose issuer is not `issuer`.
    pub fn with_expected_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.expected_issuer = Some(issuer.into());
        self
    }

    /// Verifies as if the clock read `now` (for tests and replaying logs).
    pub fn at(mut self, now: SystemTime) -> Self {
        self.now = Some(now);
        self
    }

    /// The algorithms a PEM key may use (the default provider has all three).
    pub fn with_provider(mut self, provider: CryptoProvider) -> Self {
        self.provider = provider;
        self
    }

    /// Also records the audit event in `sink`.
    pub fn with_audit_sink(mut self, sink: Arc<dyn AuditSink>) -> Self {
        self.audit_sink = Some(sink);
        self
    }

    /// The limit on the canonical signed bytes.
    pub fn max_bytes(&self) -> NonZeroUsize {
        self.max_bytes
    }

    /// The tolerated clock difference.
    pub fn clock_skew(&self) -> Duration {
        self.clock_skew
    }

    /// The expected issuer, if any.
    pub fn expected_issuer(&self) -> Option<&str> {
        self.expected_issuer.as_deref()
    }
}

impl fmt::Debug for VerifyOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VerifyOptions")
            .field("max_bytes", &self.max_bytes)
            .field("clock_skew", &self.clock_skew)
            .field("expected_issuer", &self.expected_issuer)
            .field("now", &self.now)
            .field("provider", &self.provider)
            .field("audit_sink", &self.audit_sink.is_some())
            .finish()
    }
}

/// The result of verifying a signed card.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyOutcome {
    /// Whether the card is accepted.
    pub valid: bool,
    /// The card, when accepted.
    pub claims: Option<Card>,
    /// Why it was refused, when refused.
    pub reason: Option<RejectReason>,
    /// What the signature turned out to cover, when accepted.
    pub signing_input: Option<SigningInput>,
    /// The key's algorithm, when the key could be read.
    pub algorithm: Option<Algorithm>,
}

/// Records `reason` on the audit event and builds the matching outcome.
fn reject(reason: RejectReason, event: &mut AuditEvent) -> VerifyOutcome {
    event.reason = Some(reason);
    VerifyOutcome {
        valid: false,
        claims: None,
        reason: Some(reason),
        signing_input: None,
        algorithm: event.metadata.algorithm,
    }
}

/// Verifies a signed card envelope against the issuer's public key. See the [module
/// docs](self) for the checks and their order.
pub fn verify_card<'a>(envelope: &Value, key: impl Into<VerifierKey<'a>>, options: &VerifyOptions) -> VerifyOutcome {
    let now = unix_millis(options.now.unwrap_or_else(SystemTime::now));
    let (outcome, event) = evaluate(envelope, key.into(), options, now);
    event.emit(options.audit_sink.as_ref());
    outcome
}

/// Verifies an envelope given as JSON text. Text that is not a JSON object (including
/// duplicate member names, which I-JSON forbids) is `envelope-not-object`.
pub fn verify_card_json<'a>(
    envelope: &[u8],
    key: impl Into<VerifierKey<'a>>,
    options: &VerifyOptions,
) -> VerifyOutcome {
    let parsed = parse_strict(envelope).unwrap_or(Value::Null);
    verify_card(&parsed, key, options)
}

fn evaluate(envelope: &Value, key: VerifierKey<'_>, options: &VerifyOptions, now: u64) -> (VerifyOutcome, AuditEvent) {
    let mut event = AuditEvent::new(AuditAction::CardRejected, AuditOutcome::Denied, now);

    let Some(fields) = envelope.as_object() else {
        return (reject(RejectReason::EnvelopeNotObject, &mut event), event);
    };
    let (card, signature, signed_at, expires_at) =
        match (fields.get("card"), fields.get("signature"), fields.get("signedAt"), fields.get("expiresAt")) {
            (
                Some(card),
                Some(Value::String(signature)),
                Some(signed_at @ Value::Number(_)),
                Some(expires_at @ Value::Number(_)),
            ) if is_truthy(card) && !signature.is_empty() => (card, signature, signed_at, expires_at),
            _ => return (reject(RejectReason::EnvelopeShape, &mut event), event),
        };
    if let Err(error) = validate_card_value(card) {
        event.metadata.detail = Some(error.to_string());
        return (reject(RejectReason::CardShape(error.code()), &mut event), event);
    }
    // Validated above: both are identifier-shaped strings, safe to log.
    let issuer = card["issuer"].as_str().unwrap_or_default();
    let agent_id = card["agentId"].as_str().unwrap_or_default();
    event.metadata.issuer = Some(issuer.to_owned());
    event.metadata.agent_id = Some(agent_id.to_owned());

    if let Some(expected) = options.expected_issuer.as_deref()
        && issuer != expected
    {
        event.metadata.expected = Some(expected.to_owned());
        event.metadata.got = Some(issuer.to_owned());
        return (reject(RejectReason::IssuerMismatch, &mut event), event);
    }

    // Compared as doubles, exactly like the JavaScript reference.
    let skew = options.clock_skew.as_millis() as f64;
    let now_ms = now as f64;
    let signed_at_ms = signed_at.as_f64().unwrap_or(f64::NAN);
    let expires_at_ms = expires_at.as_f64().unwrap_or(f64::NAN);
    event.metadata.signed_at = signed_at.as_number().cloned();
    event.metadata.expires_at = expires_at.as_number().cloned();
    if expires_at_ms + skew < now_ms {
        event.metadata.now = Some(now);
        return (reject(RejectReason::Expired, &mut event), event);
    }
    if signed_at_ms - skew > now_ms {
        event.metadata.now = Some(now);
        return (reject(RejectReason::FutureSigned, &mut event), event);
    }

    // An envelope whose numbers cannot be canonicalized is malformed, whatever the card says.
    let Ok(canonical) = canonical_payload(card, signed_at, expires_at) else {
        return (reject(RejectReason::EnvelopeShape, &mut event), event);
    };
    event.metadata.bytes = Some(canonical.len());
    if canonical.len() > options.max_bytes.get() {
        event.metadata.max_bytes = Some(options.max_bytes.get());
        return (reject(RejectReason::CardTooLarge, &mut event), event);
    }

    let Ok(signature) = STANDARD.decode(signature) else {
        return (reject(RejectReason::SignatureBase64Bad, &mut event), event);
    };

    let parsed;
    let key = match key {
        VerifierKey::Key(key) => key,
        VerifierKey::Pem(pem) => match options.provider.public_key_from_pem(pem) {
            Ok(key) => {
                parsed = key;
                &parsed
            }
            Err(error) => {
                let reason = match error {
                    KeyError::UnsupportedAlgorithm { .. } => RejectReason::KeyUnsupported,
                    _ => RejectReason::KeyMalformed,
                };
                event.metadata.detail = Some(error.to_string());
                return (reject(reason, &mut event), event);
            }
        },
    };
    event.metadata.algorithm = Some(key.algorithm());
    event.metadata.key_fingerprint = key.fingerprint().map(str::to_owned);

    // Accord signs the digest by default; blamejs's shipped code signs the raw bytes. Accepting
    // both cannot be played against itself: a digest is 64 bytes, and the smallest canonical
    // envelope is longer, so no message is valid in both modes.
    let matched = [SigningInput::Shake256Digest, SigningInput::RawCanonical]
        .into_iter()
        .find(|input| key.verify(&input.message(&canonical), &signature));
    let Some(signing_input) = matched else {
        return (reject(RejectReason::SignatureMismatch, &mut event), event);
    };
    let Ok(claims) = card_from_value(card.clone()) else {
        event.metadata.detail = Some("validated card does not read as a card".into());
        return (reject(RejectReason::CardShape(CardErrorCode::BadCard), &mut event), event);
    };

    event.action = AuditAction::CardVerified;
    event.outcome = AuditOutcome::Success;
    event.metadata.signing_input = Some(signing_input);
    let outcome = VerifyOutcome {
        valid: true,
        claims: Some(claims),
        reason: None,
        signing_input: Some(signing_input),
        algorithm: Some(key.algorithm()),
    };
    (outcome, event)
}
