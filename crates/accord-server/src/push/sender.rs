//! [`WebhookSender`]: POSTs one push notification to a webhook, within a [`WebhookPolicy`].
//!
//! The URL is checked with [`WebhookPolicy::check_url`] before each send. A host name is
//! resolved at delivery time by a resolver that keeps only the addresses the policy allows, so
//! the connection goes to an address that was checked; redirects are not followed (a `3xx` is a
//! failure), no proxy is used, and each attempt has one deadline. The sender retries nothing:
//! [`SendFailure::retryable`] tells the caller whether another attempt may succeed.
//!
//! Errors never carry the URL or a header value, so an `Authorization` value or a token in the
//! URL cannot reach a log through them.

use std::error::Error as StdError;
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::HeaderMap;
use http::header::{CONTENT_TYPE, HeaderValue};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use tokio::time::{Instant, timeout_at};

use super::guard::{Scheme, WebhookPolicy, WebhookRefused};
use super::receiver::A2A_CONTENT_TYPE;

/// How long one attempt may take by default, from connecting to the response's status.
pub const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

/// How much of a response body is read (and discarded) by default.
pub const DEFAULT_RESPONSE_CAP: usize = 64 * 1024;

/// A notification the webhook accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivered {
    /// The response's status (`2xx`).
    pub status: u16,
}

/// Why a notification was not delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SendFailure {
    /// The policy refused the URL or every address its host resolved to; permanent.
    Refused(WebhookRefused),
    /// The webhook answered with a status other than `2xx` (a `3xx` too: redirects are not
    /// followed).
    Status(u16),
    /// The attempt took longer than its timeout.
    Timeout,
    /// Resolving, connecting or exchanging failed (the message names no URL and no header).
    Connect(String),
}

impl SendFailure {
    /// Whether another attempt may succeed: `5xx`, `408`, `429`, timeouts and connection
    /// failures are retryable; refusals, `3xx` and other `4xx` are not.
    pub fn retryable(&self) -> bool {
        match self {
            Self::Refused(_) => false,
            Self::Status(status) => matches!(status, 408 | 429 | 500..),
            Self::Timeout | Self::Connect(_) => true,
        }
    }
}

impl fmt::Display for SendFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Refused(refused) => write!(f, "webhook refused: {refused}"),
            Self::Status(status) => write!(f, "webhook answered {status}"),
            Self::Timeout => f.write_str("webhook timed out"),
            Self::Connect(message) => write!(f, "webhook unreachable: {message}"),
        }
    }
}

impl StdError for SendFailure {}

/// The HTTP client could not be built (its TLS set-up failed).
#[derive(Debug)]
pub struct SenderBuildError(reqwest::Error);

impl fmt::Display for SenderBuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot build the webhook client: {}", self.0)
    }
}

impl StdError for SenderBuildError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&self.0)
    }
}

/// Settings of a [`WebhookSender`]; see [`WebhookSender::builder`].
#[derive(Debug, Clone)]
pub struct WebhookSenderBuilder {
    policy: WebhookPolicy,
    timeout: Duration,
    response_cap: usize,
    extra_roots: Vec<reqwest::Certificate>,
}

impl WebhookSenderBuilder {
    /// CA certificates trusted for `https` webhooks in addition to the platform's roots.
    pub fn root_certificates(mut self, certificates: Vec<reqwest::Certificate>) -> Self {
        self.extra_roots = certificates;
        self
    }

    /// How long one attempt may take (default [`DEFAULT_ATTEMPT_TIMEOUT`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How many bytes of a response body are read before the rest is dropped (default
    /// [`DEFAULT_RESPONSE_CAP`]).
    pub fn response_cap(mut self, bytes: usize) -> Self {
        self.response_cap = bytes;
        self
    }

    /// Builds the sender.
    pub fn build(self) -> Result<WebhookSender, SenderBuildError> {
        let policy = Arc::new(self.policy);
        let client = |scheme| {
            let builder = match scheme {
                Scheme::Https => reqwest::Client::builder().tls_certs_merge(self.extra_roots.clone()),
                Scheme::Http => reqwest::Client::builder(),
            };
            builder
                .redirect(reqwest::redirect::Policy::none())
                // A proxy would make the connection to an address this guard never saw.
                .no_proxy()
                .user_agent(concat!("accord-webhook/", env!("CARGO_PKG_VERSION")))
                .dns_resolver(GuardedResolver { policy: policy.clone(), scheme })
                .build()
                .map_err(SenderBuildError)
        };
        Ok(WebhookSender {
            https: client(Scheme::Https)?,
            http: client(Scheme::Http)?,
            policy,
            timeout: self.timeout,
            response_cap: self.response_cap,
        })
    }
}

/// POSTs push notifications to webhooks allowed by a [`WebhookPolicy`]. Cheap to clone; clones
/// share connections.
#[derive(Debug, Clone)]
pub struct WebhookSender {
    policy: Arc<WebhookPolicy>,
    // One client per scheme: a resolver sees only the name, and plain http allows fewer
    // addresses than https.
    https: reqwest::Client,
    http: reqwest::Client,
    timeout: Duration,
    response_cap: usize,
}

impl WebhookSender {
    /// A sender with the default settings, within `policy`.
    pub fn builder(policy: WebhookPolicy) -> WebhookSenderBuilder {
        WebhookSenderBuilder {
            policy,
            timeout: DEFAULT_ATTEMPT_TIMEOUT,
            response_cap: DEFAULT_RESPONSE_CAP,
            extra_roots: Vec::new(),
        }
    }

    /// The policy the sender checks targets against.
    pub fn policy(&self) -> &WebhookPolicy {
        &self.policy
    }

    /// POSTs `body` with `headers` to `url`, once. `Content-Type` defaults to
    /// `application/a2a+json`. Only a `2xx` answer is [`Delivered`]; the response body is read up
    /// to the cap and discarded.
    pub async fn send(&self, url: &str, headers: HeaderMap, body: Bytes) -> Result<Delivered, SendFailure> {
        let url = self.policy.check_url(url).map_err(SendFailure::Refused)?;
        let client = if url.scheme() == "https" { &self.https } else { &self.http };
        let mut headers = headers;
        headers.entry(CONTENT_TYPE).or_insert(HeaderValue::from_static(A2A_CONTENT_TYPE));
        let deadline = Instant::now() + self.timeout;
        let request = client.post(url).headers(headers).body(body);
        let mut response = match timeout_at(deadline, request.send()).await {
            Err(_) => return Err(SendFailure::Timeout),
            Ok(result) => result.map_err(failure)?,
        };
        let status = response.status().as_u16();
        // The answer is known: a body that is slow, broken or over the cap changes nothing.
        let _ = timeout_at(deadline, async {
            let mut read = 0;
            while read < self.response_cap {
                match response.chunk().await {
                    Ok(Some(chunk)) => read += chunk.len(),
                    _ => break,
                }
            }
        })
        .await;
        if (200..300).contains(&status) { Ok(Delivered { status }) } else { Err(SendFailure::Status(status)) }
    }
}

/// Maps a client error to a failure, without the URL.
fn failure(error: reqwest::Error) -> SendFailure {
    let error = error.without_url();
    let mut source: Option<&(dyn StdError + 'static)> = Some(&error);
    while let Some(current) = source {
        if let Some(refused) = current.downcast_ref::<WebhookRefused>() {
            return SendFailure::Refused(refused.clone());
        }
        source = current.source();
    }
    if error.is_timeout() {
        return SendFailure::Timeout;
    }
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(current) = source {
        message.push_str(": ");
        message.push_str(&current.to_string());
        source = current.source();
    }
    SendFailure::Connect(message)
}

/// Resolves a host name at delivery time and keeps only the addresses the policy allows over
/// `scheme`; with none left, fails with the first refusal.
struct GuardedResolver {
    policy: Arc<WebhookPolicy>,
    scheme: Scheme,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy.clone();
        let scheme = self.scheme;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let mut refused = None;
            let allowed: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .filter(|address| match policy.check_ip(address.ip(), scheme) {
                    Ok(()) => true,
                    Err(refusal) => {
                        refused.get_or_insert(refusal);
                        false
                    }
                })
                .collect();
            match refused {
                Some(refusal) if allowed.is_empty() => Err(refusal.into()),
                _ => Ok(Box::new(allowed.into_iter()) as Addrs),
            }
        })
    }
}
