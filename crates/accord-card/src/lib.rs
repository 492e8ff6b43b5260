#![doc = include_str!("../README.md")]

mod algorithms;
pub mod audit;
pub mod card;
pub mod envelope;
pub mod jcs;
pub mod jwk;
pub mod jws;
pub mod keys;
pub mod provider;
pub mod verify;

pub use audit::{AUDIT_TARGET, AuditAction, AuditEvent, AuditMetadata, AuditOutcome, AuditSink, JsonLinesSink};
pub use card::{
    Card, CardError, CardErrorCode, CardOptions, DEFAULT_CARD_VERSION, Endpoint, card_from_agent_card, card_problems,
    create_card, validate_card_value,
};
pub use envelope::{DEFAULT_TTL, SignOptions, SignedEnvelope, SigningInput, canonical_payload, sign_card};
pub use jcs::{CanonError, canonicalize, canonicalize_value, shake256_64};
pub use jwk::{Jwk, jwk_thumbprint, public_key_from_jwk, public_key_to_jwk};
pub use jws::{
    AgentCardSignature, JwsAlgorithm, JwsError, JwsSignOptions, JwsVerifyOptions, JwsVerifyOutcome, SignatureVerdict,
    TrustStore, TrustedKey, card_signing_payload, sign_agent_card, verify_agent_card, verify_agent_card_json,
};
pub use keys::{Algorithm, KeyError, PrivateKey, PublicKey, Randomness};
pub use provider::CryptoProvider;
pub use verify::{
    DEFAULT_CLOCK_SKEW, DEFAULT_MAX_BYTES, RejectReason, VerifierKey, VerifyOptions, VerifyOutcome, verify_card,
    verify_card_json,
};
