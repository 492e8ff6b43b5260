//! What the layers below the faces say when they refuse a request before any handler runs — bad
//! credentials ([`crate::auth`]), a caller over its rate ([`crate::limits`]), an A2A version not
//! spoken ([`crate::version`]), a server at its cap of requests in flight ([`crate::serve`]) —
//! and how a face turns that into its own wire answer.
//!
//! A layer builds a face-neutral [`Refusal`] (a kind, a message, the seconds to wait, the
//! authentication challenges) and hands it to the [`Refusals`] it was mounted with. The face
//! chooses that renderer when it is mounted ([`crate::Faces`]), so no layer names a face and a new
//! binding adds a renderer of its own without touching the layers.

use std::sync::Arc;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;

/// Why a request was refused before it reached its face.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum RefusalKind {
    /// The request presented credentials the server does not accept.
    Unauthenticated,
    /// The caller is over its rate.
    RateLimited,
    /// The request asked for a protocol version this interface does not speak.
    VersionNotSupported,
    /// The server is handling as many requests as it allows ([`crate::serve`]).
    Busy,
}

/// A refusal by a layer below the faces, in no face's shape.
#[derive(Debug, Clone)]
pub(crate) struct Refusal {
    /// What went wrong.
    pub(crate) kind: RefusalKind,
    /// A message for the caller (never a secret).
    pub(crate) message: String,
    /// The seconds the caller should wait before retrying, for a retryable refusal.
    pub(crate) retry_after: Option<u64>,
    /// `WWW-Authenticate` challenges, for a refusal of credentials.
    pub(crate) challenges: Vec<HeaderValue>,
}

impl Refusal {
    /// A refusal of `kind` with `message`.
    pub(crate) fn new(kind: RefusalKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into(), retry_after: None, challenges: Vec::new() }
    }

    /// With the seconds to wait before retrying.
    pub(crate) fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// With `WWW-Authenticate` challenges.
    pub(crate) fn challenges(mut self, challenges: Vec<HeaderValue>) -> Self {
        self.challenges = challenges;
        self
    }

    /// The HTTP status an HTTP face answers this refusal with when the transport answers it
    /// (401 for credentials, 429 for a rate, 503 for a busy server), or `None` when the face's own error mapping decides
    /// (a version the interface does not speak is an error of the request, in the dialect).
    pub(crate) fn transport_status(&self) -> Option<StatusCode> {
        match self.kind {
            RefusalKind::Unauthenticated => Some(StatusCode::UNAUTHORIZED),
            RefusalKind::RateLimited => Some(StatusCode::TOO_MANY_REQUESTS),
            RefusalKind::Busy => Some(StatusCode::SERVICE_UNAVAILABLE),
            RefusalKind::VersionNotSupported => None,
        }
    }

    /// Finishes an HTTP face's answer: the transport's status (when it has one), `Retry-After`
    /// and the challenges. A gRPC face carries these in its status and metadata instead.
    pub(crate) fn finish_http(&self, mut response: Response) -> Response {
        if let Some(status) = self.transport_status() {
            *response.status_mut() = status;
        }
        if let Some(seconds) = self.retry_after {
            set_retry_after(&mut response, seconds);
        }
        self.append_challenges(&mut response);
        response
    }

    /// Appends the `WWW-Authenticate` challenges to `response`.
    pub(crate) fn append_challenges(&self, response: &mut Response) {
        for challenge in &self.challenges {
            response.headers_mut().append(header::WWW_AUTHENTICATE, challenge.clone());
        }
    }
}

/// How one face answers a [`Refusal`]: chosen by the face when it is mounted, carried by the
/// layers in front of it.
#[derive(Clone)]
pub(crate) struct Refusals {
    render: Arc<dyn Fn(&Refusal) -> Response + Send + Sync>,
}

impl std::fmt::Debug for Refusals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Refusals").finish_non_exhaustive()
    }
}

impl Refusals {
    /// A renderer of refusals.
    pub(crate) fn new(render: impl Fn(&Refusal) -> Response + Send + Sync + 'static) -> Self {
        Self { render: Arc::new(render) }
    }

    /// `refusal` in the face's shape.
    pub(crate) fn render(&self, refusal: &Refusal) -> Response {
        (self.render)(refusal)
    }
}

/// Sets `Retry-After: <seconds>`.
pub(crate) fn set_retry_after(response: &mut Response, seconds: u64) {
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
}

/// The mark the serve loop puts on a request it has no room for ([`crate::serve`]): the request is
/// routed as usual, but whatever it reaches answers the refusal instead of running — a face's
/// admission in the face's shape ([`crate::limits::admit`]), any other route with
/// [`refuse_busy`]'s plain answer.
#[derive(Debug, Clone)]
pub(crate) struct Busy(pub(crate) Refusal);

/// Put on the answer to a busy request by whatever refused it ([`crate::limits::admit`],
/// [`refuse_busy`]): the serve loop sends any other answer to a busy request as [`plain`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct BusyAnswered;

/// The refusal a request was marked with by the serve loop, if any.
pub(crate) fn busy_of(request: &axum::extract::Request) -> Option<&Refusal> {
    request.extensions().get::<Busy>().map(|Busy(refusal)| refusal)
}

/// The answer to a busy request on a route no face renders (the card, `/health`, the landing page,
/// `/metrics`, `/openapi.json`, the fallback): a bare `503` with `Retry-After` and the message as
/// plain text. Those routes have no error shape of their own, and an HTTP client or a load
/// balancer reads the status and `Retry-After`.
pub(crate) fn plain(refusal: &Refusal) -> Response {
    use axum::response::IntoResponse;
    let status = refusal.transport_status().unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    let response =
        (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], refusal.message.clone()).into_response();
    refusal.finish_http(response)
}

/// A middleware for the routes no face renders: a request the serve loop marked busy gets a bare
/// `503` with `Retry-After` and never reaches the route's handler. Public as `accord_server::serve::refuse_busy`,
/// for routes of a user's own served beside the faces.
pub async fn refuse_busy(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    match busy_of(&request) {
        Some(refusal) => answered_busy(plain(refusal)),
        None => next.run(request).await,
    }
}

/// `response`, marked as the answer to a busy request ([`BusyAnswered`]).
pub(crate) fn answered_busy(mut response: Response) -> Response {
    response.extensions_mut().insert(BusyAnswered);
    response
}
