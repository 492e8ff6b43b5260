//! [`PushReceiver`]: the webhook side of push notifications, for an agent that asks another
//! agent to notify it.
//!
//! The receiver is an axum [`Router`] with one `POST` route. It checks the notification token
//! and, when configured, the `Authorization` value (both compared in constant time), parses the
//! body as an A2A `StreamResponse`, drops redeliveries by their delivery id, and hands each new
//! notification to the application through a bounded [`mpsc`] channel.
//!
//! The header names are defined here once, for the delivering side too.

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use accord_types::a2a::StreamResponse;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use bytes::Bytes;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;

/// `Authorization: <scheme> <credentials>`, from the config's authentication info.
pub const AUTHORIZATION_HEADER: &str = "authorization";
/// `X-A2A-Notification-Token: <token>`, the token the config was registered with.
pub const NOTIFICATION_TOKEN_HEADER: &str = "x-a2a-notification-token";
/// `X-A2A-Delivery-Id: <id>`, one id per update, the same on every retry of it.
pub const DELIVERY_ID_HEADER: &str = "x-a2a-delivery-id";
/// `X-A2A-Delivery-Attempt: <n>`, the attempt's number, from 1.
pub const DELIVERY_ATTEMPT_HEADER: &str = "x-a2a-delivery-attempt";
/// The content type of a notification's body.
pub const A2A_CONTENT_TYPE: &str = "application/a2a+json";

/// The route's default path.
pub const DEFAULT_WEBHOOK_PATH: &str = "/webhook";
/// How many delivery ids are remembered by default to drop redeliveries.
pub const DEFAULT_DEDUP_CAPACITY: usize = 10_000;
/// How many notifications may wait in the channel by default.
pub const DEFAULT_CHANNEL_CAPACITY: usize = 1024;

/// One notification received.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The `X-A2A-Delivery-Id` header, when sent.
    pub delivery_id: Option<String>,
    /// The `X-A2A-Delivery-Attempt` header, when sent and a number.
    pub attempt: Option<u32>,
    /// The update.
    pub response: StreamResponse,
}

type DuplicateHook = Arc<dyn Fn(&str) + Send + Sync>;

/// Builds the webhook route; see the [module docs](self).
///
/// Answers: `401` when the token or `Authorization` value is missing or wrong, `400` for a body
/// that is not a `StreamResponse`, `200` for a new notification and for a duplicate, `503` when
/// the channel is full or closed (the sender retries later; the id is not marked as seen).
#[derive(Clone)]
pub struct PushReceiver {
    path: String,
    token: Option<[u8; 32]>,
    authorization: Option<[u8; 32]>,
    dedup_capacity: usize,
    channel_capacity: usize,
    on_duplicate: Option<DuplicateHook>,
}

impl fmt::Debug for PushReceiver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PushReceiver")
            .field("path", &self.path)
            .field("token", &self.token.map(|_| "<redacted>"))
            .field("authorization", &self.authorization.map(|_| "<redacted>"))
            .field("dedup_capacity", &self.dedup_capacity)
            .field("channel_capacity", &self.channel_capacity)
            .finish_non_exhaustive()
    }
}

impl Default for PushReceiver {
    fn default() -> Self {
        Self {
            path: DEFAULT_WEBHOOK_PATH.to_owned(),
            token: None,
            authorization: None,
            dedup_capacity: DEFAULT_DEDUP_CAPACITY,
            channel_capacity: DEFAULT_CHANNEL_CAPACITY,
            on_duplicate: None,
        }
    }
}

impl PushReceiver {
    /// A receiver at [`DEFAULT_WEBHOOK_PATH`] that checks no token.
    pub fn new() -> Self {
        Self::default()
    }

    /// Serves the route at `path`, a plain route path starting with `/`.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Requires `X-A2A-Notification-Token` to equal `token`.
    pub fn token(mut self, token: &str) -> Self {
        self.token = Some(digest(token.as_bytes()));
        self
    }

    /// Requires the `Authorization` header to equal `value` exactly (`"Bearer abc"`).
    pub fn authorization(mut self, value: &str) -> Self {
        self.authorization = Some(digest(value.as_bytes()));
        self
    }

    /// Remembers the last `ids` delivery ids, oldest forgotten first (default
    /// [`DEFAULT_DEDUP_CAPACITY`]; 0 drops nothing).
    pub fn dedup_capacity(mut self, ids: usize) -> Self {
        self.dedup_capacity = ids;
        self
    }

    /// Lets `notifications` wait in the channel (default [`DEFAULT_CHANNEL_CAPACITY`]; at least 1).
    pub fn channel_capacity(mut self, notifications: usize) -> Self {
        self.channel_capacity = notifications.max(1);
        self
    }

    /// Calls `hook` with the delivery id of each duplicate dropped.
    pub fn on_duplicate(mut self, hook: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.on_duplicate = Some(Arc::new(hook));
        self
    }

    /// The router, and the channel new notifications arrive on. Dropping the receiving half
    /// makes the route answer `503`.
    ///
    /// # Panics
    ///
    /// If the path is not a valid axum route path (it must start with `/`).
    pub fn into_router(self) -> (Router, mpsc::Receiver<Notification>) {
        let (sender, receiver) = mpsc::channel(self.channel_capacity);
        let state = Arc::new(Inner {
            token: self.token,
            authorization: self.authorization,
            seen: Mutex::new(Seen::new(self.dedup_capacity)),
            sender,
            on_duplicate: self.on_duplicate,
        });
        (Router::new().route(&self.path, post(receive)).with_state(state), receiver)
    }
}

fn digest(value: &[u8]) -> [u8; 32] {
    Sha256::digest(value).into()
}

struct Inner {
    token: Option<[u8; 32]>,
    authorization: Option<[u8; 32]>,
    seen: Mutex<Seen>,
    sender: mpsc::Sender<Notification>,
    on_duplicate: Option<DuplicateHook>,
}

impl Inner {
    /// Both checks run whatever the first one's outcome; digests of equal length are compared
    /// in constant time, so neither the value nor its length leaks through timing.
    fn authorized(&self, headers: &HeaderMap) -> bool {
        let check = |expected: &Option<[u8; 32]>, name: &str| match expected {
            None => true,
            Some(expected) => {
                headers.get(name).is_some_and(|value| bool::from(digest(value.as_bytes()).ct_eq(expected)))
            }
        };
        let token = check(&self.token, NOTIFICATION_TOKEN_HEADER);
        let authorization = check(&self.authorization, AUTHORIZATION_HEADER);
        token & authorization
    }
}

/// The most recent delivery ids, in arrival order.
struct Seen {
    ids: HashSet<String>,
    order: VecDeque<String>,
    capacity: usize,
}

impl Seen {
    fn new(capacity: usize) -> Self {
        Self { ids: HashSet::new(), order: VecDeque::new(), capacity }
    }

    fn contains(&self, id: &str) -> bool {
        self.ids.contains(id)
    }

    fn insert(&mut self, id: String) {
        if self.capacity == 0 {
            return;
        }
        if self.order.len() == self.capacity
            && let Some(oldest) = self.order.pop_front()
        {
            self.ids.remove(&oldest);
        }
        self.ids.insert(id.clone());
        self.order.push_back(id);
    }
}

async fn receive(State(inner): State<Arc<Inner>>, headers: HeaderMap, body: Bytes) -> Response {
    if !inner.authorized(&headers) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let Ok(response) = serde_json::from_slice::<StreamResponse>(&body) else {
        return (StatusCode::BAD_REQUEST, "the body is not an A2A StreamResponse").into_response();
    };
    let delivery_id = headers.get(DELIVERY_ID_HEADER).and_then(|value| value.to_str().ok()).map(str::to_owned);
    let attempt = headers
        .get(DELIVERY_ATTEMPT_HEADER)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse().ok());
    let duplicate = {
        // Checking, handing over and marking happen under one lock with no await, so two
        // concurrent copies of one delivery cannot both get through.
        let mut seen = inner.seen.lock().unwrap_or_else(PoisonError::into_inner);
        match &delivery_id {
            Some(id) if seen.contains(id) => Some(id.clone()),
            _ => {
                let id = delivery_id.clone();
                match inner.sender.try_send(Notification { delivery_id, attempt, response }) {
                    Ok(()) => {
                        if let Some(id) = id {
                            seen.insert(id);
                        }
                        None
                    }
                    Err(TrySendError::Full(_) | TrySendError::Closed(_)) => {
                        return (
                            StatusCode::SERVICE_UNAVAILABLE,
                            [(header::RETRY_AFTER, HeaderValue::from_static("1"))],
                        )
                            .into_response();
                    }
                }
            }
        }
    };
    if let (Some(id), Some(hook)) = (duplicate, &inner.on_duplicate) {
        hook(&id);
    }
    StatusCode::OK.into_response()
}
