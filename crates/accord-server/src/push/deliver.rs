//! The delivery worker: takes webhooks with pending updates from the task service's outbox,
//! POSTs each update as the face that serves push notifications writes it (a [`PushProjection`]
//! the face hands over when the server is built: the A2A faces write `StreamResponse`s), and
//! settles where each delivery stands. It names no face.
//!
//! - **Order.** A config's updates go one at a time, in log order; a failed one is retried
//!   before any later one is sent.
//! - **At least once.** The cursor moves only after the receiver answered 2xx. A worker that dies
//!   holds its delivery lease until it lapses; then another worker (or the restarted one) sends
//!   the same updates again, with the same delivery ids.
//! - **Retries.** A retryable failure (5xx, 408, 429, a timeout, a connection failure) waits
//!   `first_retry × 2^(n-1)`, capped at `max_retry`, with jitter (between half and all of it);
//!   after `max_attempts` attempts, or at once for a permanent failure (another 4xx, a 3xx: no
//!   redirect is followed, a refused address), the update is given up on and a
//!   `push_dead_letter` entry records it in the task's log; the next update follows.
//! - **Headers.** `Content-Type: application/a2a+json`; `Authorization: <scheme> <credentials>`
//!   when the config has authentication; `X-A2A-Notification-Token` when it has a token;
//!   `X-A2A-Delivery-Id` (`<task>:<config>:<log sequence>[:<part>]`, the same on every attempt)
//!   and `X-A2A-Delivery-Attempt` (from 1).

use std::sync::Arc;
use std::time::Duration;

use accord_engine::ErrorKind;
use accord_engine::task::{PushConfig, PushDelivery, PushSettle, TaskEvent, TaskEventKind, TaskService, now_ms};
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, header};

use super::guard::WebhookPolicy;
use super::receiver::{DELIVERY_ATTEMPT_HEADER, DELIVERY_ID_HEADER, NOTIFICATION_TOKEN_HEADER};
use super::sender::WebhookSender;

/// How webhooks are called: which targets are allowed, and how deliveries are timed and retried.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PushSettings {
    /// Which webhook URLs are accepted, when configs are set and again when each POST connects
    /// (default: `https` to public addresses only).
    pub policy: WebhookPolicy,
    /// How long one POST may take (default 10 s).
    pub timeout: Duration,
    /// How many attempts an update gets before it is given up on (default 8).
    pub max_attempts: u32,
    /// The wait before the first retry; each later one doubles it (default 1 s).
    pub first_retry: Duration,
    /// The longest wait between two attempts (default 5 min).
    pub max_retry: Duration,
    /// How long a worker holds a config it is delivering before another may take it over
    /// (default 2 min; longer than a delivery's POSTs take).
    pub lease: Duration,
    /// How often the outbox is read when it was empty (default 200 ms).
    pub poll: Duration,
    /// How many configs are delivered to at once (default 32).
    pub batch: usize,
    /// CA certificates trusted for `https` webhooks in addition to the platform's roots (default
    /// none); see [`PushSettings::trust_ca_pem`].
    pub extra_roots: Vec<reqwest::Certificate>,
}

impl Default for PushSettings {
    fn default() -> Self {
        Self {
            policy: WebhookPolicy::default(),
            timeout: Duration::from_secs(10),
            max_attempts: 8,
            first_retry: Duration::from_secs(1),
            max_retry: Duration::from_secs(300),
            lease: Duration::from_secs(120),
            poll: Duration::from_millis(200),
            batch: 32,
            extra_roots: Vec::new(),
        }
    }
}

impl PushSettings {
    /// Sets [`PushSettings::policy`].
    pub fn policy(mut self, policy: WebhookPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Sets the retry schedule: at most `max_attempts` attempts, the first retry after
    /// `first_retry`, never more than `max_retry` between two.
    pub fn retries(mut self, max_attempts: u32, first_retry: Duration, max_retry: Duration) -> Self {
        self.max_attempts = max_attempts.max(1);
        self.first_retry = first_retry;
        self.max_retry = max_retry;
        self
    }

    /// Sets [`PushSettings::timeout`].
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets [`PushSettings::lease`].
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// Trusts the CA certificates of a PEM bundle for `https` webhooks, in addition to the
    /// platform's roots (a receiver whose certificate a private CA issued). Fails, saying why,
    /// when the bundle is not PEM or holds no certificate.
    pub fn trust_ca_pem(mut self, pem: &[u8]) -> Result<Self, String> {
        let certificates =
            reqwest::Certificate::from_pem_bundle(pem).map_err(|_| "is not a PEM bundle of certificates".to_owned())?;
        if certificates.is_empty() {
            return Err("holds no PEM certificate (-----BEGIN CERTIFICATE-----)".into());
        }
        self.extra_roots.extend(certificates);
        Ok(self)
    }

    /// Sets [`PushSettings::poll`].
    pub fn poll(mut self, poll: Duration) -> Self {
        self.poll = poll;
        self
    }
}

/// How a task's log entry is written as notifications: the bodies to POST, in order (an entry may
/// be several updates, or none), given the entry and the task's context id. The face that serves
/// push notifications makes it; the deliverer only sends what it is given.
#[derive(Clone)]
pub(crate) struct PushProjection(Arc<Project>);

/// The function behind a [`PushProjection`].
type Project = dyn Fn(&TaskEvent, &str) -> Vec<Bytes> + Send + Sync;

impl PushProjection {
    /// A projection that writes an entry with `project`.
    pub(crate) fn new(project: impl Fn(&TaskEvent, &str) -> Vec<Bytes> + Send + Sync + 'static) -> Self {
        Self(Arc::new(project))
    }

    fn bodies(&self, event: &TaskEvent, context_id: &str) -> Vec<Bytes> {
        (self.0)(event, context_id)
    }
}

impl std::fmt::Debug for PushProjection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushProjection").finish_non_exhaustive()
    }
}

/// Updates per delivery: a config's pending log entries are taken this many at a time.
const EVENTS_PER_DELIVERY: usize = 64;

/// Runs the delivery worker for `service` until its store closes, writing each update with
/// `projection`.
pub(crate) fn spawn(service: TaskService, settings: PushSettings, projection: PushProjection) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        tracing::warn!("push notifications are not delivered: no async runtime to run the delivery worker on");
        return;
    };
    let sender = match WebhookSender::builder(settings.policy.clone())
        .timeout(settings.timeout)
        .root_certificates(settings.extra_roots.clone())
        .build()
    {
        Ok(sender) => Arc::new(sender),
        Err(error) => {
            tracing::error!(%error, "push notifications are not delivered: the webhook client could not be made");
            return;
        }
    };
    handle.spawn(run(service, settings, sender, projection));
}

async fn run(service: TaskService, settings: PushSettings, sender: Arc<WebhookSender>, projection: PushProjection) {
    let worker = format!("{}-push", service.runtime().config().worker_id);
    let settings = Arc::new(settings);
    loop {
        let claimed = service.claim_push_deliveries(&worker, settings.lease, settings.batch, EVENTS_PER_DELIVERY).await;
        match claimed {
            Ok(deliveries) if deliveries.is_empty() => tokio::time::sleep(settings.poll).await,
            Ok(deliveries) => {
                let mut running = tokio::task::JoinSet::new();
                for (config, delivery) in deliveries {
                    let (service, settings, sender, worker, projection) = (
                        service.clone(),
                        Arc::clone(&settings),
                        Arc::clone(&sender),
                        worker.clone(),
                        projection.clone(),
                    );
                    running.spawn(async move {
                        let settle = deliver(&sender, &settings, &projection, &config, &delivery).await;
                        match service.settle_push_delivery(&delivery, &worker, settle).await {
                            Ok(true) => {}
                            Ok(false) => tracing::info!(
                                task = %delivery.config.task_id, config = %delivery.config.id,
                                "a push delivery was taken over or deleted meanwhile"
                            ),
                            Err(error) => tracing::warn!(
                                task = %delivery.config.task_id, config = %delivery.config.id, %error,
                                "a push delivery could not be settled; it is retried once its lease lapses"
                            ),
                        }
                    });
                }
                while running.join_next().await.is_some() {}
            }
            Err(error) if matches!(error.kind(), ErrorKind::ShuttingDown) => return,
            Err(error) => {
                tracing::warn!(%error, "the push outbox could not be read");
                tokio::time::sleep(settings.poll.max(Duration::from_secs(1))).await;
            }
        }
    }
}

/// Sends `delivery`'s updates in order until one fails; says where the delivery stands.
async fn deliver(
    sender: &WebhookSender,
    settings: &PushSettings,
    projection: &PushProjection,
    config: &PushConfig,
    delivery: &PushDelivery,
) -> PushSettle {
    let context_id = delivery.context_id.clone().unwrap_or_default();
    let mut through = delivery.events.first().map_or(0, |event| event.sequence.saturating_sub(1));
    let mut attempts = delivery.attempts;
    for event in &delivery.events {
        let bodies = projection.bodies(event, &context_id);
        let count = bodies.len();
        for (index, body) in bodies.into_iter().enumerate() {
            let mut delivery_id = format!("{}:{}:{}", event.task_id, config.id, event.sequence);
            if index + 1 < count {
                delivery_id = format!("{delivery_id}:{index}");
            }
            let headers = headers(config, &delivery_id, attempts + 1);
            let Err(failure) = sender.send(&config.url, headers, body).await else {
                metrics::counter!(crate::observe::PUSH_DELIVERIES, "outcome" => "delivered").increment(1);
                continue;
            };
            attempts += 1;
            let now = now_ms();
            tracing::info!(
                task = %event.task_id, config = %config.id, sequence = event.sequence, attempt = attempts,
                failure = %failure, "a push notification was not delivered"
            );
            if !failure.retryable() || attempts >= settings.max_attempts {
                metrics::counter!(crate::observe::PUSH_DELIVERIES, "outcome" => "dead_letter").increment(1);
                tracing::warn!(
                    task = %event.task_id, config = %config.id, sequence = event.sequence,
                    "a push notification is given up on after {attempts} attempts"
                );
                return PushSettle {
                    delivered_through: event.sequence,
                    attempts: 0,
                    next_attempt_at: now,
                    dead_letter: Some(TaskEventKind::PushDeadLetter {
                        config_id: config.id.clone(),
                        sequence: event.sequence,
                        attempts,
                        // The failure's text never names the URL or a credential.
                        reason: failure.to_string(),
                    }),
                };
            }
            metrics::counter!(crate::observe::PUSH_DELIVERIES, "outcome" => "retry").increment(1);
            let wait = backoff(settings, attempts);
            return PushSettle {
                delivered_through: through,
                attempts,
                next_attempt_at: now.saturating_add(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX)),
                dead_letter: None,
            };
        }
        through = event.sequence;
        attempts = 0;
    }
    PushSettle { delivered_through: through, attempts: 0, next_attempt_at: now_ms(), dead_letter: None }
}

/// The wait before attempt `attempts + 1`: exponential, capped, with jitter.
fn backoff(settings: &PushSettings, attempts: u32) -> Duration {
    let exponent = attempts.saturating_sub(1).min(30);
    let full = settings.first_retry.saturating_mul(1 << exponent).min(settings.max_retry);
    let mut random = [0u8; 2];
    let fraction = match getrandom::fill(&mut random) {
        Ok(()) => f64::from(u16::from_le_bytes(random)) / f64::from(u16::MAX),
        Err(_) => 1.0,
    };
    full.mul_f64(0.5 + fraction / 2.0)
}

fn headers(config: &PushConfig, delivery_id: &str, attempt: u32) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/a2a+json"));
    if let Some(auth) = &config.authentication {
        let value = match &auth.credentials {
            Some(credentials) => format!("{} {credentials}", auth.scheme),
            None => auth.scheme.clone(),
        };
        if let Ok(mut value) = HeaderValue::from_str(&value) {
            value.set_sensitive(true);
            headers.insert(header::AUTHORIZATION, value);
        }
    }
    if let Some(token) = &config.token
        && let Ok(mut value) = HeaderValue::from_str(token)
    {
        value.set_sensitive(true);
        headers.insert(HeaderName::from_static(NOTIFICATION_TOKEN_HEADER), value);
    }
    if let Ok(value) = HeaderValue::from_str(delivery_id) {
        headers.insert(HeaderName::from_static(DELIVERY_ID_HEADER), value);
    }
    headers.insert(HeaderName::from_static(DELIVERY_ATTEMPT_HEADER), HeaderValue::from(attempt));
    headers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap_with_jitter() {
        let settings = PushSettings::default().retries(8, Duration::from_secs(1), Duration::from_secs(10));
        for (attempts, full) in [(1, 1), (2, 2), (3, 4), (4, 8), (5, 10), (20, 10)] {
            let wait = backoff(&settings, attempts);
            let full = Duration::from_secs(full);
            assert!(
                wait >= full / 2 && wait <= full,
                "attempt {attempts}: {wait:?} not within [{:?}, {full:?}]",
                full / 2
            );
        }
    }

    #[test]
    fn headers_carry_the_configured_credentials_and_the_delivery() {
        let config = PushConfig {
            id: "c".into(),
            url: "https://example.com/".into(),
            token: Some("tok".into()),
            authentication: Some(accord_engine::task::PushAuthentication {
                scheme: "Bearer".into(),
                credentials: Some("cred".into()),
            }),
        };
        let headers = headers(&config, "t:c:3", 2);
        assert_eq!(headers[header::AUTHORIZATION], "Bearer cred");
        assert!(headers[header::AUTHORIZATION].is_sensitive());
        assert_eq!(headers[NOTIFICATION_TOKEN_HEADER], "tok");
        assert_eq!(headers[DELIVERY_ID_HEADER], "t:c:3");
        assert_eq!(headers[DELIVERY_ATTEMPT_HEADER], "2");
        assert_eq!(headers[header::CONTENT_TYPE], "application/a2a+json");
    }
}
