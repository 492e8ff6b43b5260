//! The signed card: the agent's identity card (see `accord-card`) in a signed envelope
//! `{card, signedAt, expiresAt, signature}`, served at [`SIGNED_CARD_PATH`] and, when the operator
//! opts in, at `/.well-known/agent.json` in place of the plain card.
//!
//! The identity card is derived from the card value the plain card route serves for the same
//! request (one builder, same origin and base path): its capabilities are the skill ids and its
//! endpoints the interface URLs. An origin the card schema refuses (plain `http` on a host that is
//! not loopback, such as `http://0.0.0.0:8787`) gets a 503 `card_signing_unavailable`, never a
//! 500, and the reason is logged.
//!
//! **Caching.** Signing is slow (SLH-DSA-SHAKE-256f takes about a third of a second), so an
//! envelope is signed once per base URL and served from memory until it comes within the
//! *refresh margin* of its expiry — a tenth of the TTL, at least the `Cache-Control` max-age, at
//! most half the TTL — and only then signed again, on a blocking thread. While one request
//! re-signs, the others keep getting the previous envelope, which is still valid. The
//! `Cache-Control` max-age never exceeds the envelope's remaining life, so no cache keeps an
//! envelope past its `expiresAt`. Signatures are made one at a time, and at most
//! [`MAX_CACHED_ORIGINS`] base URLs are remembered (the least recently served one is forgotten).
//!
//! This module owns the envelope routes and their cache; the card itself is built by the card
//! builder (`card.rs`), and the signing done by `accord-card`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use accord_card::{
    Card, CardError, CardOptions, PrivateKey, SignOptions, SigningInput, card_from_agent_card, create_card, sign_card,
};
use axum::extract::OriginalUri;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use bytes::Bytes;

use super::paths::{LEGACY_CARD_PATH, SIGNED_CARD_PATH};
use crate::AppState;

/// The shortest TTL [`SignedCardConfig::with_ttl`] accepts. An envelope is reused for at least
/// half its TTL, so this bounds signing to two signatures a minute per origin.
pub const MIN_SIGNED_CARD_TTL: Duration = Duration::from_secs(60);

/// How many base URLs the envelope cache remembers.
pub const MAX_CACHED_ORIGINS: usize = 16;

/// The default `Cache-Control` max-age of the envelope: 5 minutes.
pub const DEFAULT_SIGNED_CARD_MAX_AGE: Duration = Duration::from_secs(300);

/// The envelope depends on these request headers (through the origin), as the plain card does.
const VARY: &str = "host, x-forwarded-host, x-forwarded-proto";

const UNAVAILABLE_CODE: &str = "card_signing_unavailable";

/// How the server signs and publishes its card.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// use accord_card::{Algorithm, PrivateKey};
/// use accord_server::{ServerConfig, SignedCardConfig};
///
/// let key = Arc::new(PrivateKey::generate(Algorithm::Ed25519)?);
/// let signed = SignedCardConfig::new(key, "agent.example.com", "ops-bot-1")?
///     .with_ttl(Duration::from_secs(6 * 60 * 60))?
///     .serve_at_legacy_path(true);
/// let config = ServerConfig::default().signed_card(signed);
/// # let _ = config;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct SignedCardConfig {
    key: Arc<PrivateKey>,
    issuer: String,
    agent_id: String,
    ttl: Duration,
    max_age: Duration,
    serve_at_legacy_path: bool,
    signing_input: SigningInput,
}

impl SignedCardConfig {
    /// Signs with `key` as `issuer` for the agent `agent_id` (both `[a-zA-Z0-9._:/-]{1,256}`,
    /// refused with the card schema's error otherwise). Defaults: the envelope lives 24 hours,
    /// caches may keep it 5 minutes, the signature covers the SHAKE256 digest, and
    /// `/.well-known/agent.json` keeps serving the plain card.
    pub fn new(
        key: Arc<PrivateKey>,
        issuer: impl Into<String>,
        agent_id: impl Into<String>,
    ) -> Result<Self, CardError> {
        let (issuer, agent_id) = (issuer.into(), agent_id.into());
        // The card schema is the one authority on what an issuer or agent id may look like.
        create_card(CardOptions::new(issuer.clone(), agent_id.clone()))?;
        Ok(Self {
            key,
            issuer,
            agent_id,
            ttl: accord_card::DEFAULT_TTL,
            max_age: DEFAULT_SIGNED_CARD_MAX_AGE,
            serve_at_legacy_path: false,
            signing_input: SigningInput::default(),
        })
    }

    /// How long each envelope is valid: at least [`MIN_SIGNED_CARD_TTL`], a whole number of
    /// milliseconds ([`CardError::BadTtl`] otherwise).
    pub fn with_ttl(mut self, ttl: Duration) -> Result<Self, CardError> {
        if ttl < MIN_SIGNED_CARD_TTL || !ttl.subsec_nanos().is_multiple_of(1_000_000) {
            return Err(CardError::BadTtl);
        }
        self.ttl = ttl;
        Ok(self)
    }

    /// The `Cache-Control: public, max-age` of the envelope (default 5 minutes; capped by the
    /// envelope's remaining life when served).
    pub fn with_max_age(mut self, max_age: Duration) -> Self {
        self.max_age = max_age;
        self
    }

    /// Also serve the envelope at `/.well-known/agent.json`, for peers that look for a signed card
    /// there. The plain card then stays at `/.well-known/agent-card.json` only.
    pub fn serve_at_legacy_path(mut self, enabled: bool) -> Self {
        self.serve_at_legacy_path = enabled;
        self
    }

    /// What the signature covers: the SHAKE256 digest (default) or the raw canonical bytes,
    /// which is what peers running blamejs's shipped code verify.
    pub fn with_signing_input(mut self, signing_input: SigningInput) -> Self {
        self.signing_input = signing_input;
        self
    }

    /// The issuer named in the card.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The agent id named in the card.
    pub fn agent_id(&self) -> &str {
        &self.agent_id
    }

    /// How long each envelope is valid.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The configured `Cache-Control` max-age.
    pub fn max_age(&self) -> Duration {
        self.max_age
    }

    /// Whether `/.well-known/agent.json` serves the envelope instead of the plain card.
    pub fn serves_at_legacy_path(&self) -> bool {
        self.serve_at_legacy_path
    }

    /// What the signature covers.
    pub fn signing_input(&self) -> SigningInput {
        self.signing_input
    }

    /// The public key peers pin to verify the envelope.
    pub fn public_key(&self) -> accord_card::PublicKey {
        self.key.public_key()
    }

    /// How long before expiry an envelope is signed again: a tenth of the TTL, but at least the
    /// max-age (so caches see a long-lived envelope), and at most half the TTL (so an envelope
    /// is always reused for half its life).
    fn refresh_margin(&self) -> Duration {
        (self.ttl / 10).max(self.max_age).min(self.ttl / 2)
    }
}

/// The envelope routes: [`SIGNED_CARD_PATH`], and the legacy card path when opted in.
pub(crate) fn routes(app: Arc<AppState>, config: SignedCardConfig) -> crate::openapi::Routes {
    let legacy = config.serve_at_legacy_path;
    let state = Arc::new(SignedCardState {
        app,
        config,
        cache: Mutex::new(HashMap::new()),
        signing: Arc::new(tokio::sync::Mutex::new(())),
    });
    use crate::openapi::{Routes, describe};
    let handler = any(signed_card).with_state(state);
    let routes = Routes::new().route(SIGNED_CARD_PATH, handler.clone(), describe::signed_card("getSignedAgentCard"));
    if legacy {
        routes.route(LEGACY_CARD_PATH, handler, describe::signed_card("getSignedAgentCardLegacy"))
    } else {
        routes
    }
}

struct SignedCardState {
    app: Arc<AppState>,
    config: SignedCardConfig,
    /// Signed envelopes by base URL.
    cache: Mutex<HashMap<String, CachedEnvelope>>,
    /// Held while signing, so that signatures are made one at a time.
    signing: Arc<tokio::sync::Mutex<()>>,
}

struct CachedEnvelope {
    /// The identity card it signs: a card that changed is signed again at once.
    card: Card,
    /// The serialized envelope, served as is.
    body: Bytes,
    /// When it expires, ms since the epoch.
    expires_at: u64,
    /// When it should be replaced, ms since the epoch.
    refresh_at: u64,
    /// When it was last served (for eviction), ms since the epoch.
    last_served: u64,
}

/// What the cache holds for a base URL and card.
enum Lookup {
    /// An envelope that is not yet due for refresh.
    Fresh(Bytes, u64),
    /// An envelope due for refresh that is still valid.
    Stale(Bytes, u64),
    /// Nothing usable.
    Missing,
}

impl SignedCardState {
    fn lookup(&self, base_url: &str, card: &Card, now: u64) -> Lookup {
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(entry) = cache.get_mut(base_url).filter(|entry| entry.card == *card && now < entry.expires_at) else {
            return Lookup::Missing;
        };
        entry.last_served = now;
        if now < entry.refresh_at {
            Lookup::Fresh(entry.body.clone(), entry.expires_at)
        } else {
            Lookup::Stale(entry.body.clone(), entry.expires_at)
        }
    }

    /// The envelope for `card` at `base_url` and its expiry: from the cache when fresh, else
    /// signed now.
    async fn envelope(self: &Arc<Self>, base_url: &str, card: Card) -> Result<(Bytes, u64), SigningFailure> {
        let stale = match self.lookup(base_url, &card, now_ms()) {
            Lookup::Fresh(body, expires_at) => return Ok((body, expires_at)),
            Lookup::Stale(body, expires_at) => Some((body, expires_at)),
            Lookup::Missing => None,
        };
        let guard = match (&stale, Arc::clone(&self.signing).try_lock_owned()) {
            (_, Ok(guard)) => guard,
            // Someone is signing already: a still-valid envelope beats waiting for them.
            (Some(stale), Err(_)) => return Ok(stale.clone()),
            (None, Err(_)) => Arc::clone(&self.signing).lock_owned().await,
        };
        // The signing runs in its own task, which holds the lock until the envelope is cached:
        // a caller that hangs up cannot abandon a signature half-way and let another one start.
        let state = Arc::clone(self);
        let base = base_url.to_owned();
        let signing = tokio::spawn(async move {
            let _guard = guard;
            // Whoever held the lock may have just signed this very card.
            if let Lookup::Fresh(body, expires_at) = state.lookup(&base, &card, now_ms()) {
                return Ok((body, expires_at));
            }
            state.sign(&base, card).await
        });
        match signing.await.unwrap_or(Err(SigningFailure::Interrupted)) {
            Ok(signed) => Ok(signed),
            Err(failure) => match stale {
                Some(stale) => {
                    tracing::warn!(
                        %base_url,
                        reason = %failure,
                        "re-signing the card failed; serving the previous envelope"
                    );
                    Ok(stale)
                }
                None => Err(failure),
            },
        }
    }

    async fn sign(&self, base_url: &str, card: Card) -> Result<(Bytes, u64), SigningFailure> {
        let key = Arc::clone(&self.config.key);
        let options = SignOptions::new().with_ttl(self.config.ttl).with_signing_input(self.config.signing_input);
        let to_sign = card.clone();
        let envelope = tokio::task::spawn_blocking(move || sign_card(&to_sign, &key, &options))
            .await
            .map_err(|_| SigningFailure::Interrupted)?
            .map_err(SigningFailure::Card)?;
        let body = Bytes::from(serde_json::to_vec(&envelope).map_err(|_| SigningFailure::Serialize)?);

        let margin = u64::try_from(self.config.refresh_margin().as_millis()).unwrap_or(u64::MAX);
        let now = now_ms();
        let entry = CachedEnvelope {
            card,
            body: body.clone(),
            expires_at: envelope.expires_at,
            refresh_at: envelope.expires_at.saturating_sub(margin),
            last_served: now,
        };
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if !cache.contains_key(base_url) && cache.len() >= MAX_CACHED_ORIGINS {
            let oldest = cache.iter().min_by_key(|(_, entry)| entry.last_served).map(|(url, _)| url.clone());
            if let Some(oldest) = oldest {
                cache.remove(&oldest);
            }
        }
        cache.insert(base_url.to_owned(), entry);
        Ok((body, envelope.expires_at))
    }
}

/// Why no envelope could be produced.
#[derive(Debug)]
enum SigningFailure {
    /// The identity card could not be built or signed.
    Card(CardError),
    /// The signing thread did not finish.
    Interrupted,
    /// The envelope did not serialize.
    Serialize,
}

impl std::fmt::Display for SigningFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Card(error) => write!(f, "{error}"),
            Self::Interrupted => f.write_str("the signing thread stopped before finishing"),
            Self::Serialize => f.write_str("the envelope does not serialize"),
        }
    }
}

async fn signed_card(
    axum::extract::State(state): axum::extract::State<Arc<SignedCardState>>,
    method: Method,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> Response {
    if method != Method::GET {
        return (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, HeaderValue::from_static("GET"))]).into_response();
    }
    let base_url = super::paths::base_url(&headers, &uri);
    let agent_card = state.app.card.build(&base_url);
    // Named as the agent's URL, with a trailing `/`, in logs, messages and the cache.
    let base_url = format!("{base_url}/");
    let identity = match card_from_agent_card(&agent_card, &state.config.issuer, &state.config.agent_id) {
        Ok(identity) => identity,
        Err(error) => {
            tracing::warn!(%base_url, %error, "the identity card for this origin cannot be signed");
            return unavailable(format!(
                "No signed card can be issued for {base_url}: {error}. Ask through https (a proxy setting \
                 X-Forwarded-Proto) or through a loopback host"
            ));
        }
    };
    match state.envelope(&base_url, identity).await {
        Ok((body, expires_at)) => {
            let remaining = expires_at.saturating_sub(now_ms()) / 1000;
            let max_age = state.config.max_age.as_secs().min(remaining);
            let cache_control = format!("public, max-age={max_age}");
            let mut response = ([(header::CONTENT_TYPE, "application/json")], body).into_response();
            let response_headers = response.headers_mut();
            if let Ok(value) = HeaderValue::from_str(&cache_control) {
                response_headers.insert(header::CACHE_CONTROL, value);
            }
            response_headers.insert(header::VARY, HeaderValue::from_static(VARY));
            response
        }
        Err(failure) => {
            tracing::warn!(%base_url, reason = %failure, "signing the card failed");
            unavailable(format!("The card could not be signed: {failure}"))
        }
    }
}

fn unavailable(message: String) -> Response {
    super::error_response(StatusCode::SERVICE_UNAVAILABLE, UNAVAILABLE_CODE, message)
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use accord_card::Algorithm;

    use super::*;

    fn config() -> SignedCardConfig {
        let key = Arc::new(PrivateKey::generate(Algorithm::Ed25519).expect("key"));
        SignedCardConfig::new(key, "agent.example.com", "bot-1").expect("config")
    }

    #[test]
    fn ids_and_ttl_are_checked_when_configured() {
        let key = Arc::new(PrivateKey::generate(Algorithm::Ed25519).expect("key"));
        assert!(SignedCardConfig::new(Arc::clone(&key), "has space", "bot").is_err());
        assert!(SignedCardConfig::new(Arc::clone(&key), "ok", "").is_err());
        assert_eq!(config().with_ttl(Duration::from_secs(59)).expect_err("too short"), CardError::BadTtl);
        assert_eq!(config().with_ttl(Duration::from_micros(60_000_500)).expect_err("not whole ms"), CardError::BadTtl);
        assert_eq!(config().with_ttl(Duration::from_secs(60)).expect("ttl").ttl(), Duration::from_secs(60));
    }

    #[test]
    fn refresh_margin_is_a_tenth_at_least_max_age_at_most_half() {
        let day = Duration::from_secs(86_400);
        assert_eq!(config().refresh_margin(), day / 10);
        let hour = config().with_ttl(Duration::from_secs(3600)).expect("ttl");
        assert_eq!(hour.refresh_margin(), Duration::from_secs(360));
        let short = config().with_ttl(Duration::from_secs(60)).expect("ttl");
        assert_eq!(short.refresh_margin(), Duration::from_secs(30), "never more than half the ttl");
        let long_cache = hour.with_max_age(Duration::from_secs(900));
        assert_eq!(long_cache.refresh_margin(), Duration::from_secs(900), "at least the max-age");
    }
}
