//! Who is calling: the [`Principal`] an authentication layer puts into request extensions, and
//! [`BearerAuthLayer`], a layer that authenticates static bearer tokens.
//!
//! Faces read the principal; they never authenticate themselves. Any layer that inserts a
//! [`Principal`] into the request's extensions works (JWT, mTLS, a gateway header you trust).

use std::collections::HashMap;
use std::sync::Arc;
use std::task::{Context, Poll};

use accord_engine::task::{AccessToken, OwnerHash};
use axum::http::Request;
use sha2::{Digest, Sha256};

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

/// Who owns the tasks a request creates: its principal's owner, or — for anonymous callers — one
/// shared anonymous owner, whose task ids (random UUIDs) are then their only capability.
pub(crate) fn owner_of(principal: Option<&Principal>) -> OwnerHash {
    match principal {
        Some(principal) => principal.owner,
        None => {
            static ANONYMOUS: std::sync::LazyLock<OwnerHash> = std::sync::LazyLock::new(|| {
                let digest: [u8; 32] = Sha256::digest(b"accord:anonymous").into();
                let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
                OwnerHash::from_hex(&hex).unwrap_or_else(|| AccessToken::generate().owner())
            });
            *ANONYMOUS
        }
    }
}

/// The caller as the task service sees it: the principal's owner, or an anonymous caller owning
/// tasks as the shared anonymous owner (see [`owner_of`]).
pub(crate) fn caller_of(principal: Option<&Principal>) -> accord_engine::task::Caller {
    match principal {
        Some(principal) => accord_engine::task::Caller::owner(principal.owner),
        None => accord_engine::task::Caller::anonymous(owner_of(None)),
    }
}
