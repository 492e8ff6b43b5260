//! Audit events: one for every card signed, every card accepted and every card refused.
//!
//! Each event goes to `tracing` under the target [`AUDIT_TARGET`] (INFO for success, WARN for a
//! denial) with fixed field names, so a subscriber can route audit lines to their own file; and,
//! when one is attached to the options, to an [`AuditSink`] such as [`JsonLinesSink`]. Events
//! carry public facts only — names, times, sizes, the algorithm and the public key's
//! fingerprint — never key material, signatures or card contents that failed validation.

use std::fmt;
use std::io::Write;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::Number;

use crate::envelope::SigningInput;
use crate::keys::Algorithm;
use crate::verify::RejectReason;

/// The `tracing` target of every audit event.
pub const AUDIT_TARGET: &str = "accord::audit";

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[non_exhaustive]
pub enum AuditAction {
    /// A card was signed (`a2a.card_signed`).
    #[serde(rename = "a2a.card_signed")]
    CardSigned,
    /// A signed card was accepted (`a2a.card_verified`).
    #[serde(rename = "a2a.card_verified")]
    CardVerified,
    /// A signed card was refused (`a2a.card_rejected`).
    #[serde(rename = "a2a.card_rejected")]
    CardRejected,
}

impl AuditAction {
    /// The action's name, for example `a2a.card_rejected`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CardSigned => "a2a.card_signed",
            Self::CardVerified => "a2a.card_verified",
            Self::CardRejected => "a2a.card_rejected",
        }
    }
}

/// How it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum AuditOutcome {
    /// The operation succeeded.
    Success,
    /// The card was refused.
    Denied,
}

impl AuditOutcome {
    /// `success` or `denied`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Denied => "denied",
        }
    }
}

/// The facts attached to an event; absent ones are left out of the JSON line.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AuditMetadata {
    /// The card's issuer (only once the card passed validation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// The card's agent id (only once the card passed validation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The issuer the verifier expected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    /// The issuer the card named, when it was not the expected one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub got: Option<String>,
    /// `signedAt` as it appears in the envelope (ms since the epoch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signed_at: Option<Number>,
    /// `expiresAt` as it appears in the envelope (ms since the epoch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Number>,
    /// The verifier's clock (ms since the epoch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub now: Option<u64>,
    /// The length of the canonical signed bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<usize>,
    /// The verifier's limit on that length.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<usize>,
    /// The key's algorithm.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub algorithm: Option<Algorithm>,
    /// What was signed: the SHAKE256 digest or the raw canonical bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signing_input: Option<SigningInput>,
    /// The public key's fingerprint (`sha256:` + hex of its SPKI DER).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_fingerprint: Option<String>,
    /// For a JWS card signature: the header's `kid` (of the signature that verified, or of the
    /// first one that failed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kid: Option<String>,
    /// For a JWS card signature: the header's `alg`, as written (`ES256`, `EdDSA`, `ML-DSA-87`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jws_alg: Option<String>,
    /// A human-readable explanation (a validation message or a key error), free of secrets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// One audit event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct AuditEvent {
    /// What happened.
    pub action: AuditAction,
    /// How it ended.
    pub outcome: AuditOutcome,
    /// Why the card was refused (denials only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<RejectReason>,
    /// When, in ms since the epoch (the signer's or verifier's clock).
    pub at: u64,
    /// The facts.
    pub metadata: AuditMetadata,
}

impl AuditEvent {
    pub(crate) fn new(action: AuditAction, outcome: AuditOutcome, at: u64) -> Self {
        Self { action, outcome, reason: None, at, metadata: AuditMetadata::default() }
    }

    /// The event as one line of JSON (no trailing newline).
    pub fn to_json_line(&self) -> String {
        // Strings, numbers and enums with string names always serialise.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Sends the event to `tracing` and, if there is one, to `sink`.
    pub(crate) fn emit(&self, sink: Option<&Arc<dyn AuditSink>>) {
        let metadata = &self.metadata;
        let algorithm = metadata.algorithm.map(Algorithm::name);
        let signing_input = metadata.signing_input.map(SigningInput::as_str);
        let reason = self.reason.map(RejectReason::as_str);
        let signed_at = metadata.signed_at.as_ref().map(tracing::field::display);
        let expires_at = metadata.expires_at.as_ref().map(tracing::field::display);
        let bytes = metadata.bytes.map(|n| n as u64);
        let max_bytes = metadata.max_bytes.map(|n| n as u64);
        macro_rules! audit_event {
            ($level:expr) => {
                tracing::event!(
                    target: AUDIT_TARGET,
                    $level,
                    action = self.action.as_str(),
                    outcome = self.outcome.as_str(),
                    reason,
                    at = self.at,
                    issuer = metadata.issuer.as_deref(),
                    agent_id = metadata.agent_id.as_deref(),
                    expected = metadata.expected.as_deref(),
                    got = metadata.got.as_deref(),
                    signed_at,
                    expires_at,
                    now = metadata.now,
                    bytes,
                    max_bytes,
                    algorithm,
                    signing_input,
                    key_fingerprint = metadata.key_fingerprint.as_deref(),
                    kid = metadata.kid.as_deref(),
                    jws_alg = metadata.jws_alg.as_deref(),
                    detail = metadata.detail.as_deref(),
                    "{} {}",
                    self.action.as_str(),
                    self.outcome.as_str()
                )
            };
        }
        match self.outcome {
            AuditOutcome::Success => audit_event!(tracing::Level::INFO),
            AuditOutcome::Denied => audit_event!(tracing::Level::WARN),
        }
        if let Some(sink) = sink {
            sink.record(self);
        }
    }
}

/// Somewhere audit events are kept besides `tracing`. Recording must not fail the operation
/// that produced the event, so it returns nothing.
pub trait AuditSink: Send + Sync {
    /// Keeps one event.
    fn record(&self, event: &AuditEvent);
}

/// An [`AuditSink`] that writes each event as one line of JSON (JSON Lines) to a writer.
///
/// ```
/// use std::sync::Arc;
/// use accord_card::{JsonLinesSink, VerifyOptions};
///
/// let sink = Arc::new(JsonLinesSink::new(Vec::new()));
/// let options = VerifyOptions::new().with_audit_sink(sink.clone());
/// let outcome = accord_card::verify_card(&serde_json::json!([]), "", &options);
/// assert_eq!(outcome.reason.unwrap().as_str(), "envelope-not-object");
/// let lines = String::from_utf8(sink.take()).unwrap();
/// assert!(lines.starts_with(r#"{"action":"a2a.card_rejected","outcome":"denied","reason":"envelope-not-object""#));
/// ```
pub struct JsonLinesSink<W> {
    writer: Mutex<W>,
}

impl<W: Write + Send> JsonLinesSink<W> {
    /// A sink writing to `writer`, for example an append-mode file.
    pub fn new(writer: W) -> Self {
        Self { writer: Mutex::new(writer) }
    }

    /// The writer back.
    pub fn into_inner(self) -> W {
        self.writer.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl JsonLinesSink<Vec<u8>> {
    /// Takes the lines written so far, leaving the buffer empty (for in-memory sinks).
    pub fn take(&self) -> Vec<u8> {
        let mut buffer = self.writer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        std::mem::take(&mut *buffer)
    }
}

impl<W: Write + Send> AuditSink for JsonLinesSink<W> {
    fn record(&self, event: &AuditEvent) {
        let mut line = event.to_json_line();
        line.push('\n');
        let mut writer = self.writer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let written = writer.write_all(line.as_bytes()).and_then(|()| writer.flush());
        if let Err(error) = written {
            // Not under AUDIT_TARGET: this is about the sink, not an audited operation.
            tracing::error!(target: "accord::card", %error, "could not write an audit event to the JSON-lines sink");
        }
    }
}

impl<W> fmt::Debug for JsonLinesSink<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JsonLinesSink").finish_non_exhaustive()
    }
}
