//! Fetching a peer's signed card and verifying it against a pinned key in one call.
//!
//! The envelope is looked for at the URL given, then at `.well-known/agent-card.signed.json` and
//! `.well-known/agent.json` under it (see [`SIGNED_CARD_PATHS`]); the first JSON body shaped like
//! an envelope (an object with `card` and `signature`) is the one verified, as the bytes received,
//! with [`accord_card::verify_card_json`] (so duplicate member names are refused as in a file). A card that fails verification is a
//! [`ClientError::SignedCardRejected`] carrying the [`RejectReason`]; it is never retried elsewhere.

use accord_card::{Algorithm, Card, RejectReason, SigningInput, VerifierKey, VerifyOptions, verify_card_json};
use reqwest::header::ACCEPT;
use reqwest::{StatusCode, Url};
use serde_json::Value;

use crate::error::{ClientError, Operation};
use crate::http::read_bounded;
use crate::lucid::{Client, directory, parse_url, status_error};

/// Where a signed card may be found, relative to an agent's base URL, in the order tried after
/// the URL itself.
pub const SIGNED_CARD_PATHS: &[&str] = &[".well-known/agent-card.signed.json", ".well-known/agent.json"];

/// The largest envelope response read: 1 MiB (an SLH-DSA signature alone is 66 KB of base64).
pub const MAX_ENVELOPE_RESPONSE_BYTES: usize = 1024 * 1024;

/// A signed card that verified against the pinned key and the expected issuer.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct VerifiedCard {
    /// The card the signature vouches for.
    pub claims: Card,
    /// The envelope `{card, signedAt, expiresAt, signature}` as received.
    pub envelope: Value,
    /// Where it was fetched from.
    pub url: String,
    /// What the signature covers.
    pub signing_input: SigningInput,
    /// The signature algorithm (the pinned key's).
    pub algorithm: Algorithm,
}

impl VerifiedCard {
    /// `expiresAt`, in ms since the Unix epoch.
    pub fn expires_at(&self) -> Option<u64> {
        self.envelope.get("expiresAt").and_then(Value::as_u64)
    }

    /// `signedAt`, in ms since the Unix epoch.
    pub fn signed_at(&self) -> Option<u64> {
        self.envelope.get("signedAt").and_then(Value::as_u64)
    }
}

/// An envelope as fetched, before verification.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct FetchedEnvelope {
    /// The envelope's JSON.
    pub envelope: Value,
    /// The body exactly as received (what verification reads).
    pub body: Vec<u8>,
    /// Where it was fetched from.
    pub url: String,
}

impl Client {
    /// Fetches an agent's signed card and verifies it against `key` (a pinned [`PublicKey`] or
    /// its SPKI PEM) and `expected_issuer`, with the other checks of `options` (size, clock skew,
    /// provider, audit sink; an expected issuer set there is replaced by `expected_issuer`).
    ///
    /// `base` is the agent's base URL or the envelope's own URL. A refused card is
    /// [`ClientError::SignedCardRejected`] with the reason, such as
    /// [`RejectReason::SignatureMismatch`] or [`RejectReason::IssuerMismatch`].
    ///
    /// ```no_run
    /// use accord_client::Client;
    /// use accord_client::accord_card::{PublicKey, VerifyOptions};
    ///
    /// # async fn run(pinned_pem: &str) -> Result<(), Box<dyn std::error::Error>> {
    /// let key = PublicKey::from_pem(pinned_pem)?;
    /// let verified = Client::new()
    ///     .fetch_verified_card("https://agent.example.com", &key, "agent.example.com", VerifyOptions::new())
    ///     .await?;
    /// println!("{} can {:?}", verified.claims.agent_id, verified.claims.capabilities);
    /// # Ok(()) }
    /// ```
    ///
    /// [`PublicKey`]: accord_card::PublicKey
    pub async fn fetch_verified_card<'k>(
        &self,
        base: &str,
        key: impl Into<VerifierKey<'k>>,
        expected_issuer: &str,
        options: VerifyOptions,
    ) -> Result<VerifiedCard, ClientError> {
        let fetched = self.fetch_signed_envelope(base).await?;
        let options = options.with_expected_issuer(expected_issuer);
        let outcome = verify_card_json(&fetched.body, key, &options);
        match (outcome.valid, outcome.claims, outcome.signing_input, outcome.algorithm) {
            (true, Some(claims), Some(signing_input), Some(algorithm)) => {
                Ok(VerifiedCard { claims, envelope: fetched.envelope, url: fetched.url, signing_input, algorithm })
            }
            _ => Err(ClientError::SignedCardRejected {
                url: fetched.url,
                // A refusal always has a reason; an accept without its facts is no accept.
                reason: outcome.reason.unwrap_or(RejectReason::EnvelopeShape),
            }),
        }
    }

    /// Fetches an agent's signed envelope without verifying it (for inspection and linting):
    /// the URL itself, then each of [`SIGNED_CARD_PATHS`] under it. A 404 or a body that is not
    /// an envelope moves on; on a well-known path any other error status stops, and an error
    /// from the URL itself is returned only when no well-known path has an envelope.
    pub async fn fetch_signed_envelope(&self, base: &str) -> Result<FetchedEnvelope, ClientError> {
        let operation = Operation::FetchSignedCard;
        let base_url = parse_url(base)?;
        if !matches!(base_url.scheme(), "http" | "https") {
            return Err(ClientError::InvalidUrl {
                url: base.to_owned(),
                reason: "only http and https are supported".into(),
            });
        }
        let dir = directory(&base_url);
        let mut well_known = Vec::new();
        for path in SIGNED_CARD_PATHS {
            if let Ok(url) = dir.join(path)
                && url != base_url
            {
                well_known.push(url);
            }
        }
        // The URL itself may be anything (a landing page, the agent's root), so its failure is
        // only reported when no well-known path has an envelope either.
        let first_failure = match self.get_envelope(operation, &base_url).await {
            Ok(Some((envelope, body))) => return Ok(FetchedEnvelope { envelope, body, url: base_url.to_string() }),
            Ok(None) => None,
            Err(error) => Some(error),
        };
        for url in well_known {
            if let Some((envelope, body)) = self.get_envelope(operation, &url).await? {
                return Ok(FetchedEnvelope { envelope, body, url: url.to_string() });
            }
        }
        Err(first_failure.unwrap_or_else(|| ClientError::SignedCardNotFound { base: base.to_owned() }))
    }

    /// GETs `url`: the envelope and the body it was read from, or `Ok(None)` for a 404 or a body
    /// that is not an envelope.
    async fn get_envelope(&self, operation: Operation, url: &Url) -> Result<Option<(Value, Vec<u8>)>, ClientError> {
        let response = match self.http.get(url.clone()).header(ACCEPT, "application/json").send().await {
            Ok(response) => response,
            Err(source) => return Err(self.unreached(operation, url, source).await),
        };
        let status = response.status();
        if status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(status_error(operation, response).await);
        }
        let body = read_bounded(response, MAX_ENVELOPE_RESPONSE_BYTES)
            .await
            .map_err(|error| ClientError::body(operation, url, error))?;
        let Ok(value) = serde_json::from_slice::<Value>(&body) else { return Ok(None) };
        let is_envelope =
            value.as_object().is_some_and(|fields| fields.contains_key("card") && fields.contains_key("signature"));
        Ok(is_envelope.then_some((value, body)))
    }
}
