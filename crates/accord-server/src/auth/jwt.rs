//! Bearer JWTs checked against a JWKS: the signature with the key the token's `kid` names, the
//! algorithm against the allowed ones and the key's own family, then `iss`, `aud`, `exp` (required)
//! and `nbf` (when present) with a small leeway.
//!
//! The key set comes from a file or an `https` URL, read at start-up and read again when a token
//! names a key the set does not have (a rotation), at most once per [`JwtConfig::refresh_interval`];
//! a failed refresh keeps the copy in hand. Symmetric keys are never accepted: a JWKS is public, so
//! an HMAC "secret" in it would let anyone sign.

use std::collections::HashMap;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use accord_engine::task::OwnerHash;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation, errors::ErrorKind};
use serde::Deserialize;
use tokio::sync::{Mutex, RwLock};

use super::Principal;

/// The leeway on `exp` and `nbf` unless configured (clock skew between issuer and agent).
pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(30);

/// The shortest time between two reads of the key set caused by unknown `kid`s, unless configured.
pub const DEFAULT_REFRESH_INTERVAL: Duration = Duration::from_secs(60);

/// Where the JSON Web Key Set is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwksSource {
    /// A JSON file.
    File(PathBuf),
    /// An `https` URL (`http` only for a loopback host, for tests and local issuers).
    Url(String),
}

impl JwksSource {
    /// A URL when `text` starts with `https://` or `http://`, a file path otherwise.
    pub fn parse(text: &str) -> Self {
        if text.starts_with("https://") || text.starts_with("http://") {
            Self::Url(text.to_owned())
        } else {
            Self::File(PathBuf::from(text))
        }
    }
}

/// How JWTs are checked.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct JwtConfig {
    /// The key set.
    pub jwks: JwksSource,
    /// The required `iss`.
    pub issuer: String,
    /// The required `aud` (one of the token's audiences).
    pub audience: String,
    /// The accepted algorithms; empty (the default): those of the key set's keys. HMAC algorithms
    /// are refused.
    pub algorithms: Vec<Algorithm>,
    /// The leeway on `exp` and `nbf` (default [`DEFAULT_LEEWAY`]).
    pub leeway: Duration,
    /// The shortest time between two reads of the key set for unknown `kid`s (default
    /// [`DEFAULT_REFRESH_INTERVAL`]).
    pub refresh_interval: Duration,
}

impl JwtConfig {
    /// Tokens from `issuer` for `audience`, signed with a key of `jwks`.
    pub fn new(jwks: JwksSource, issuer: impl Into<String>, audience: impl Into<String>) -> Self {
        Self {
            jwks,
            issuer: issuer.into(),
            audience: audience.into(),
            algorithms: Vec::new(),
            leeway: DEFAULT_LEEWAY,
            refresh_interval: DEFAULT_REFRESH_INTERVAL,
        }
    }

    /// Sets [`JwtConfig::algorithms`].
    pub fn algorithms(mut self, algorithms: impl IntoIterator<Item = Algorithm>) -> Self {
        self.algorithms = algorithms.into_iter().collect();
        self
    }

    /// Sets [`JwtConfig::leeway`].
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// Sets [`JwtConfig::refresh_interval`].
    pub fn refresh_interval(mut self, interval: Duration) -> Self {
        self.refresh_interval = interval;
        self
    }
}

/// Why a JWT verifier could not be set up.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum JwtSetupError {
    /// The key set could not be read or fetched.
    Unreachable(String),
    /// The key set is not a JWKS, or holds no usable public key.
    InvalidKeySet(String),
    /// An algorithm is not allowed (HMAC, or unknown).
    Algorithm(String),
    /// The issuer or the audience is empty.
    Claims(String),
}

impl std::fmt::Display for JwtSetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unreachable(detail) => write!(f, "the JWKS cannot be read: {detail}"),
            Self::InvalidKeySet(detail) => write!(f, "the JWKS is not usable: {detail}"),
            Self::Algorithm(detail) => write!(f, "JWT algorithm not allowed: {detail}"),
            Self::Claims(detail) => write!(f, "JWT claims: {detail}"),
        }
    }
}

impl std::error::Error for JwtSetupError {}

/// Parses a comma-separated list of JWS algorithm names (`RS256,ES256`), refusing HMAC ones.
pub fn parse_algorithms(text: &str) -> Result<Vec<Algorithm>, JwtSetupError> {
    text.split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(|name| {
            let algorithm =
                Algorithm::from_str(name).map_err(|_| JwtSetupError::Algorithm(format!("unknown algorithm {name}")))?;
            if is_hmac(algorithm) {
                return Err(JwtSetupError::Algorithm(format!("{name} is symmetric; a JWKS holds public keys")));
            }
            Ok(algorithm)
        })
        .collect()
}

fn is_hmac(algorithm: Algorithm) -> bool {
    matches!(algorithm, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512)
}

/// Why a presented JWT was refused: the audit event's `reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JwtRejection {
    Malformed,
    DisallowedAlgorithm,
    UnknownKey,
    BadSignature,
    WrongIssuer,
    WrongAudience,
    Expired,
    NotYetValid,
    MissingClaim,
}

impl JwtRejection {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Malformed => "malformed",
            Self::DisallowedAlgorithm => "disallowed_algorithm",
            Self::UnknownKey => "unknown_kid",
            Self::BadSignature => "bad_signature",
            Self::WrongIssuer => "wrong_issuer",
            Self::WrongAudience => "wrong_audience",
            Self::Expired => "expired",
            Self::NotYetValid => "not_yet_valid",
            Self::MissingClaim => "missing_claim",
        }
    }
}

/// One usable key of the set.
struct Key {
    decoding: DecodingKey,
    /// The algorithms this key verifies: its `alg` when declared, else its family's defaults.
    algorithms: Vec<Algorithm>,
}

/// The keys in hand, by `kid` (`None` for a key without one).
#[derive(Default)]
struct Keys {
    by_kid: HashMap<Option<String>, Arc<Key>>,
}

/// Checks JWTs against a key set; cheap to clone.
#[derive(Clone)]
pub struct JwtVerifier {
    inner: Arc<Inner>,
}

struct Inner {
    config: JwtConfig,
    client: reqwest::Client,
    keys: RwLock<Keys>,
    /// When the key set was last read, to rate-limit refreshes.
    last_read: Mutex<Instant>,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("jwks", &self.inner.config.jwks)
            .field("issuer", &self.inner.config.issuer)
            .field("audience", &self.inner.config.audience)
            .finish_non_exhaustive()
    }
}

/// The claims Accord reads.
#[derive(Deserialize)]
struct Claims {
    iss: String,
    sub: String,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    scp: Option<ScopeClaim>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ScopeClaim {
    Text(String),
    List(Vec<String>),
}

impl JwtVerifier {
    /// Reads the key set (fetching it when it is a URL) and checks the configuration.
    pub async fn load(config: JwtConfig) -> Result<Self, JwtSetupError> {
        if config.issuer.trim().is_empty() || config.audience.trim().is_empty() {
            return Err(JwtSetupError::Claims("an issuer and an audience are required".into()));
        }
        if let Some(hmac) = config.algorithms.iter().find(|algorithm| is_hmac(**algorithm)) {
            return Err(JwtSetupError::Algorithm(format!("{hmac:?} is symmetric; a JWKS holds public keys")));
        }
        if let JwksSource::Url(url) = &config.jwks {
            check_url(url)?;
        }
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| JwtSetupError::Unreachable(error.to_string()))?;
        let keys = read_keys(&config.jwks, &client).await?;
        if keys.by_kid.is_empty() {
            return Err(JwtSetupError::InvalidKeySet("no usable public key".into()));
        }
        Ok(Self {
            inner: Arc::new(Inner { config, client, keys: RwLock::new(keys), last_read: Mutex::new(Instant::now()) }),
        })
    }

    /// The algorithms currently accepted: the configured ones, or those of the keys in hand.
    pub async fn algorithms(&self) -> Vec<Algorithm> {
        if !self.inner.config.algorithms.is_empty() {
            return self.inner.config.algorithms.clone();
        }
        let keys = self.inner.keys.read().await;
        let mut algorithms: Vec<Algorithm> =
            keys.by_kid.values().flat_map(|key| key.algorithms.iter().copied()).collect();
        algorithms.sort_by_key(|algorithm| format!("{algorithm:?}"));
        algorithms.dedup();
        algorithms
    }

    /// The principal a valid token stands for.
    pub(crate) async fn verify(&self, token: &str) -> Result<Principal, JwtRejection> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| match header_algorithm(token) {
            // `none`, and any other name outside the signing algorithms this crate knows.
            Some(_) => JwtRejection::DisallowedAlgorithm,
            None => JwtRejection::Malformed,
        })?;
        if is_hmac(header.alg) || !self.algorithms().await.contains(&header.alg) {
            return Err(JwtRejection::DisallowedAlgorithm);
        }
        let key = match self.key(header.kid.as_deref()).await {
            Some(key) => key,
            None => {
                self.refresh().await;
                self.key(header.kid.as_deref()).await.ok_or(JwtRejection::UnknownKey)?
            }
        };
        if !key.algorithms.contains(&header.alg) {
            return Err(JwtRejection::DisallowedAlgorithm);
        }
        let config = &self.inner.config;
        let mut validation = Validation::new(header.alg);
        validation.algorithms = vec![header.alg];
        validation.set_issuer(&[&config.issuer]);
        validation.set_audience(&[&config.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.leeway = config.leeway.as_secs();
        let claims = jsonwebtoken::decode::<Claims>(token, &key.decoding, &validation)
            .map_err(|error| match error.kind() {
                ErrorKind::InvalidSignature => JwtRejection::BadSignature,
                ErrorKind::InvalidIssuer => JwtRejection::WrongIssuer,
                ErrorKind::InvalidAudience => JwtRejection::WrongAudience,
                ErrorKind::ExpiredSignature => JwtRejection::Expired,
                ErrorKind::ImmatureSignature => JwtRejection::NotYetValid,
                ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName | ErrorKind::MissingAlgorithm => {
                    JwtRejection::DisallowedAlgorithm
                }
                ErrorKind::MissingRequiredClaim(_) => JwtRejection::MissingClaim,
                _ => JwtRejection::Malformed,
            })?
            .claims;
        let scopes: Vec<String> = match (claims.scope, claims.scp) {
            (Some(scope), _) | (None, Some(ScopeClaim::Text(scope))) => {
                scope.split_whitespace().map(str::to_owned).collect()
            }
            (None, Some(ScopeClaim::List(scopes))) => scopes,
            (None, None) => Vec::new(),
        };
        // Length-prefixed, so that no (issuer, subject) pair reads as another.
        let id = format!("jwt:{}:{}{}", claims.iss.len(), claims.iss, claims.sub);
        Ok(Principal { subject: format!("{} {}", claims.iss, claims.sub), scopes, owner: OwnerHash::of_principal(&id) })
    }

    async fn key(&self, kid: Option<&str>) -> Option<Arc<Key>> {
        let keys = self.inner.keys.read().await;
        match kid {
            Some(kid) => keys.by_kid.get(&Some(kid.to_owned())).cloned(),
            // A token without `kid` is accepted only when the set holds one key.
            None if keys.by_kid.len() == 1 => keys.by_kid.values().next().cloned(),
            None => None,
        }
    }

    /// Reads the key set again unless it was read less than the refresh interval ago; a failure
    /// keeps the keys in hand.
    async fn refresh(&self) {
        let mut last_read = self.inner.last_read.lock().await;
        if last_read.elapsed() < self.inner.config.refresh_interval {
            return;
        }
        *last_read = Instant::now();
        match read_keys(&self.inner.config.jwks, &self.inner.client).await {
            Ok(keys) if !keys.by_kid.is_empty() => *self.inner.keys.write().await = keys,
            Ok(_) => {
                tracing::warn!(target: "accord::auth", "the refreshed JWKS holds no usable key; keeping the old one")
            }
            Err(error) => tracing::warn!(target: "accord::auth", %error, "JWKS refresh failed; keeping the old one"),
        }
    }
}

/// The `alg` a token's header names, read without trusting anything else in it.
fn header_algorithm(token: &str) -> Option<String> {
    use base64::Engine as _;
    let encoded = token.split('.').next()?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(encoded.trim_end_matches('=')).ok()?;
    let header: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    header.get("alg")?.as_str().map(str::to_owned)
}

fn check_url(url: &str) -> Result<(), JwtSetupError> {
    let loopback = ["http://127.0.0.1", "http://localhost", "http://[::1]"]
        .iter()
        .any(|prefix| url.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with([':', '/'])));
    if url.starts_with("https://") || loopback {
        Ok(())
    } else {
        Err(JwtSetupError::Unreachable("a JWKS URL must be https (http only on a loopback host)".into()))
    }
}

async fn read_keys(source: &JwksSource, client: &reqwest::Client) -> Result<Keys, JwtSetupError> {
    let bytes = match source {
        JwksSource::File(path) => tokio::fs::read(path)
            .await
            .map_err(|error| JwtSetupError::Unreachable(format!("{}: {error}", path.display())))?,
        JwksSource::Url(url) => {
            let response = client
                .get(url)
                .send()
                .await
                .map_err(|error| JwtSetupError::Unreachable(error.without_url().to_string()))?;
            if !response.status().is_success() {
                return Err(JwtSetupError::Unreachable(format!("HTTP {}", response.status().as_u16())));
            }
            response
                .bytes()
                .await
                .map_err(|error| JwtSetupError::Unreachable(error.without_url().to_string()))?
                .to_vec()
        }
    };
    let set: JwkSet =
        serde_json::from_slice(&bytes).map_err(|error| JwtSetupError::InvalidKeySet(error.to_string()))?;
    let mut keys = Keys::default();
    for jwk in &set.keys {
        if let Some(key) = usable_key(jwk)? {
            keys.by_kid.insert(jwk.common.key_id.clone(), Arc::new(key));
        }
    }
    Ok(keys)
}

/// A public key of the set with the algorithms it verifies; `None` for a key of a kind Accord
/// does not use (encryption-only keys); an error for a symmetric key.
fn usable_key(jwk: &Jwk) -> Result<Option<Key>, JwtSetupError> {
    if matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_)) {
        return Err(JwtSetupError::InvalidKeySet("the JWKS holds a symmetric (oct) key".into()));
    }
    if jwk.common.public_key_use.as_ref().is_some_and(|key_use| *key_use != jsonwebtoken::jwk::PublicKeyUse::Signature)
    {
        return Ok(None);
    }
    let family_defaults = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => vec![Algorithm::RS256],
        AlgorithmParameters::EllipticCurve(params) => match params.curve {
            EllipticCurve::P256 => vec![Algorithm::ES256],
            EllipticCurve::P384 => vec![Algorithm::ES384],
            _ => return Ok(None),
        },
        AlgorithmParameters::OctetKeyPair(params) => match params.curve {
            EllipticCurve::Ed25519 => vec![Algorithm::EdDSA],
            _ => return Ok(None),
        },
        AlgorithmParameters::OctetKey(_) => return Ok(None),
    };
    let algorithms = match &jwk.common.key_algorithm {
        Some(declared) => match Algorithm::from_str(&declared.to_string()) {
            Ok(algorithm) if is_hmac(algorithm) => {
                return Err(JwtSetupError::InvalidKeySet("a key declares an HMAC algorithm".into()));
            }
            Ok(algorithm) => vec![algorithm],
            // An encryption algorithm (RSA-OAEP, …): not a signing key.
            Err(_) => return Ok(None),
        },
        None => family_defaults,
    };
    let decoding = DecodingKey::from_jwk(jwk).map_err(|error| JwtSetupError::InvalidKeySet(error.to_string()))?;
    Ok(Some(Key { decoding, algorithms }))
}
