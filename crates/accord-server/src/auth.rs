//! Who is calling: the [`Principal`] an authentication layer puts into request extensions;
//! [`AuthLayer`], the layer that checks the schemes of an [`AuthConfig`] (opaque bearer tokens,
//! JWTs against a JWKS, API keys in a header); and [`BearerAuthLayer`], a lighter layer for static
//! bearer tokens alone.
//!
//! Faces read the principal; they never authenticate themselves. Any layer that inserts a
//! [`Principal`] into the request's extensions works (JWT, mTLS, a gateway header you trust).
//!
//! A request that presents no credential passes through anonymous, and each face decides what an
//! anonymous caller may do. A request that presents a credential the configuration cannot accept
//! (an unknown bearer token or API key, a JWT that fails a check) is *not* anonymous: the layer
//! records an audit event and marks the request [`Unauthenticated`], and one middleware in front of
//! each face refuses it with a face-neutral refusal that the face renders as its own
//! unauthenticated error, so the handlers stay as they are and this module
//! names no face.

#[cfg(feature = "jwt")]
mod jwt;

#[cfg(feature = "jwt")]
pub use jsonwebtoken::Algorithm as JwtAlgorithm;
#[cfg(feature = "jwt")]
pub use jwt::{
    DEFAULT_LEEWAY, DEFAULT_REFRESH_INTERVAL, JwksSource, JwtConfig, JwtSetupError, JwtVerifier, parse_algorithms,
};

use std::collections::HashMap;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::client_address::ClientAddress;
use crate::refusal::{Refusal, RefusalKind};
use accord_engine::task::{AccessToken, OwnerHash};
use accord_types::card::AgentSkill;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Request, header};
use futures_util::future::BoxFuture;
use sha2::{Digest, Sha256};

/// The `tracing` target of authentication audit events (the one every Accord audit event uses).
pub const AUDIT_TARGET: &str = "accord::audit";

/// An authenticated caller: who it is, what it may do, and who owns the tasks it creates.
#[derive(Clone, PartialEq, Eq)]
pub struct Principal {
    /// A stable name for the caller (for audit logs).
    pub subject: String,
    /// The scopes granted to the caller.
    pub scopes: Vec<String>,
    /// The owner of the tasks the caller creates.
    pub owner: OwnerHash,
}

impl std::fmt::Debug for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Principal")
            .field("subject", &self.subject)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl Principal {
    /// Whether the caller holds `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|granted| granted == scope)
    }

    /// The scopes as the task service holds them.
    pub fn grants(&self) -> accord_engine::task::Scopes {
        accord_engine::task::Scopes::new(&self.scopes)
    }
}

/// Bearer tokens and the principals they stand for. Only the SHA-256 of each token is kept.
#[derive(Clone, Default)]
pub struct BearerTokens {
    by_hash: HashMap<[u8; 32], (String, Vec<String>)>,
}

impl std::fmt::Debug for BearerTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BearerTokens").field("tokens", &self.by_hash.len()).finish()
    }
}

impl BearerTokens {
    /// No tokens.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a token standing for `subject` with `scopes`. The token must be a valid task access
    /// token (20–256 characters), because the principal's tasks are owned by it: a caller who
    /// sends the same token as `Task-Access-Token` on the Lucid routes sees the same tasks.
    pub fn with(
        mut self,
        token: &AccessToken,
        subject: impl Into<String>,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        let hash: [u8; 32] = Sha256::digest(token.expose().as_bytes()).into();
        self.by_hash.insert(hash, (subject.into(), scopes.into_iter().map(Into::into).collect()));
        self
    }

    /// Whether no token is configured.
    pub fn is_empty(&self) -> bool {
        self.by_hash.is_empty()
    }

    fn principal(&self, token: &str) -> Option<Principal> {
        let token = AccessToken::parse(token).ok()?;
        let hash: [u8; 32] = Sha256::digest(token.expose().as_bytes()).into();
        let (subject, scopes) = self.by_hash.get(&hash)?;
        Some(Principal { subject: subject.clone(), scopes: scopes.clone(), owner: token.owner() })
    }
}

/// A layer that reads `Authorization: Bearer <token>` and, when the token is known, inserts its
/// [`Principal`]. Requests without a known token pass through anonymous: each face decides what
/// an anonymous caller may do.
#[derive(Clone, Debug)]
pub struct BearerAuthLayer {
    tokens: Arc<BearerTokens>,
}

impl BearerAuthLayer {
    /// A layer for these tokens.
    pub fn new(tokens: BearerTokens) -> Self {
        Self { tokens: Arc::new(tokens) }
    }
}

impl<S> tower::Layer<S> for BearerAuthLayer {
    type Service = BearerAuth<S>;

    fn layer(&self, inner: S) -> Self::Service {
        BearerAuth { inner, tokens: Arc::clone(&self.tokens) }
    }
}

/// The service [`BearerAuthLayer`] makes.
#[derive(Clone, Debug)]
pub struct BearerAuth<S> {
    inner: S,
    tokens: Arc<BearerTokens>,
}

impl<S, B> tower::Service<Request<B>> for BearerAuth<S>
where
    S: tower::Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        let principal = request
            .headers()
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer ").or_else(|| value.strip_prefix("bearer ")))
            .and_then(|token| self.tokens.principal(token));
        // A principal set by an earlier layer is never overwritten by a weaker one.
        if let Some(principal) = principal
            && request.extensions().get::<Principal>().is_none()
        {
            request.extensions_mut().insert(principal);
        }
        self.inner.call(request)
    }
}

/// The principal's owner, or — for an anonymous caller whose address is unknown — the one shared
/// anonymous owner, whose task ids (74 random bits each) are then the only capability.
pub(crate) fn owner_of(principal: Option<&Principal>) -> OwnerHash {
    match principal {
        Some(principal) => principal.owner,
        None => {
            static ANONYMOUS: std::sync::LazyLock<OwnerHash> = std::sync::LazyLock::new(|| {
                let digest: [u8; 32] = Sha256::digest(b"accord:anonymous").into();
                OwnerHash::from_digest(digest)
            });
            *ANONYMOUS
        }
    }
}

/// The caller of a request as the task service sees it: its principal's owner; or, for an
/// anonymous caller, an owner of its client address ([`anonymous_owner`]), so that the per-owner
/// share and the store's accounting count anonymous callers per address; the shared anonymous
/// owner ([`owner_of`]) when the address is unknown.
pub(crate) fn caller_of(extensions: &http::Extensions) -> accord_engine::task::Caller {
    match extensions.get::<Principal>() {
        Some(principal) => accord_engine::task::Caller::owner(principal.owner).with_scopes(principal.grants()),
        None => accord_engine::task::Caller::anonymous(anonymous_owner(ClientAddress::of(extensions))),
    }
}

/// The caller of a request ([`caller_of`]), as an extractor for the handlers that read no other
/// part of the request's extensions.
pub(crate) struct RequestCaller(pub(crate) accord_engine::task::Caller);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for RequestCaller {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut http::request::Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(Self(caller_of(&parts.extensions)))
    }
}

/// The scopes the request's principal holds (none for an anonymous request), as an extractor
/// for the handlers whose owner comes from elsewhere (the Lucid task routes' access token).
pub(crate) struct RequestScopes(pub(crate) accord_engine::task::Scopes);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for RequestScopes {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut http::request::Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(Self(parts.extensions.get::<Principal>().map(Principal::grants).unwrap_or_default()))
    }
}

/// The owner of an anonymous caller's tasks: a digest of its client address's key (an IPv6
/// address's /64), domain-separated from every token's; the shared anonymous owner when the
/// address is unknown.
pub(crate) fn anonymous_owner(address: Option<ClientAddress>) -> OwnerHash {
    match address {
        Some(address) => {
            let mut hasher = Sha256::new();
            hasher.update(b"accord:anonymous:");
            hasher.update(address.key().to_string().as_bytes());
            let digest: [u8; 32] = hasher.finalize().into();
            OwnerHash::from_digest(digest)
        }
        None => owner_of(None),
    }
}

/// The name of each scheme on the card (`securitySchemes`) and in audit events.
pub const BEARER_SCHEME: &str = "bearer";
/// See [`BEARER_SCHEME`].
pub const JWT_SCHEME: &str = "jwt";
/// See [`BEARER_SCHEME`].
pub const API_KEY_SCHEME: &str = "apiKey";

/// See [`BEARER_SCHEME`].
pub const MTLS_SCHEME: &str = "mtls";

/// The default header of API keys.
pub const DEFAULT_API_KEY_HEADER: &str = "X-API-Key";

/// API keys in a request header and the principals they stand for. Only the SHA-256 of each key
/// is kept: configure keys by their hash ([`ApiKeys::with_hash`]), or hand a key to
/// [`ApiKeys::with_key`], which hashes it at once. A key's principal owns tasks exactly as the
/// same string sent as a task access token would (the owner is the key's SHA-256).
#[derive(Clone)]
pub struct ApiKeys {
    header: HeaderName,
    by_hash: HashMap<[u8; 32], (String, Vec<String>)>,
}

impl std::fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKeys").field("header", &self.header).field("keys", &self.by_hash.len()).finish()
    }
}

/// A header name or key hash that [`ApiKeys`] cannot use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidApiKeyConfig(String);

impl std::fmt::Display for InvalidApiKeyConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidApiKeyConfig {}

impl ApiKeys {
    /// No keys yet, read from `header` (for example [`DEFAULT_API_KEY_HEADER`]).
    pub fn new(header: &str) -> Result<Self, InvalidApiKeyConfig> {
        let header = HeaderName::from_bytes(header.as_bytes())
            .map_err(|_| InvalidApiKeyConfig(format!("{header:?} is not a header name")))?;
        if header == header::AUTHORIZATION {
            return Err(InvalidApiKeyConfig("API keys cannot use the Authorization header".into()));
        }
        Ok(Self { header, by_hash: HashMap::new() })
    }

    /// Adds the key whose SHA-256 is `sha256_hex` (64 hex digits), standing for `subject`.
    pub fn with_hash(
        mut self,
        sha256_hex: &str,
        subject: impl Into<String>,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Result<Self, InvalidApiKeyConfig> {
        let owner = OwnerHash::from_hex(&sha256_hex.to_ascii_lowercase())
            .ok_or_else(|| InvalidApiKeyConfig("an API key hash must be 64 hex digits".into()))?;
        self.by_hash.insert(*owner.as_bytes(), (subject.into(), scopes.into_iter().map(Into::into).collect()));
        Ok(self)
    }

    /// Adds `key` (hashed at once; surrounding whitespace is not part of it), standing for
    /// `subject`.
    pub fn with_key(
        mut self,
        key: &str,
        subject: impl Into<String>,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        let hash: [u8; 32] = Sha256::digest(key.trim().as_bytes()).into();
        self.by_hash.insert(hash, (subject.into(), scopes.into_iter().map(Into::into).collect()));
        self
    }

    /// The header the keys are read from.
    pub fn header(&self) -> &HeaderName {
        &self.header
    }

    /// Whether no key is configured.
    pub fn is_empty(&self) -> bool {
        self.by_hash.is_empty()
    }

    fn principal(&self, key: &str) -> Option<Principal> {
        let hash: [u8; 32] = Sha256::digest(key.trim().as_bytes()).into();
        let (subject, scopes) = self.by_hash.get(&hash)?;
        Some(Principal { subject: subject.clone(), scopes: scopes.clone(), owner: OwnerHash::from_digest(hash) })
    }
}

/// The principals of client certificates (mutual TLS): a certificate the serve loop verified
/// ([`crate::tls::PeerCertificate`]) names its subject — its first URI subject alternative name
/// (a SPIFFE id), else its first DNS name, else its common name — and the scopes of that subject
/// are the operator's mapping. The owner of its tasks is derived from the issuing authority and
/// the subject, so that two authorities' subjects of the same name own different tasks.
#[derive(Clone, Default, Debug)]
pub struct ClientCertificates {
    scopes: HashMap<String, Vec<String>>,
}

impl ClientCertificates {
    /// No mapping: every verified certificate is a principal with no scope.
    pub fn new() -> Self {
        Self::default()
    }

    /// Grants `scopes` to the certificates whose subject is `subject` (added to any granted
    /// before).
    pub fn scopes(mut self, subject: impl Into<String>, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes.entry(subject.into()).or_default().extend(scopes.into_iter().map(Into::into));
        self
    }

    /// The principal of a verified certificate; `None` when it names no subject.
    pub fn principal(&self, certificate: &crate::tls::PeerCertificate) -> Option<Principal> {
        let subject = certificate.subject()?;
        let issuer = hex::encode(Sha256::digest(certificate.issuer()?));
        // Length-prefixed, as a JWT's (issuer, subject), so that no pair reads as another.
        let id = format!("mtls:{}:{issuer}{subject}", issuer.len());
        let scopes = self.scopes.get(&subject).cloned().unwrap_or_default();
        Some(Principal { subject, scopes, owner: OwnerHash::of_principal(&id) })
    }

    /// The principal of a certificate a trusted proxy verified and named in
    /// `X-Forwarded-Client-Cert`. The header does not say which authority issued it, so its
    /// owner is derived from the subject under one authority of its own, "the trusted proxies":
    /// the same subject reaching Accord's own TLS directly owns other tasks.
    pub fn forwarded_principal(&self, forwarded: &crate::client_address::ForwardedClientCertificate) -> Principal {
        let subject = forwarded.subject.clone();
        let id = format!("mtls-forwarded:{subject}");
        let scopes = self.scopes.get(&subject).cloned().unwrap_or_default();
        Principal { subject, scopes, owner: OwnerHash::of_principal(&id) }
    }
}

/// How callers authenticate, and what the extended card adds for them. The card's
/// `securitySchemes` and `securityRequirements` are generated from it (one requirement per
/// scheme: any one suffices), and [`crate::Faces`] mounts an [`AuthLayer`] for it on every face.
///
/// Schemes are tried in this order: `Authorization: Bearer` — an opaque token first, then, if it
/// has the shape of a JWT, a JWT — then the API key header. The first credential presented
/// decides: valid, the request carries its [`Principal`]; invalid, the request is refused.
#[derive(Clone, Default, Debug)]
pub struct AuthConfig {
    pub(crate) bearer: Option<BearerTokens>,
    pub(crate) jwt: Option<Jwt>,
    pub(crate) api_keys: Option<ApiKeys>,
    pub(crate) client_certificates: Option<ClientCertificates>,
    pub(crate) extended_skills: Option<Vec<AgentSkill>>,
    pub(crate) require: bool,
}

impl AuthConfig {
    /// No scheme: every caller is anonymous, the card lists no security scheme.
    pub fn new() -> Self {
        Self::default()
    }

    /// Accepts these opaque bearer tokens (scheme [`BEARER_SCHEME`]).
    pub fn bearer(mut self, tokens: BearerTokens) -> Self {
        self.bearer = Some(tokens);
        self
    }

    /// Accepts JWTs checked by `verifier` (scheme [`JWT_SCHEME`]; feature `jwt`).
    #[cfg(feature = "jwt")]
    pub fn jwt(mut self, verifier: JwtVerifier) -> Self {
        self.jwt = Some(verifier);
        self
    }

    /// Accepts these API keys (scheme [`API_KEY_SCHEME`]).
    pub fn api_keys(mut self, keys: ApiKeys) -> Self {
        self.api_keys = Some(keys);
        self
    }

    /// Accepts client certificates verified at the TLS handshake (scheme [`MTLS_SCHEME`]; the
    /// server's TLS must ask for them: [`crate::tls::TlsConfig::client_certificates`]), or by a
    /// trusted proxy that names them in `X-Forwarded-Client-Cert`
    /// ([`crate::client_address::ForwardedClientCertificate`]). A header credential, when one is
    /// presented too, decides instead.
    pub fn client_certificates(mut self, certificates: ClientCertificates) -> Self {
        self.client_certificates = Some(certificates);
        self
    }

    /// Declares the authenticated extended card (`capabilities.extendedAgentCard: true`): the
    /// public card with these skill entries — an entry whose `id` is a public skill's replaces it
    /// (more detail for authenticated callers), others are added. The entries describe; a skill
    /// callable by everyone stays callable by everyone (see docs/behaviour.md).
    pub fn extended_card(mut self, skills: Vec<AgentSkill>) -> Self {
        self.extended_skills = Some(skills);
        self
    }

    /// Refuses anonymous callers on every face, as a refused credential is refused (`401` in the
    /// face's shape, with the challenges): a credential of a configured scheme is required. The
    /// cards, `/health` and the landing page stay open. Without a scheme it has no effect.
    pub fn require_credentials(mut self, require: bool) -> Self {
        self.require = require;
        self
    }

    /// Whether anonymous callers are refused ([`AuthConfig::require_credentials`]).
    pub fn requires_credentials(&self) -> bool {
        self.require && !self.is_empty()
    }

    /// Whether no scheme is configured.
    pub fn is_empty(&self) -> bool {
        self.bearer.is_none() && self.jwt.is_none() && self.api_keys.is_none() && self.client_certificates.is_none()
    }

    /// The card's `securitySchemes` (scheme name to `SecurityScheme`), in ProtoJSON.
    pub(crate) fn security_schemes(&self) -> Vec<(&'static str, accord_types::a2a::SecurityScheme)> {
        use accord_types::a2a::{
            ApiKeySecurityScheme, HttpAuthSecurityScheme, MutualTlsSecurityScheme, SecurityScheme,
        };
        let mut schemes = Vec::new();
        if self.bearer.is_some() {
            schemes.push((
                BEARER_SCHEME,
                SecurityScheme::HttpAuth(HttpAuthSecurityScheme {
                    description: Some("An opaque bearer token issued by the agent's operator".into()),
                    scheme: "Bearer".into(),
                    bearer_format: None,
                }),
            ));
        }
        if self.jwt.is_some() {
            schemes.push((
                JWT_SCHEME,
                SecurityScheme::HttpAuth(HttpAuthSecurityScheme {
                    description: Some("A JWT from the configured issuer, for this agent's audience".into()),
                    scheme: "Bearer".into(),
                    bearer_format: Some("JWT".into()),
                }),
            ));
        }
        if let Some(keys) = &self.api_keys {
            schemes.push((
                API_KEY_SCHEME,
                SecurityScheme::ApiKey(ApiKeySecurityScheme {
                    description: Some("An API key issued by the agent's operator".into()),
                    location: "header".into(),
                    name: keys.header.as_str().to_owned(),
                }),
            ));
        }
        if self.client_certificates.is_some() {
            schemes.push((
                MTLS_SCHEME,
                SecurityScheme::MutualTls(MutualTlsSecurityScheme {
                    description: Some("A client certificate from an authority the agent's operator trusts".into()),
                }),
            ));
        }
        schemes
    }

    /// `WWW-Authenticate` challenges for the configured schemes (RFC 9110 §11.6.1), `error`
    /// set when a presented credential was refused (RFC 6750 §3).
    pub(crate) fn challenges(&self, refused: bool) -> Vec<HeaderValue> {
        let error = if refused { ", error=\"invalid_token\"" } else { "" };
        let mut challenges = Vec::new();
        if self.bearer.is_some() || self.jwt.is_some() {
            challenges.push(format!("Bearer realm=\"accord\"{error}"));
        }
        if let Some(keys) = &self.api_keys {
            challenges.push(format!("ApiKey realm=\"accord\", header=\"{}\"", keys.header));
        }
        challenges.into_iter().filter_map(|challenge| HeaderValue::from_str(&challenge).ok()).collect()
    }

    /// The caller's principal: `Ok(None)` when it presented no credential of a configured scheme.
    async fn authenticate(
        &self,
        headers: &HeaderMap,
        certificate: Option<&crate::tls::PeerCertificate>,
        forwarded: Option<&crate::client_address::ForwardedClientCertificate>,
    ) -> Result<Option<Principal>, Unauthenticated> {
        if let Some(token) = bearer_token(headers) {
            if let Some(principal) = self.bearer.as_ref().and_then(|tokens| tokens.principal(token)) {
                return Ok(Some(principal));
            }
            match (&self.jwt, &self.bearer) {
                (Some(verifier), _) if token.split('.').count() == 3 => return verify_jwt(verifier, token).await,
                (_, Some(_)) => return Err(Unauthenticated::new(BEARER_SCHEME, "unknown_token")),
                (Some(_), None) => return Err(Unauthenticated::new(JWT_SCHEME, "malformed")),
                (None, None) => {}
            }
        }
        if let Some(keys) = &self.api_keys
            && let Some(value) = headers.get(&keys.header)
        {
            return match value.to_str().ok().and_then(|key| keys.principal(key)) {
                Some(principal) => Ok(Some(principal)),
                None => Err(Unauthenticated::new(API_KEY_SCHEME, "unknown_key")),
            };
        }
        if let (Some(certificates), Some(certificate)) = (&self.client_certificates, certificate) {
            return match certificates.principal(certificate) {
                Some(principal) => Ok(Some(principal)),
                None => Err(Unauthenticated::new(MTLS_SCHEME, "no_subject")),
            };
        }
        // Set only for a request from a trusted proxy (`client_address::stamp`).
        if let (Some(certificates), Some(forwarded)) = (&self.client_certificates, forwarded) {
            return Ok(Some(certificates.forwarded_principal(forwarded)));
        }
        Ok(None)
    }
}

/// The JWT scheme's verifier.
#[cfg(feature = "jwt")]
type Jwt = JwtVerifier;

/// Without the `jwt` feature no JWT scheme can be configured: no value of this type exists.
#[cfg(not(feature = "jwt"))]
#[derive(Clone, Debug)]
pub(crate) enum Jwt {}

#[cfg(feature = "jwt")]
async fn verify_jwt(verifier: &Jwt, token: &str) -> Result<Option<Principal>, Unauthenticated> {
    verifier.verify(token).await.map(Some).map_err(|rejection| Unauthenticated::new(JWT_SCHEME, rejection.as_str()))
}

#[cfg(not(feature = "jwt"))]
async fn verify_jwt(verifier: &Jwt, _token: &str) -> Result<Option<Principal>, Unauthenticated> {
    match *verifier {}
}

fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// The mark [`AuthLayer`] leaves on a request whose credential was refused: which scheme and why
/// (the audit event's fields; the caller's answer names neither).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unauthenticated {
    /// The scheme the credential was presented for ([`BEARER_SCHEME`], …).
    pub scheme: &'static str,
    /// Why it was refused (`expired`, `bad_signature`, `unknown_key`, …).
    pub reason: &'static str,
}

impl Unauthenticated {
    fn new(scheme: &'static str, reason: &'static str) -> Self {
        Self { scheme, reason }
    }
}

/// A layer that authenticates requests with an [`AuthConfig`]: a valid credential puts its
/// [`Principal`] into the request's extensions, an invalid one an [`Unauthenticated`] mark (and an
/// audit event), none leaves the request anonymous. A principal already set by an earlier layer is
/// kept and nothing is checked.
#[derive(Clone, Debug)]
pub struct AuthLayer {
    config: Arc<AuthConfig>,
}

impl AuthLayer {
    /// A layer for `config`.
    pub fn new(config: AuthConfig) -> Self {
        Self { config: Arc::new(config) }
    }
}

impl<S> tower::Layer<S> for AuthLayer {
    type Service = Auth<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Auth { inner, config: Arc::clone(&self.config) }
    }
}

/// The service [`AuthLayer`] makes.
#[derive(Clone, Debug)]
pub struct Auth<S> {
    inner: S,
    config: Arc<AuthConfig>,
}

impl<S, B> tower::Service<Request<B>> for Auth<S>
where
    S: tower::Service<Request<B>> + Clone + Send + 'static,
    S::Future: Send,
    B: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<S::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        // The service that was polled ready serves this request; a fresh clone takes its place.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let config = Arc::clone(&self.config);
        Box::pin(async move {
            // A request the serve loop marked busy is refused whoever sends it: no credential is
            // checked (a JWKS fetch, say) for it.
            let busy = request.extensions().get::<crate::refusal::Busy>().is_some();
            if !busy && request.extensions().get::<Principal>().is_none() {
                let certificate = request.extensions().get::<crate::tls::PeerCertificate>().cloned();
                let forwarded =
                    request.extensions().get::<crate::client_address::ForwardedClientCertificate>().cloned();
                match config.authenticate(request.headers(), certificate.as_ref(), forwarded.as_ref()).await {
                    Ok(Some(principal)) => {
                        request.extensions_mut().insert(principal);
                    }
                    Ok(None) if config.requires_credentials() => {
                        tracing::info!(
                            target: AUDIT_TARGET,
                            event = "auth.rejected",
                            scheme = "none",
                            reason = MISSING_CREDENTIALS,
                            path = request.uri().path(),
                        );
                        request.extensions_mut().insert(Unauthenticated::new("none", MISSING_CREDENTIALS));
                        request.extensions_mut().insert(Challenges(config.challenges(false)));
                    }
                    Ok(None) => {}
                    Err(refused) => {
                        // Never the credential itself: the scheme, the reason, where.
                        tracing::warn!(
                            target: AUDIT_TARGET,
                            event = "auth.rejected",
                            scheme = refused.scheme,
                            reason = refused.reason,
                            path = request.uri().path(),
                        );
                        request.extensions_mut().insert(refused);
                        request.extensions_mut().insert(Challenges(config.challenges(true)));
                    }
                }
            }
            inner.call(request).await
        })
    }
}

/// The reason of a request that presents no credential where one is required.
const MISSING_CREDENTIALS: &str = "missing_credentials";

/// The `WWW-Authenticate` values a refusal carries.
#[derive(Clone, Debug)]
struct Challenges(Vec<HeaderValue>);

/// The refusal of a request marked [`Unauthenticated`] (its credentials were refused), with the
/// `WWW-Authenticate` challenges; `None` for any other request. The face's admission middleware
/// renders it (`limits::admit`): the one place such a request is refused.
pub(crate) fn refusal_of(request: &axum::extract::Request) -> Option<Refusal> {
    let unauthenticated = request.extensions().get::<Unauthenticated>()?;
    let challenges =
        request.extensions().get::<Challenges>().map(|challenges| challenges.0.clone()).unwrap_or_default();
    let message = if unauthenticated.reason == MISSING_CREDENTIALS {
        "this agent requires credentials, and the request presents none"
    } else {
        "the presented credentials are not valid"
    };
    Some(Refusal::new(RefusalKind::Unauthenticated, message).challenges(challenges))
}
