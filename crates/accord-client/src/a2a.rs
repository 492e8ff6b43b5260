//! Accord's client for the official A2A protocol, over the JSON-RPC, the HTTP+JSON and the gRPC
//! bindings: 1.0, with 0.3 as the fallback on the first two.
//!
//! ```no_run
//! use accord_client::a2a::{A2aClient, A2aClientOptions, user_text_message};
//! use accord_types::a2a::{SendMessageRequest, SendMessageResponse};
//! use futures_util::StreamExt;
//!
//! # async fn run() -> Result<(), accord_client::a2a::A2aClientError> {
//! let client = A2aClient::from_card_url("http://127.0.0.1:8787", A2aClientOptions::default()).await?;
//! println!("speaking {} at {}", client.binding(), client.interface().url);
//! let request = SendMessageRequest {
//!     tenant: None,
//!     message: user_text_message("hello"),
//!     configuration: None,
//!     metadata: None,
//! };
//! if let SendMessageResponse::Task(task) = client.send_message(request.clone()).await? {
//!     println!("{} is {}", task.id, task.status.state);
//! }
//! let mut events = client.send_streaming_message(request).await?;
//! while let Some(event) = events.next().await {
//!     println!("{:?}", event?.response);
//! }
//! # Ok(()) }
//! ```
//!
//! **Choosing an interface.** The card's `supportedInterfaces` are walked in the order of the
//! caller's preference ([`A2aClientOptions::bindings`], default `JSONRPC`, `HTTP+JSON`, then
//! `GRPC`): the first interface whose `protocolBinding` equals a preferred binding exactly and
//! whose `protocolVersion` is `1.0` wins (another `1.x` only when no `1.0` one is listed). Bindings
//! this client does not speak (custom URIs such as `urn:accord:binding:lucid-http`) are skipped.
//! To prefer gRPC, say so: `A2aClientOptions::with_bindings(["GRPC", "JSONRPC"])`. When no 1.x entry fits, a `0.3` entry is taken the same way (a 0.3 card, which has
//! no `supportedInterfaces`, is read as one listing its `url` and `additionalInterfaces` at 0.3:
//! [`parse_card`]). When nothing fits, construction fails with
//! [`A2aClientError::NoCompatibleInterface`] before any request is made.
//!
//! **gRPC.** A `GRPC` interface's `url` is `host:port` (plaintext HTTP/2, as the official SDKs and
//! the TCK connect), `http://host:port` (the same) or `https://host:port` (HTTP/2 over TLS, with
//! the system's root certificates); anything else fails construction with
//! [`A2aClientError::InvalidUrl`]. Calls are the RPCs of `lf.a2a.v1.A2AService`, converted to and
//! from the same types as the other bindings; the caller's headers travel as metadata with
//! `a2a-version: 1.0`, the interface's `tenant` in each request's `tenant` field, and errors are
//! read from the `google.rpc.Status` (a connection failure is [`A2aClientError::GrpcTransport`]).
//! Answers are decoded up to [`MAX_RESPONSE_BYTES`] per message. There is no 0.3 fallback on gRPC
//! (0.3's gRPC is another service): `VersionNotSupported` is returned as it comes.
//! [`A2aClientOptions::http`] is not used by gRPC calls.
//!
//! **Falling back to 0.3.** A client bound to 1.0 that is answered `VersionNotSupported` switches
//! — itself and its clones, for every later call — to the card's 0.3 entry of the same binding
//! ([`choose_interface_v03`]; else 0.3 at the same URL) and makes the call again; no other error
//! switches it. In 0.3 the calls are spelled in 0.3 (JSON-RPC `message/send` …, or the REST
//! routes `/v1/message:send` … with the 0.3 proto's ProtoJSON) through the one conversion in
//! [`accord_types::a2a::v03`], and read back into the same 1.0 types; `list_tasks` is
//! `UnsupportedOperation` (0.3 has no such call). [`A2aClient::protocol_version`] says which is
//! in use.
//!
//! **Wire.** Every 1.0 request carries `A2A-Version: 1.0`; 0.3 requests carry none. Requests are sent as `application/json`;
//! responses are read whatever their JSON media type (`application/json` or the v1.0.1
//! `application/a2a+json`, which the official SDKs use for REST). The interface's `tenant`, when
//! set, is copied into every request (JSON-RPC `params.tenant`; REST path prefix `/{tenant}`).
//! Responses are limited to [`MAX_RESPONSE_BYTES`] (one event, for streams).
//!
//! **Streams** ([`A2aClient::send_streaming_message`], [`A2aClient::subscribe`]) yield
//! [`A2aEvent`]s that keep their SSE `id` (gRPC streams have none). A stream ends after the server closes it once the task
//! reached a terminal or interrupted state (or after a single `Message`). If the connection drops
//! or stalls for [`A2aClientOptions::stream_idle_timeout`] before that, the stream reconnects with
//! `SubscribeToTask` and `Last-Event-ID` set to the last SSE id seen — at most
//! [`A2aClientOptions::max_reconnects`] times in a row, waiting
//! [`A2aClientOptions::reconnect_delay`] before each attempt; a received event resets the count.
//! Without any SSE id seen (always, on gRPC), the resumed stream starts with the task's current
//! snapshot. When the
//! attempts are used up the stream yields [`A2aClientError::StreamInterrupted`] and ends. An error
//! inside a stream (a JSON-RPC error response, or an SSE `event: error` frame), an unreadable
//! event or one larger than [`MAX_RESPONSE_BYTES`] is yielded as one error item, and the stream
//! ends. Once the task has settled, the stream waits at most 5 s more for the server to close it
//! (a final task snapshot may still come).

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use accord_grpc::pb;
use accord_types::a2a::card::{
    PROTOCOL_BINDING_GRPC, PROTOCOL_BINDING_HTTP_JSON, PROTOCOL_BINDING_JSONRPC, WELL_KNOWN_AGENT_CARD_PATH,
};
use accord_types::a2a::jsonrpc::methods;
use accord_types::a2a::{
    A2aError, A2aErrorKind, AgentCard, AgentInterface, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest, JsonRpcError,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse, ListTasksRequest,
    ListTasksResponse, Message, Part, RestErrorBody, Role, SendMessageRequest, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, Task, TaskPushNotificationConfig,
};
use accord_types::jsonrpc::{self, ResponseError};
use eventsource_stream::Eventsource;
use futures_util::{Stream, StreamExt};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap};
use reqwest::{Method, StatusCode, Url};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

mod grpc;
mod v03;

use grpc::StreamCall;

pub use v03::choose_interface_v03;

/// The protocol version this client speaks, sent as `A2A-Version` on every request.
pub const A2A_VERSION: &str = "1.0";

/// The name of the version header.
pub const A2A_VERSION_HEADER: &str = "a2a-version";

/// The largest response body accepted (for a stream: the largest single event).
pub const MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;

/// How long a stream waits for the server to close it once the task has settled.
const SETTLED_GRACE: Duration = Duration::from_secs(5);

/// The bindings tried when the caller names none, in order.
pub const DEFAULT_BINDINGS: [&str; 3] = [PROTOCOL_BINDING_JSONRPC, PROTOCOL_BINDING_HTTP_JSON, PROTOCOL_BINDING_GRPC];

/// A protocol binding this client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Binding {
    /// `JSONRPC`: JSON-RPC 2.0 over HTTP POST (spec §9).
    JsonRpc,
    /// `HTTP+JSON`: the REST routes (spec §11).
    HttpJson,
    /// `GRPC`: the `lf.a2a.v1.A2AService` RPCs over HTTP/2 (spec §10). 1.0 only.
    Grpc,
}

impl Binding {
    /// The binding's name as written in `protocolBinding`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::JsonRpc => PROTOCOL_BINDING_JSONRPC,
            Self::HttpJson => PROTOCOL_BINDING_HTTP_JSON,
            Self::Grpc => PROTOCOL_BINDING_GRPC,
        }
    }

    /// The binding named exactly `name`, if this client speaks it.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            PROTOCOL_BINDING_JSONRPC => Some(Self::JsonRpc),
            PROTOCOL_BINDING_HTTP_JSON => Some(Self::HttpJson),
            PROTOCOL_BINDING_GRPC => Some(Self::Grpc),
            _ => None,
        }
    }
}

impl std::fmt::Display for Binding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Options of an [`A2aClient`].
#[derive(Debug, Clone)]
pub struct A2aClientOptions {
    /// The bindings to use, most preferred first (exact `protocolBinding` names). Default
    /// [`DEFAULT_BINDINGS`].
    pub bindings: Vec<String>,
    /// Your own HTTP client (proxies, TLS roots) for the card and the JSON-RPC and HTTP+JSON
    /// bindings (not gRPC). Default: one with a 10 s connect timeout.
    pub http: Option<reqwest::Client>,
    /// Extra headers on every request (e.g. `Authorization`); on gRPC, metadata of the same
    /// (lowercase) names. `A2A-Version` is always `1.0`.
    pub headers: HeaderMap,
    /// The timeout of a call that is not a stream, and of a stream's response headers. Blocking
    /// sends wait for the task, so this is generous. Default 120 s.
    pub request_timeout: Duration,
    /// How long a stream may stay silent (no event, no keep-alive) before it counts as dropped.
    /// Default 60 s.
    pub stream_idle_timeout: Duration,
    /// How many reconnections in a row a stream may make. Default 3; 0 turns reconnection off.
    pub max_reconnects: u32,
    /// The wait before each reconnection. Default 250 ms.
    pub reconnect_delay: Duration,
}

impl Default for A2aClientOptions {
    fn default() -> Self {
        Self {
            bindings: DEFAULT_BINDINGS.iter().map(|binding| (*binding).to_owned()).collect(),
            http: None,
            headers: HeaderMap::new(),
            request_timeout: Duration::from_secs(120),
            stream_idle_timeout: Duration::from_secs(60),
            max_reconnects: 3,
            reconnect_delay: Duration::from_millis(250),
        }
    }
}

impl A2aClientOptions {
    /// The default options with this binding preference.
    pub fn with_bindings<I, S>(bindings: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self { bindings: bindings.into_iter().map(Into::into).collect(), ..Self::default() }
    }
}

/// Why an A2A call failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum A2aClientError {
    /// The request did not get an answer (connection refused, reset, timed out, …).
    Transport {
        /// The URL asked.
        url: String,
        /// The transport error.
        source: reqwest::Error,
    },
    /// The request did not get an answer within the configured timeout.
    Timeout {
        /// The URL asked.
        url: String,
    },
    /// The HTTP client could not be built.
    HttpClient(reqwest::Error),
    /// A gRPC call did not get an answer from the peer (connection refused, reset, the stream
    /// broken): the status was made by the client's transport, not sent by the peer.
    GrpcTransport {
        /// The interface's endpoint.
        url: String,
        /// The status the transport reported.
        status: tonic::Status,
    },
    /// The peer answered with an HTTP error status and a body that is not an A2A error.
    Status {
        /// The URL asked.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The body, as text (cut at 64 KiB).
        body: String,
    },
    /// The peer answered with an A2A error: a JSON-RPC error object whose code is in the
    /// catalogue, a REST `google.rpc.Status` body with an A2A `ErrorInfo` reason, or a gRPC
    /// status.
    A2a {
        /// The HTTP status, for the HTTP+JSON binding (JSON-RPC errors come with 200; gRPC
        /// errors have none).
        http_status: Option<u16>,
        /// The error: kind (code, reason), message and `ErrorInfo` metadata.
        error: A2aError,
    },
    /// The peer answered with a JSON-RPC error whose code is not in the A2A catalogue.
    JsonRpc {
        /// The error object as received.
        error: JsonRpcError,
    },
    /// The answer could not be read: not JSON, not the expected shape, a JSON-RPC response with
    /// another id, too large, not an event stream when one was expected.
    InvalidResponse {
        /// The URL asked.
        url: String,
        /// What was wrong.
        reason: String,
    },
    /// The agent card could not be fetched as JSON or is not an A2A v1.0 card.
    InvalidCard {
        /// Where it came from (empty for a card given as a value).
        url: String,
        /// What was wrong.
        reason: String,
    },
    /// A URL (the card's, or an interface's) cannot be used.
    InvalidUrl {
        /// The URL.
        url: String,
        /// Why.
        reason: String,
    },
    /// The card lists no interface with a binding the caller accepts and this client speaks.
    NoCompatibleInterface {
        /// The bindings asked for, in order.
        wanted: Vec<String>,
        /// What the card offers, as `binding@version`.
        offered: Vec<String>,
    },
    /// A stream dropped before the task settled, and reconnecting did not bring it back.
    StreamInterrupted {
        /// The task being followed, when known.
        task_id: Option<String>,
        /// The last SSE id received, when any.
        last_event_id: Option<String>,
        /// How many reconnections were attempted.
        attempts: u32,
        /// The last reason (the transport error or why the connection ended).
        reason: String,
    },
}

impl A2aClientError {
    /// The A2A error kind, for [`A2aClientError::A2a`].
    pub fn kind(&self) -> Option<A2aErrorKind> {
        self.a2a_error().map(|error| error.kind)
    }

    /// The A2A error, for [`A2aClientError::A2a`].
    pub fn a2a_error(&self) -> Option<&A2aError> {
        match self {
            Self::A2a { error, .. } => Some(error),
            _ => None,
        }
    }

    /// The HTTP status that came with the error, when any.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            Self::Status { status, .. } => Some(*status),
            Self::A2a { http_status, .. } => *http_status,
            _ => None,
        }
    }

    /// Whether a stream may try again after this error (the connection failed or stalled).
    fn is_retryable(&self) -> bool {
        matches!(self, Self::Transport { .. } | Self::Timeout { .. } | Self::GrpcTransport { .. })
    }
}

impl std::fmt::Display for A2aClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Transport { url, source } => write!(f, "request to {url} failed: {source}"),
            Self::Timeout { url } => write!(f, "request to {url} timed out"),
            Self::HttpClient(source) => write!(f, "the HTTP client could not be built: {source}"),
            Self::GrpcTransport { url, status } => {
                write!(f, "gRPC call to {url} failed: {} ({:?})", status.message(), status.code())
            }
            Self::Status { url, status, body } => write!(f, "{url} answered HTTP {status}: {body}"),
            Self::A2a { http_status: Some(status), error } => write!(f, "{error} (HTTP {status})"),
            Self::A2a { http_status: None, error } => write!(f, "{error}"),
            Self::JsonRpc { error } => write!(f, "{error}"),
            Self::InvalidResponse { url, reason } => write!(f, "unreadable answer from {url}: {reason}"),
            Self::InvalidCard { url, reason } if url.is_empty() => write!(f, "invalid agent card: {reason}"),
            Self::InvalidCard { url, reason } => write!(f, "invalid agent card at {url}: {reason}"),
            Self::InvalidUrl { url, reason } => write!(f, "invalid URL {url:?}: {reason}"),
            Self::NoCompatibleInterface { wanted, offered } => write!(
                f,
                "the card offers no compatible interface: wanted one of [{}] at A2A 1.x, offered [{}]",
                wanted.join(", "),
                offered.join(", ")
            ),
            Self::StreamInterrupted { task_id, last_event_id, attempts, reason } => write!(
                f,
                "the stream of task {} dropped after event {} and {attempts} reconnection(s) failed: {reason}",
                task_id.as_deref().unwrap_or("?"),
                last_event_id.as_deref().unwrap_or("-"),
            ),
        }
    }
}

impl std::error::Error for A2aClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Transport { source, .. } | Self::HttpClient(source) => Some(source),
            Self::GrpcTransport { status, .. } => Some(status),
            Self::A2a { error, .. } => Some(error),
            Self::JsonRpc { error } => Some(error),
            _ => None,
        }
    }
}

/// One event of a stream.
#[derive(Debug, Clone, PartialEq)]
pub struct A2aEvent {
    /// The SSE `id`, when the server sent one (what `Last-Event-ID` resumes after).
    pub id: Option<String>,
    /// The stream response: a task, a message, a status or an artifact update.
    pub response: StreamResponse,
}

impl A2aEvent {
    /// The task the event is about (`None` for a message without a task).
    pub fn task_id(&self) -> Option<&str> {
        task_id_of(&self.response)
    }
}

/// The events of a stream, in order. Dropping it closes the connection.
pub type A2aEventStream = Pin<Box<dyn Stream<Item = Result<A2aEvent, A2aClientError>> + Send>>;

/// A fresh random message id (128 bits, hex).
pub fn new_message_id() -> String {
    random_hex()
}

/// A user message with one text part and a fresh id.
pub fn user_text_message(text: impl Into<String>) -> Message {
    Message::new(new_message_id(), Role::User, vec![Part::text(text)])
}

/// Fetches an agent card: `url` is the card's own URL (ending in `.json`) or the agent's base
/// URL, under which `/.well-known/agent-card.json` is read (30 s timeout; `headers` are sent
/// along, with `A2A-Version: 1.0`). See [`parse_card`] for what is accepted.
pub async fn fetch_card(http: &reqwest::Client, url: &str, headers: &HeaderMap) -> Result<AgentCard, A2aClientError> {
    let card_url = card_url(url)?;
    let response = http
        .get(card_url.clone())
        .headers(headers.clone())
        .header(A2A_VERSION_HEADER, A2A_VERSION)
        .header(ACCEPT, "application/json")
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .map_err(|source| transport(&card_url, source))?;
    let status = response.status();
    let body = read_body(&card_url, response).await?;
    if !status.is_success() {
        return Err(A2aClientError::Status {
            url: card_url.to_string(),
            status: status.as_u16(),
            body: excerpt(&body),
        });
    }
    let value: Value = serde_json::from_slice(&body)
        .map_err(|error| A2aClientError::InvalidCard { url: card_url.to_string(), reason: error.to_string() })?;
    parse_card(value).map_err(|reason| A2aClientError::InvalidCard { url: card_url.to_string(), reason })
}

/// Reads an A2A v1.0 agent card.
///
/// The card must deserialize as [`AgentCard`] (every `REQUIRED` field present). One tolerance:
/// a `supportedInterfaces` entry of a binding this client does not speak (a custom URI) that is
/// itself malformed — e.g. Accord's own Lucid entry without `protocolVersion` — is dropped rather
/// than failing the whole card, since it is never used. Malformed `JSONRPC`, `HTTP+JSON` or `GRPC`
/// entries still fail.
pub fn parse_card(value: Value) -> Result<AgentCard, String> {
    let value = v03::card_with_interfaces(value);
    match serde_json::from_value::<AgentCard>(value.clone()) {
        Ok(card) => Ok(card),
        Err(strict) => {
            let mut value = value;
            let Some(interfaces) = value.get_mut("supportedInterfaces").and_then(Value::as_array_mut) else {
                return Err(strict.to_string());
            };
            let before = interfaces.len();
            interfaces.retain(|interface| {
                let spoken = interface
                    .get("protocolBinding")
                    .or_else(|| interface.get("protocol_binding"))
                    .and_then(Value::as_str)
                    .and_then(Binding::from_name)
                    .is_some();
                spoken || serde_json::from_value::<AgentInterface>(interface.clone()).is_ok()
            });
            if interfaces.len() == before {
                return Err(strict.to_string());
            }
            serde_json::from_value::<AgentCard>(value).map_err(|error| error.to_string())
        }
    }
}

/// Picks the interface to use (see the module documentation). Returns the binding and the
/// interface.
pub fn choose_interface<'c>(
    card: &'c AgentCard,
    preference: &[String],
) -> Result<(Binding, &'c AgentInterface), A2aClientError> {
    for wanted in preference {
        let Some(binding) = Binding::from_name(wanted) else { continue };
        let candidates = || card.supported_interfaces.iter().filter(|interface| interface.protocol_binding == *wanted);
        let exact = candidates().find(|interface| major_minor(&interface.protocol_version) == Some((1, 0)));
        let any_v1 =
            || candidates().find(|interface| major_minor(&interface.protocol_version).is_some_and(|v| v.0 == 1));
        if let Some(interface) = exact.or_else(any_v1) {
            return Ok((binding, interface));
        }
    }
    Err(A2aClientError::NoCompatibleInterface {
        wanted: preference.to_vec(),
        offered: card
            .supported_interfaces
            .iter()
            .map(|interface| format!("{}@{}", interface.protocol_binding, interface.protocol_version))
            .collect(),
    })
}

fn major_minor(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.trim().split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().unwrap_or("0").parse().ok()?;
    Some((major, minor))
}

/// The A2A protocol version a client speaks to its peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProtocolVersion {
    /// A2A 1.0: `A2A-Version: 1.0` on every request.
    V1_0,
    /// A2A 0.3: no version header, the 0.3 method names, routes and shapes
    /// ([`accord_types::a2a::v03`]).
    V0_3,
}

impl ProtocolVersion {
    /// `"1.0"` or `"0.3"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V1_0 => A2A_VERSION,
            Self::V0_3 => accord_types::a2a::v03::PROTOCOL_VERSION,
        }
    }
}

impl std::fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An interface the client may talk to, in one protocol version.
#[derive(Debug)]
pub(crate) struct Bound {
    binding: Binding,
    interface: AgentInterface,
    /// The URL calls go to (for gRPC: the channel's origin, `http(s)://host:port/`).
    endpoint: Url,
    version: ProtocolVersion,
    /// The channel, for the gRPC binding.
    grpc: Option<grpc::Target>,
}

impl Bound {
    fn new(
        binding: Binding,
        interface: &AgentInterface,
        version: ProtocolVersion,
    ) -> Result<Arc<Self>, A2aClientError> {
        if binding == Binding::Grpc {
            let (endpoint, target) = grpc::Target::new(&interface.url)?;
            return Ok(Arc::new(Self { binding, interface: interface.clone(), endpoint, version, grpc: Some(target) }));
        }
        let endpoint = Url::parse(&interface.url)
            .map_err(|error| A2aClientError::InvalidUrl { url: interface.url.clone(), reason: error.to_string() })?;
        if !matches!(endpoint.scheme(), "http" | "https") || endpoint.cannot_be_a_base() {
            return Err(A2aClientError::InvalidUrl {
                url: interface.url.clone(),
                reason: "an interface URL must be an http or https URL".into(),
            });
        }
        Ok(Arc::new(Self { binding, interface: interface.clone(), endpoint, version, grpc: None }))
    }
}

/// An A2A client bound to one interface of one agent (1.0, with 0.3 as the fallback; see the
/// module documentation). Cheap to clone; clones share the fallback decision.
#[derive(Debug, Clone)]
pub struct A2aClient {
    http: reqwest::Client,
    card: Arc<AgentCard>,
    /// The interface chosen from the card: 1.0 when the card offers it, else 0.3.
    primary: Arc<Bound>,
    /// The 0.3 interface used once a 1.0 peer answers `VersionNotSupported`.
    fallback: Option<Arc<Bound>>,
    fell_back: Arc<AtomicBool>,
    options: Arc<A2aClientOptions>,
}

/// The parts of an HTTP call that depend on the binding.
struct Call {
    method: Method,
    url: Url,
    body: Option<Value>,
    /// The JSON-RPC id, for the JSON-RPC binding.
    rpc_id: Option<Value>,
    /// The interface and version the call speaks.
    bound: Arc<Bound>,
}

impl A2aClient {
    /// Fetches the card (see [`fetch_card`]) and binds to the interface the options prefer.
    pub async fn from_card_url(url: &str, options: A2aClientOptions) -> Result<Self, A2aClientError> {
        let http = http_client(&options)?;
        let card = fetch_card(&http, url, &options.headers).await?;
        Self::build(http, card, options)
    }

    /// Binds to the interface of `card` the options prefer, without any network call.
    pub fn from_card(card: AgentCard, options: A2aClientOptions) -> Result<Self, A2aClientError> {
        let http = http_client(&options)?;
        Self::build(http, card, options)
    }

    fn build(http: reqwest::Client, card: AgentCard, options: A2aClientOptions) -> Result<Self, A2aClientError> {
        let (primary, fallback) = match choose_interface(&card, &options.bindings) {
            // No 0.3 fallback on gRPC: 0.3's gRPC is another service.
            Ok((binding @ Binding::Grpc, interface)) => (Bound::new(binding, interface, ProtocolVersion::V1_0)?, None),
            Ok((binding, interface)) => {
                let primary = Bound::new(binding, interface, ProtocolVersion::V1_0)?;
                // A 0.3 entry of the card when there is one, else 0.3 at the same URL.
                let fallback = match choose_interface_v03(&card, &options.bindings, Some(binding)) {
                    Some((binding, interface)) => Bound::new(binding, interface, ProtocolVersion::V0_3)?,
                    None => Bound::new(binding, interface, ProtocolVersion::V0_3)?,
                };
                (primary, Some(fallback))
            }
            Err(error) => match choose_interface_v03(&card, &options.bindings, None) {
                Some((binding, interface)) => (Bound::new(binding, interface, ProtocolVersion::V0_3)?, None),
                None => return Err(error),
            },
        };
        Ok(Self {
            http,
            card: Arc::new(card),
            primary,
            fallback,
            fell_back: Arc::new(AtomicBool::new(false)),
            options: Arc::new(options),
        })
    }

    /// The interface and version calls go to now.
    fn bound(&self) -> Arc<Bound> {
        match &self.fallback {
            Some(fallback) if self.fell_back.load(Ordering::Relaxed) => Arc::clone(fallback),
            _ => Arc::clone(&self.primary),
        }
    }

    /// Runs `operation` on the current interface; when a 1.0 peer answers `VersionNotSupported`,
    /// switches this client (and its clones) to 0.3 and runs it again there.
    async fn with_fallback<T, F, Fut>(&self, operation: F) -> Result<T, A2aClientError>
    where
        F: Fn(Arc<Bound>) -> Fut,
        Fut: std::future::Future<Output = Result<T, A2aClientError>>,
    {
        let bound = self.bound();
        match operation(Arc::clone(&bound)).await {
            Err(error)
                if bound.version == ProtocolVersion::V1_0
                    && error.kind() == Some(A2aErrorKind::VersionNotSupported)
                    && self.fallback.is_some() =>
            {
                self.fell_back.store(true, Ordering::Relaxed);
                operation(self.bound()).await
            }
            other => other,
        }
    }

    /// The agent card the client was built from.
    pub fn card(&self) -> &AgentCard {
        &self.card
    }

    /// The interface in use.
    pub fn interface(&self) -> &AgentInterface {
        &self.current().interface
    }

    /// The binding in use.
    pub fn binding(&self) -> Binding {
        self.current().binding
    }

    /// The protocol version in use: 1.0, or 0.3 when the card offers only 0.3 or the peer
    /// refused 1.0 with `VersionNotSupported`.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.current().version
    }

    fn current(&self) -> &Bound {
        match &self.fallback {
            Some(fallback) if self.fell_back.load(Ordering::Relaxed) => fallback,
            _ => &self.primary,
        }
    }

    /// `SendMessage`: the task (once terminal or interrupted, unless
    /// `configuration.returnImmediately`) or the agent's direct message.
    pub async fn send_message(&self, request: SendMessageRequest) -> Result<SendMessageResponse, A2aClientError> {
        self.with_fallback(|bound| {
            let mut request = request.clone();
            async move {
                if bound.version == ProtocolVersion::V0_3 {
                    return self.send_message_v03(bound, request).await;
                }
                fill_tenant(&bound, &mut request.tenant);
                if bound.binding == Binding::Grpc {
                    return self
                        .grpc_unary::<_, pb::SendMessageRequest, _, _, _, _>(&bound, request, |mut c, r| async move {
                            c.send_message(r).await
                        })
                        .await;
                }
                let call = self.call_on(
                    bound,
                    methods::SEND_MESSAGE,
                    Method::POST,
                    &["message:send"],
                    &[],
                    to_value(&request)?,
                )?;
                self.unary(call).await
            }
        })
        .await
    }

    /// `SendStreamingMessage`: the task (or a message), then its updates.
    pub async fn send_streaming_message(&self, request: SendMessageRequest) -> Result<A2aEventStream, A2aClientError> {
        let connection = self
            .with_fallback(|bound| {
                let mut request = request.clone();
                async move {
                    if bound.version == ProtocolVersion::V0_3 {
                        return self.open_stream(self.stream_call_v03(bound, request)?, None).await;
                    }
                    fill_tenant(&bound, &mut request.tenant);
                    if bound.binding == Binding::Grpc {
                        return self.grpc_open_stream(bound, StreamCall::Send(Box::new(request))).await;
                    }
                    let call = self.call_on(
                        bound,
                        methods::SEND_STREAMING_MESSAGE,
                        Method::POST,
                        &["message:stream"],
                        &[],
                        to_value(&request)?,
                    )?;
                    self.open_stream(call, None).await
                }
            })
            .await?;
        Ok(self.follow(connection, None, None))
    }

    /// `GetTask`, with at most `history_length` recent messages when set.
    pub async fn get_task(&self, id: &str, history_length: Option<i32>) -> Result<Task, A2aClientError> {
        self.with_fallback(|bound| async move {
            if bound.version == ProtocolVersion::V0_3 {
                return self.get_task_v03(bound, id, history_length).await;
            }
            let mut request = GetTaskRequest { tenant: None, id: id.to_owned(), history_length };
            fill_tenant(&bound, &mut request.tenant);
            if bound.binding == Binding::Grpc {
                return self
                    .grpc_unary::<_, pb::GetTaskRequest, _, _, _, _>(&bound, request, |mut c, r| async move {
                        c.get_task(r).await
                    })
                    .await;
            }
            let query: Vec<(&str, String)> =
                history_length.map(|length| ("historyLength", length.to_string())).into_iter().collect();
            let call =
                self.call_on(bound, methods::GET_TASK, Method::GET, &["tasks", id], &query, to_value(&request)?)?;
            self.unary(call).await
        })
        .await
    }

    /// `ListTasks`: one page of the caller's tasks. A2A 0.3 has no such operation: against a
    /// 0.3 peer this is [`A2aErrorKind::UnsupportedOperation`], without a request.
    pub async fn list_tasks(&self, request: ListTasksRequest) -> Result<ListTasksResponse, A2aClientError> {
        self.with_fallback(|bound| {
            let mut request = request.clone();
            async move {
                if bound.version == ProtocolVersion::V0_3 {
                    return Err(v03::unsupported("ListTasks"));
                }
                fill_tenant(&bound, &mut request.tenant);
                if bound.binding == Binding::Grpc {
                    return self
                        .grpc_unary::<_, pb::ListTasksRequest, _, _, _, _>(&bound, request, |mut c, r| async move {
                            c.list_tasks(r).await
                        })
                        .await;
                }
                let mut query: Vec<(&str, String)> = Vec::new();
                if let Some(context_id) = &request.context_id {
                    query.push(("contextId", context_id.clone()));
                }
                if let Some(status) = request.status {
                    query.push(("status", status.as_str().to_owned()));
                }
                if let Some(page_size) = request.page_size {
                    query.push(("pageSize", page_size.to_string()));
                }
                if let Some(page_token) = &request.page_token {
                    query.push(("pageToken", page_token.clone()));
                }
                if let Some(history_length) = request.history_length {
                    query.push(("historyLength", history_length.to_string()));
                }
                if let Some(after) = &request.status_timestamp_after {
                    query.push(("statusTimestampAfter", after.clone()));
                }
                if let Some(include) = request.include_artifacts {
                    query.push(("includeArtifacts", include.to_string()));
                }
                let call =
                    self.call_on(bound, methods::LIST_TASKS, Method::GET, &["tasks"], &query, to_value(&request)?)?;
                self.unary(call).await
            }
        })
        .await
    }

    /// `CancelTask`: the task as canceled.
    pub async fn cancel_task(&self, id: &str) -> Result<Task, A2aClientError> {
        self.with_fallback(|bound| async move {
            if bound.version == ProtocolVersion::V0_3 {
                return self.cancel_task_v03(bound, id).await;
            }
            let mut request = CancelTaskRequest { tenant: None, id: id.to_owned(), metadata: None };
            fill_tenant(&bound, &mut request.tenant);
            if bound.binding == Binding::Grpc {
                return self
                    .grpc_unary::<_, pb::CancelTaskRequest, _, _, _, _>(&bound, request, |mut c, r| async move {
                        c.cancel_task(r).await
                    })
                    .await;
            }
            let action = format!("{id}:cancel");
            let http_json = bound.binding == Binding::HttpJson;
            let mut call =
                self.call_on(bound, methods::CANCEL_TASK, Method::POST, &["tasks", &action], &[], to_value(&request)?)?;
            if http_json {
                // The id travels in the path and there is no metadata: no body, as the TCK sends it.
                call.body = None;
            }
            self.unary(call).await
        })
        .await
    }

    /// `SubscribeToTask`: the current task, then its updates until it settles.
    pub async fn subscribe(&self, id: &str) -> Result<A2aEventStream, A2aClientError> {
        self.subscribe_after(id, None).await
    }

    /// `SubscribeToTask` resuming after the SSE event `last_event_id` (sent as `Last-Event-ID`):
    /// the updates after that event, without a new snapshot on servers that keep a log.
    pub async fn subscribe_after(
        &self,
        id: &str,
        last_event_id: Option<&str>,
    ) -> Result<A2aEventStream, A2aClientError> {
        let connection = self.with_fallback(|bound| self.open_subscription(bound, id, last_event_id)).await?;
        Ok(self.follow(connection, Some(id.to_owned()), last_event_id.map(str::to_owned)))
    }

    /// `GetExtendedAgentCard`: the card an authenticated caller may see.
    pub async fn get_extended_card(&self) -> Result<AgentCard, A2aClientError> {
        self.with_fallback(|bound| async move {
            let call = if bound.version == ProtocolVersion::V0_3 {
                // As the 0.3 SDK clients: a card that does not declare one is not asked for it.
                if !v03::declares_extended_card(&self.card) {
                    return Err(A2aClientError::A2a {
                        http_status: None,
                        error: A2aError::new(A2aErrorKind::ExtendedAgentCardNotConfigured)
                            .with_message("the card declares no extended card"),
                    });
                }
                self.extended_card_call_v03(Arc::clone(&bound))?
            } else {
                let mut request = GetExtendedAgentCardRequest::default();
                fill_tenant(&bound, &mut request.tenant);
                if bound.binding == Binding::Grpc {
                    return self
                        .grpc_unary::<_, pb::GetExtendedAgentCardRequest, _, _, _, _>(
                            &bound,
                            request,
                            |mut c, r| async move { c.get_extended_agent_card(r).await },
                        )
                        .await;
                }
                self.call_on(
                    Arc::clone(&bound),
                    methods::GET_EXTENDED_AGENT_CARD,
                    Method::GET,
                    &["extendedAgentCard"],
                    &[],
                    to_value(&request)?,
                )?
            };
            let rest_v03 = bound.version == ProtocolVersion::V0_3 && bound.binding == Binding::HttpJson;
            let (url, value) = match self.unary_value(call).await {
                Ok(answer) => answer,
                // A 0.3 SDK server without an extended card has no `/v1/card` route at all.
                Err(error) if rest_v03 && error.http_status() == Some(404) => {
                    return Err(A2aClientError::A2a {
                        http_status: Some(404),
                        error: A2aError::new(A2aErrorKind::ExtendedAgentCardNotConfigured),
                    });
                }
                Err(error) => return Err(error),
            };
            parse_card(value).map_err(|reason| A2aClientError::InvalidResponse { url, reason })
        })
        .await
    }

    /// `CreateTaskPushNotificationConfig`: registers a webhook for `config.taskId`.
    pub async fn create_push_config(
        &self,
        config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2aClientError> {
        self.with_fallback(|bound| {
            let mut config = config.clone();
            async move {
                if bound.version == ProtocolVersion::V0_3 {
                    return self.create_push_config_v03(bound, config).await;
                }
                fill_tenant(&bound, &mut config.tenant);
                if bound.binding == Binding::Grpc {
                    return self
                        .grpc_unary::<_, pb::TaskPushNotificationConfig, _, _, _, _>(
                            &bound,
                            config,
                            |mut c, r| async move { c.create_task_push_notification_config(r).await },
                        )
                        .await;
                }
                let task_id = config.task_id.clone().unwrap_or_default();
                let http_json = bound.binding == Binding::HttpJson;
                let mut call = self.call_on(
                    bound,
                    methods::CREATE_TASK_PUSH_NOTIFICATION_CONFIG,
                    Method::POST,
                    &["tasks", &task_id, "pushNotificationConfigs"],
                    &[],
                    to_value(&config)?,
                )?;
                if http_json && let Some(Value::Object(body)) = call.body.as_mut() {
                    // Path parameters are not repeated in the body (§1.1).
                    body.remove("taskId");
                }
                self.unary(call).await
            }
        })
        .await
    }

    /// `GetTaskPushNotificationConfig`.
    pub async fn get_push_config(
        &self,
        request: GetTaskPushNotificationConfigRequest,
    ) -> Result<TaskPushNotificationConfig, A2aClientError> {
        self.with_fallback(|bound| {
            let mut request = request.clone();
            async move {
                if bound.version == ProtocolVersion::V0_3 {
                    return self.get_push_config_v03(bound, request).await;
                }
                fill_tenant(&bound, &mut request.tenant);
                if bound.binding == Binding::Grpc {
                    return self
                        .grpc_unary::<_, pb::GetTaskPushNotificationConfigRequest, _, _, _, _>(
                            &bound,
                            request,
                            |mut c, r| async move { c.get_task_push_notification_config(r).await },
                        )
                        .await;
                }
                let path = ["tasks", &request.task_id, "pushNotificationConfigs", &request.id];
                let method = methods::GET_TASK_PUSH_NOTIFICATION_CONFIG;
                let call = self.call_on(bound, method, Method::GET, &path, &[], to_value(&request)?)?;
                self.unary(call).await
            }
        })
        .await
    }

    /// `ListTaskPushNotificationConfigs`.
    pub async fn list_push_configs(
        &self,
        request: ListTaskPushNotificationConfigsRequest,
    ) -> Result<ListTaskPushNotificationConfigsResponse, A2aClientError> {
        self.with_fallback(|bound| {
            let mut request = request.clone();
            async move {
                if bound.version == ProtocolVersion::V0_3 {
                    return self.list_push_configs_v03(bound, &request.task_id).await;
                }
                fill_tenant(&bound, &mut request.tenant);
                if bound.binding == Binding::Grpc {
                    return self
                        .grpc_unary::<_, pb::ListTaskPushNotificationConfigsRequest, _, _, _, _>(
                            &bound,
                            request,
                            |mut c, r| async move { c.list_task_push_notification_configs(r).await },
                        )
                        .await;
                }
                let mut query: Vec<(&str, String)> = Vec::new();
                if let Some(page_size) = request.page_size {
                    query.push(("pageSize", page_size.to_string()));
                }
                if let Some(page_token) = &request.page_token {
                    query.push(("pageToken", page_token.clone()));
                }
                let path = ["tasks", &request.task_id, "pushNotificationConfigs"];
                let method = methods::LIST_TASK_PUSH_NOTIFICATION_CONFIGS;
                let call = self.call_on(bound, method, Method::GET, &path, &query, to_value(&request)?)?;
                self.unary(call).await
            }
        })
        .await
    }

    /// `DeleteTaskPushNotificationConfig`.
    pub async fn delete_push_config(
        &self,
        request: DeleteTaskPushNotificationConfigRequest,
    ) -> Result<(), A2aClientError> {
        self.with_fallback(|bound| {
            let mut request = request.clone();
            async move {
                let call = if bound.version == ProtocolVersion::V0_3 {
                    self.delete_push_config_call_v03(bound, &request)?
                } else {
                    fill_tenant(&bound, &mut request.tenant);
                    if bound.binding == Binding::Grpc {
                        return self
                            .grpc_unary::<_, pb::DeleteTaskPushNotificationConfigRequest, _, (), _, _>(
                                &bound,
                                request,
                                |mut c, r| async move { c.delete_task_push_notification_config(r).await },
                            )
                            .await;
                    }
                    let path = ["tasks", &request.task_id, "pushNotificationConfigs", &request.id];
                    let method = methods::DELETE_TASK_PUSH_NOTIFICATION_CONFIG;
                    self.call_on(bound, method, Method::DELETE, &path, &[], to_value(&request)?)?
                };
                let (url, value) = self.unary_value(call).await?;
                match value {
                    Value::Object(_) | Value::Null => Ok(()),
                    other => {
                        Err(A2aClientError::InvalidResponse { url, reason: format!("expected {{}}, got {other}") })
                    }
                }
            }
        })
        .await
    }

    #[cfg(test)]
    fn fill_tenant(&self, tenant: &mut Option<String>) {
        fill_tenant(&self.bound(), tenant);
    }

    /// [`Self::call_on`] the current interface.
    #[cfg(test)]
    fn call(
        &self,
        method: &str,
        http_method: Method,
        rest_path: &[&str],
        query: &[(&str, String)],
        params: Value,
    ) -> Result<Call, A2aClientError> {
        self.call_on(self.bound(), method, http_method, rest_path, query, params)
    }

    /// The 1.0 call for an operation on `bound`: a JSON-RPC POST of `method` with
    /// `params`, or the REST route `rest_path` (under the tenant, when set) with `params` as the
    /// body of a POST (its `tenant` removed; it travels in the path) and `query` for a GET.
    fn call_on(
        &self,
        bound: Arc<Bound>,
        method: &str,
        http_method: Method,
        rest_path: &[&str],
        query: &[(&str, String)],
        params: Value,
    ) -> Result<Call, A2aClientError> {
        match bound.binding {
            Binding::JsonRpc => {
                let id = Value::String(random_hex());
                let request = jsonrpc::Request::new(id.clone(), method, params);
                Ok(Call {
                    method: Method::POST,
                    url: bound.endpoint.clone(),
                    body: Some(to_value(&request)?),
                    rpc_id: Some(id),
                    bound,
                })
            }
            Binding::HttpJson => {
                let mut url = bound.endpoint.clone();
                {
                    let mut segments = url.path_segments_mut().map_err(|()| A2aClientError::InvalidUrl {
                        url: bound.endpoint.to_string(),
                        reason: "cannot be a base".into(),
                    })?;
                    segments.pop_if_empty();
                    if let Some(tenant) = bound.interface.tenant.as_deref().filter(|tenant| !tenant.is_empty()) {
                        segments.push(tenant);
                    }
                    segments.extend(rest_path);
                }
                if !query.is_empty() {
                    url.query_pairs_mut().extend_pairs(query.iter().map(|(name, value)| (*name, value.as_str())));
                }
                let body = (http_method == Method::POST).then(|| {
                    let mut params = params;
                    if let Value::Object(fields) = &mut params {
                        fields.remove("tenant");
                    }
                    params
                });
                Ok(Call { method: http_method, url, body, rpc_id: None, bound })
            }
            // gRPC calls go through `grpc_unary` and `grpc_open_stream`, never here.
            Binding::Grpc => Err(A2aClientError::InvalidUrl {
                url: bound.interface.url.clone(),
                reason: "a gRPC interface takes no HTTP request".into(),
            }),
        }
    }

    fn request(&self, call: &Call, accept: &'static str) -> reqwest::RequestBuilder {
        let mut request =
            self.http.request(call.method.clone(), call.url.clone()).headers(self.options.headers.clone());
        if call.bound.version == ProtocolVersion::V1_0 {
            // A 0.3 request carries no version: that is how 0.3 peers (and Accord) tell it.
            request = request.header(A2A_VERSION_HEADER, A2A_VERSION);
        }
        request = request.header(ACCEPT, accept);
        if let Some(body) = &call.body {
            request = request.header(CONTENT_TYPE, "application/json").body(body.to_string());
        }
        request
    }

    async fn send(&self, request: reqwest::RequestBuilder, url: &Url) -> Result<reqwest::Response, A2aClientError> {
        match tokio::time::timeout(self.options.request_timeout, request.send()).await {
            Err(_) => Err(A2aClientError::Timeout { url: url.to_string() }),
            Ok(Err(source)) if source.is_timeout() => Err(A2aClientError::Timeout { url: url.to_string() }),
            Ok(Err(source)) => Err(transport(url, source)),
            Ok(Ok(response)) => Ok(response),
        }
    }

    async fn unary<T: DeserializeOwned>(&self, call: Call) -> Result<T, A2aClientError> {
        let (url, value) = self.unary_value(call).await?;
        serde_json::from_value(value)
            .map_err(|error| A2aClientError::InvalidResponse { url, reason: error.to_string() })
    }

    /// Sends a call and returns the JSON result (JSON-RPC `result`, or the REST body).
    async fn unary_value(&self, call: Call) -> Result<(String, Value), A2aClientError> {
        let request = self.request(&call, "application/json, application/a2a+json");
        let url = call.url.to_string();
        let read = async {
            let response = self.send(request, &call.url).await?;
            let status = response.status();
            let body = read_body(&call.url, response).await?;
            Ok::<_, A2aClientError>((status, body))
        };
        let (status, body) = match tokio::time::timeout(self.options.request_timeout, read).await {
            Ok(outcome) => outcome?,
            Err(_) => return Err(A2aClientError::Timeout { url }),
        };
        let version = call.bound.version;
        let value = match call.bound.binding {
            Binding::JsonRpc => rpc_result_in(version, &url, status, &body, call.rpc_id.as_ref())?,
            // No `Call` is made for gRPC (`call_on` refuses it).
            Binding::HttpJson | Binding::Grpc => {
                if !status.is_success() {
                    return Err(rest_error_in(version, &url, status, &body));
                }
                serde_json::from_slice(&body).map_err(|error| A2aClientError::InvalidResponse {
                    url: url.clone(),
                    reason: format!("not JSON: {error}"),
                })?
            }
        };
        Ok((url, value))
    }

    async fn open_subscription(
        &self,
        bound: Arc<Bound>,
        id: &str,
        last_event_id: Option<&str>,
    ) -> Result<Connection, A2aClientError> {
        if bound.version == ProtocolVersion::V0_3 {
            return self.open_stream(self.subscribe_call_v03(bound, id)?, last_event_id).await;
        }
        let mut request = SubscribeToTaskRequest { tenant: None, id: id.to_owned() };
        fill_tenant(&bound, &mut request.tenant);
        if bound.binding == Binding::Grpc {
            // gRPC events have no ids: the server starts with the task's snapshot.
            return self.grpc_open_stream(bound, StreamCall::Subscribe(request)).await;
        }
        let action = format!("{id}:subscribe");
        let http_json = bound.binding == Binding::HttpJson;
        let mut call = self.call_on(
            Arc::clone(&bound),
            methods::SUBSCRIBE_TO_TASK,
            Method::POST,
            &["tasks", &action],
            &[],
            to_value(&request)?,
        )?;
        if http_json {
            // No body, as the TCK and the SDK clients send it.
            call.body = None;
        }
        match self.open_stream(call, last_event_id).await {
            // The proto routes subscribe as GET; the spec as POST. Try GET when POST is refused.
            Err(A2aClientError::Status { status: 405, url, .. }) if http_json => {
                let url = Url::parse(&url)
                    .map_err(|error| A2aClientError::InvalidUrl { url: url.clone(), reason: error.to_string() })?;
                self.open_stream(Call { method: Method::GET, url, body: None, rpc_id: None, bound }, last_event_id)
                    .await
            }
            other => other,
        }
    }

    /// Sends a streaming call and checks the answer is an event stream (an error before the
    /// first event comes back as a plain error body).
    async fn open_stream(&self, call: Call, last_event_id: Option<&str>) -> Result<Connection, A2aClientError> {
        let mut request = self.request(&call, "text/event-stream");
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        let response = self.send(request, &call.url).await?;
        let status = response.status();
        let is_sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.trim_start().to_ascii_lowercase().starts_with("text/event-stream"));
        let url = call.url.to_string();
        if !(status.is_success() && is_sse) {
            let body = read_body(&call.url, response).await?;
            let version = call.bound.version;
            return Err(match call.bound.binding {
                Binding::JsonRpc => match rpc_result_in(version, &url, status, &body, call.rpc_id.as_ref()) {
                    Err(error) => error,
                    Ok(_) => A2aClientError::InvalidResponse {
                        url,
                        reason: "a JSON-RPC result where an event stream was expected".into(),
                    },
                },
                Binding::HttpJson | Binding::Grpc if !status.is_success() => {
                    rest_error_in(version, &url, status, &body)
                }
                Binding::HttpJson | Binding::Grpc => A2aClientError::InvalidResponse {
                    url,
                    reason: "a JSON body where an event stream was expected".into(),
                },
            });
        }
        let bytes = bounded_sse(response.bytes_stream());
        let events = bytes.eventsource().map(|item| {
            item.map(Frame::Sse).map_err(|error| match error {
                eventsource_stream::EventStreamError::Transport(BoundError { reason, oversized: true }) => {
                    StreamFault::Fatal(reason)
                }
                other => StreamFault::Dropped(other.to_string()),
            })
        });
        Ok(Connection { url, rpc_id: call.rpc_id, bound: call.bound, events: Box::pin(events) })
    }

    /// Turns a connection into the stream of events, with the reconnection policy of the module
    /// documentation.
    fn follow(&self, connection: Connection, task_id: Option<String>, last_event_id: Option<String>) -> A2aEventStream {
        let bound = Arc::clone(&connection.bound);
        let state = Follow {
            client: self.clone(),
            bound,
            connection: Some(connection),
            task_id,
            last_event_id,
            attempts: 0,
            settled: false,
            done: false,
            last_reason: String::new(),
        };
        Box::pin(futures_util::stream::unfold(state, |mut state| async move {
            let item = state.next().await?;
            Some((item, state))
        }))
    }
}

/// Copies the interface's tenant into a request's `tenant` when it has none.
fn fill_tenant(bound: &Bound, tenant: &mut Option<String>) {
    if tenant.is_none() {
        *tenant = bound.interface.tenant.clone().filter(|tenant| !tenant.is_empty());
    }
}

/// An open event stream.
struct Connection {
    url: String,
    rpc_id: Option<Value>,
    bound: Arc<Bound>,
    events: Pin<Box<dyn Stream<Item = Result<Frame, StreamFault>> + Send>>,
}

/// One item of a connection.
enum Frame {
    /// An SSE event (JSON-RPC and HTTP+JSON), read by the binding's parser.
    Sse(eventsource_stream::Event),
    /// A gRPC message, already converted; gRPC events have no id.
    Decoded(Box<StreamResponse>),
}

/// Why a connection's events stopped.
enum StreamFault {
    /// The connection failed: worth reconnecting.
    Dropped(String),
    /// The peer sent something no reconnection will fix (an event over the size limit).
    Fatal(String),
    /// The peer answered with an error, or an event that cannot be read: yielded as is.
    Failed(A2aClientError),
}

/// The state of a followed stream.
struct Follow {
    client: A2aClient,
    /// The interface and version the stream speaks (its reconnections too).
    bound: Arc<Bound>,
    connection: Option<Connection>,
    task_id: Option<String>,
    last_event_id: Option<String>,
    /// Reconnections made since the last event.
    attempts: u32,
    /// The task reached a terminal or interrupted state (or a message came): the stream may end.
    settled: bool,
    done: bool,
    last_reason: String,
}

impl Follow {
    async fn next(&mut self) -> Option<Result<A2aEvent, A2aClientError>> {
        loop {
            if self.done {
                return None;
            }
            let Some(connection) = self.connection.as_mut() else {
                if self.settled {
                    self.done = true;
                    return None;
                }
                match self.reconnect().await {
                    Ok(()) => continue,
                    Err(error) => {
                        self.done = true;
                        return Some(Err(error));
                    }
                }
            };
            // Once the task settled, only a final snapshot may still come (§11.7): wait briefly.
            let idle = if self.settled {
                self.client.options.stream_idle_timeout.min(SETTLED_GRACE)
            } else {
                self.client.options.stream_idle_timeout
            };
            let url = connection.url.clone();
            let next = tokio::time::timeout(idle, connection.events.next()).await;
            let event = match next {
                Err(_) => {
                    self.last_reason = "the stream stalled".into();
                    self.connection = None;
                    continue;
                }
                Ok(None) => {
                    self.last_reason = "the server closed the stream before the task settled".into();
                    self.connection = None;
                    continue;
                }
                Ok(Some(Err(StreamFault::Dropped(reason)))) => {
                    self.last_reason = reason;
                    self.connection = None;
                    continue;
                }
                Ok(Some(Err(StreamFault::Fatal(reason)))) => {
                    self.done = true;
                    self.connection = None;
                    return Some(Err(A2aClientError::InvalidResponse { url, reason }));
                }
                Ok(Some(Err(StreamFault::Failed(error)))) => {
                    self.done = true;
                    self.connection = None;
                    return Some(Err(error));
                }
                Ok(Some(Ok(Frame::Decoded(response)))) => {
                    self.attempts = 0;
                    return Some(Ok(self.seen(None, *response)));
                }
                Ok(Some(Ok(Frame::Sse(event)))) => event,
            };
            let parsed = match (self.bound.binding, self.bound.version) {
                (Binding::JsonRpc, ProtocolVersion::V1_0) => {
                    stream_rpc_item(&url, &event.data, connection.rpc_id.as_ref())
                }
                (Binding::HttpJson, ProtocolVersion::V1_0) => stream_rest_item(&url, &event.event, &event.data),
                (Binding::JsonRpc, ProtocolVersion::V0_3) => {
                    v03::stream_rpc_item(&url, &event.data, connection.rpc_id.as_ref())
                }
                (Binding::HttpJson, ProtocolVersion::V0_3) => v03::stream_rest_item(&url, &event.event, &event.data),
                (Binding::Grpc, _) => {
                    Err(A2aClientError::InvalidResponse { url, reason: "an SSE event on a gRPC stream".into() })
                }
            };
            let response = match parsed {
                Ok(response) => response,
                Err(error) => {
                    self.done = true;
                    self.connection = None;
                    return Some(Err(error));
                }
            };
            self.attempts = 0;
            let id = (!event.id.is_empty()).then_some(event.id);
            return Some(Ok(self.seen(id, response)));
        }
    }

    /// Notes an event received (its id, its task, whether it settles the task).
    fn seen(&mut self, id: Option<String>, response: StreamResponse) -> A2aEvent {
        if id.is_some() {
            self.last_event_id.clone_from(&id);
        }
        if self.task_id.is_none() {
            self.task_id = task_id_of(&response).map(str::to_owned);
        }
        if settles(&response) {
            self.settled = true;
        }
        A2aEvent { id, response }
    }

    async fn reconnect(&mut self) -> Result<(), A2aClientError> {
        let interrupted = |state: &Self, reason: String| A2aClientError::StreamInterrupted {
            task_id: state.task_id.clone(),
            last_event_id: state.last_event_id.clone(),
            attempts: state.attempts,
            reason,
        };
        let Some(task_id) = self.task_id.clone() else {
            return Err(interrupted(self, format!("{}, and no task id is known to resubscribe", self.last_reason)));
        };
        loop {
            if self.attempts >= self.client.options.max_reconnects {
                return Err(interrupted(self, self.last_reason.clone()));
            }
            self.attempts += 1;
            tokio::time::sleep(self.client.options.reconnect_delay).await;
            let bound = Arc::clone(&self.bound);
            match self.client.open_subscription(bound, &task_id, self.last_event_id.as_deref()).await {
                Ok(connection) => {
                    self.connection = Some(connection);
                    return Ok(());
                }
                Err(error) if error.is_retryable() => self.last_reason = error.to_string(),
                Err(error) => return Err(error),
            }
        }
    }
}

/// A terminal or interrupted state, or a direct message: nothing follows.
pub(crate) fn settles(response: &StreamResponse) -> bool {
    let state = match response {
        StreamResponse::Message(_) => return true,
        StreamResponse::Task(task) => task.status.state,
        StreamResponse::StatusUpdate(update) => update.status.state,
        StreamResponse::ArtifactUpdate(_) => return false,
    };
    state.is_terminal() || state.is_interrupted()
}

pub(crate) fn task_id_of(response: &StreamResponse) -> Option<&str> {
    match response {
        StreamResponse::Task(task) => Some(&task.id),
        StreamResponse::Message(message) => message.task_id.as_deref(),
        StreamResponse::StatusUpdate(update) => Some(&update.task_id),
        StreamResponse::ArtifactUpdate(update) => Some(&update.task_id),
    }
}

/// One SSE `data` of the JSON-RPC binding: a JSON-RPC response carrying a `StreamResponse`.
pub(crate) fn stream_rpc_item(url: &str, data: &str, rpc_id: Option<&Value>) -> Result<StreamResponse, A2aClientError> {
    let value = rpc_result(url, StatusCode::OK, data.as_bytes(), rpc_id)?;
    serde_json::from_value(value).map_err(|error| A2aClientError::InvalidResponse {
        url: url.to_owned(),
        reason: format!("stream event: {error}"),
    })
}

/// One SSE event of the HTTP+JSON binding: a bare `StreamResponse`, or (SDK behaviour, not spec)
/// an `event: error` frame carrying a `google.rpc.Status` body.
pub(crate) fn stream_rest_item(url: &str, event: &str, data: &str) -> Result<StreamResponse, A2aClientError> {
    let invalid = |reason: String| A2aClientError::InvalidResponse { url: url.to_owned(), reason };
    let value: Value =
        serde_json::from_str(data).map_err(|error| invalid(format!("stream event is not JSON: {error}")))?;
    if event == "error" || value.get("error").is_some_and(Value::is_object) {
        let body: RestErrorBody =
            serde_json::from_value(value).map_err(|error| invalid(format!("stream error event: {error}")))?;
        let status = body.error.code;
        return Err(match A2aError::from_rest_body(&body) {
            Some(error) => A2aClientError::A2a { http_status: Some(status), error },
            None => A2aClientError::Status { url: url.to_owned(), status, body: excerpt(data.as_bytes()) },
        });
    }
    serde_json::from_value(value).map_err(|error| invalid(format!("stream event: {error}")))
}

/// Reads a JSON-RPC response body: its `result`, or the error it carries. The envelope checks
/// (version, exactly one of result and error, the id echo) are [`jsonrpc::Response`]'s.
fn rpc_result(url: &str, status: StatusCode, body: &[u8], rpc_id: Option<&Value>) -> Result<Value, A2aClientError> {
    let invalid =
        |error: ResponseError| A2aClientError::InvalidResponse { url: url.to_owned(), reason: error.to_string() };
    let response = match jsonrpc::Response::<Value>::parse(body) {
        Ok(response) => response,
        // A well-formed response of another version is refused as such, whatever the status.
        Err(error @ ResponseError::Version(_)) => return Err(invalid(error)),
        Err(_) if !status.is_success() => {
            return Err(A2aClientError::Status { url: url.to_owned(), status: status.as_u16(), body: excerpt(body) });
        }
        Err(error) => return Err(invalid(error)),
    };
    if let Some(id) = rpc_id {
        response.check_id(id).map_err(invalid)?;
    }
    response.into_result().map_err(|error| match A2aError::from_jsonrpc_error(&error) {
        Some(a2a) => A2aClientError::A2a { http_status: None, error: a2a },
        None => A2aClientError::JsonRpc { error },
    })
}

/// [`rpc_result`] for a peer speaking `version` (0.3 errors have their own `data`).
fn rpc_result_in(
    version: ProtocolVersion,
    url: &str,
    status: StatusCode,
    body: &[u8],
    rpc_id: Option<&Value>,
) -> Result<Value, A2aClientError> {
    match version {
        ProtocolVersion::V1_0 => rpc_result(url, status, body, rpc_id),
        ProtocolVersion::V0_3 => v03::rpc_result(url, status, body, rpc_id),
    }
}

/// [`rest_error`] for a peer speaking `version`.
fn rest_error_in(version: ProtocolVersion, url: &str, status: StatusCode, body: &[u8]) -> A2aClientError {
    match version {
        ProtocolVersion::V1_0 => rest_error(url, status, body),
        ProtocolVersion::V0_3 => v03::rest_error(url, status, body),
    }
}

/// Reads a REST error: the A2A error of its `google.rpc.Status` body, else the status and body.
fn rest_error(url: &str, status: StatusCode, body: &[u8]) -> A2aClientError {
    let a2a = serde_json::from_slice::<RestErrorBody>(body).ok().and_then(|body| A2aError::from_rest_body(&body));
    match a2a {
        Some(error) => A2aClientError::A2a { http_status: Some(status.as_u16()), error },
        None => A2aClientError::Status { url: url.to_owned(), status: status.as_u16(), body: excerpt(body) },
    }
}

fn http_client(options: &A2aClientOptions) -> Result<reqwest::Client, A2aClientError> {
    match &options.http {
        Some(http) => Ok(http.clone()),
        None => reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(A2aClientError::HttpClient),
    }
}

fn card_url(url: &str) -> Result<Url, A2aClientError> {
    let parsed = Url::parse(url)
        .map_err(|error| A2aClientError::InvalidUrl { url: url.to_owned(), reason: error.to_string() })?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.cannot_be_a_base() {
        return Err(A2aClientError::InvalidUrl {
            url: url.to_owned(),
            reason: "only http and https are supported".into(),
        });
    }
    if parsed.path().ends_with(".json") {
        return Ok(parsed);
    }
    let mut base = parsed;
    base.set_query(None);
    base.set_fragment(None);
    let path = format!("{}{}", base.path().trim_end_matches('/'), WELL_KNOWN_AGENT_CARD_PATH);
    base.set_path(&path);
    Ok(base)
}

fn to_value(value: &impl Serialize) -> Result<Value, A2aClientError> {
    serde_json::to_value(value)
        .map_err(|error| A2aClientError::InvalidResponse { url: String::new(), reason: format!("request: {error}") })
}

fn transport(url: &Url, source: reqwest::Error) -> A2aClientError {
    A2aClientError::Transport { url: url.to_string(), source }
}

/// Reads a body, refusing more than [`MAX_RESPONSE_BYTES`].
async fn read_body(url: &Url, response: reqwest::Response) -> Result<Vec<u8>, A2aClientError> {
    let too_large = || A2aClientError::InvalidResponse {
        url: url.to_string(),
        reason: format!("the response exceeds {MAX_RESPONSE_BYTES} bytes"),
    };
    if response.content_length().is_some_and(|length| length > MAX_RESPONSE_BYTES as u64) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|source| transport(url, source))?;
        if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The byte stream of an SSE response, failing once a single event grows past
/// [`MAX_RESPONSE_BYTES`] (the parser would otherwise buffer without bound).
pub(crate) fn bounded_sse<B: AsRef<[u8]> + Send + 'static>(
    bytes: impl Stream<Item = Result<B, reqwest::Error>> + Send + 'static,
) -> impl Stream<Item = Result<B, BoundError>> + Send + 'static {
    let mut pending = 0usize;
    // Whether the bytes since the last line feed are empty (a `\r` aside): a line feed then
    // ends an event.
    let mut at_line_start = false;
    bytes.map(move |chunk| {
        let chunk = chunk.map_err(|error| BoundError { reason: error.to_string(), oversized: false })?;
        let data = chunk.as_ref();
        let mut last_boundary = None;
        for (index, byte) in data.iter().enumerate() {
            match byte {
                b'\n' => {
                    if at_line_start {
                        last_boundary = Some(index);
                    }
                    at_line_start = true;
                }
                b'\r' => {}
                _ => at_line_start = false,
            }
        }
        pending = match last_boundary {
            Some(index) => data.len() - index - 1,
            None => pending + data.len(),
        };
        if pending > MAX_RESPONSE_BYTES {
            return Err(BoundError {
                reason: format!("a stream event exceeds {MAX_RESPONSE_BYTES} bytes"),
                oversized: true,
            });
        }
        Ok(chunk)
    })
}

/// Why the SSE byte stream stopped.
#[derive(Debug)]
pub(crate) struct BoundError {
    reason: String,
    /// An event outgrew [`MAX_RESPONSE_BYTES`] (rather than the connection failing).
    oversized: bool,
}

impl std::fmt::Display for BoundError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for BoundError {}

/// The start of a body, as text, for error messages.
fn excerpt(body: &[u8]) -> String {
    const LIMIT: usize = 64 * 1024;
    let text = String::from_utf8_lossy(&body[..body.len().min(LIMIT)]).into_owned();
    if body.len() > LIMIT { format!("{text}…") } else { text }
}

fn random_hex() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No randomness: fall back on the clock, which is unique enough for request ids.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| elapsed.as_nanos())
            .unwrap_or_default();
        return format!("{nanos:032x}");
    }
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn card(interfaces: Value) -> Value {
        json!({
            "name": "peer", "description": "a peer", "version": "1.0.0", "capabilities": {"streaming": true},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "echo", "name": "echo", "description": "echo", "tags": ["echo"]}],
            "supportedInterfaces": interfaces,
        })
    }

    fn prefer(bindings: &[&str]) -> Vec<String> {
        bindings.iter().map(|binding| (*binding).to_owned()).collect()
    }

    #[test]
    fn the_first_preferred_binding_at_version_1_0_wins_and_custom_ones_are_skipped() {
        let card = parse_card(card(json!([
            {"url": "http://h/", "protocolBinding": "urn:accord:binding:lucid-http"},
            {"url": "http://h/rpc-03", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
            {"url": "http://h/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0", "tenant": "t1"},
            {"url": "http://h/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": "h:1", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
        ])))
        .expect("a malformed custom entry is dropped");
        assert_eq!(card.supported_interfaces.len(), 4);
        let (binding, interface) = choose_interface(&card, &prefer(&DEFAULT_BINDINGS)).expect("interface");
        assert_eq!((binding, interface.url.as_str()), (Binding::JsonRpc, "http://h/rpc"));
        let (binding, interface) = choose_interface(&card, &prefer(&["urn:x", "HTTP+JSON"])).expect("interface");
        assert_eq!((binding, interface.tenant.as_deref()), (Binding::HttpJson, Some("t1")));
        let (binding, interface) = choose_interface(&card, &prefer(&["GRPC", "JSONRPC"])).expect("interface");
        assert_eq!((binding, interface.url.as_str()), (Binding::Grpc, "h:1"), "gRPC first when asked");
        let grpc_only = parse_card(card_with(json!([
            {"url": "h:2", "protocolBinding": "GRPC", "protocolVersion": "0.3"},
            {"url": "h:1", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
        ])))
        .expect("card");
        let (binding, interface) = choose_interface(&grpc_only, &prefer(&DEFAULT_BINDINGS)).expect("by default");
        assert_eq!((binding, interface.url.as_str()), (Binding::Grpc, "h:1"));
        assert_eq!(choose_interface_v03(&grpc_only, &prefer(&DEFAULT_BINDINGS), None), None, "no 0.3 gRPC");
        let client = A2aClient::from_card(grpc_only, A2aClientOptions::default()).expect("client");
        assert_eq!((client.binding(), client.protocol_version()), (Binding::Grpc, ProtocolVersion::V1_0));
        assert!(client.fallback.is_none(), "no 0.3 fallback on gRPC");
        assert_eq!(client.primary.endpoint.as_str(), "http://h:1/");
        let only_03 = parse_card(card_with(
            json!([{"url": "http://h/", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}]),
        ))
        .expect("card");
        let error = choose_interface(&only_03, &prefer(&DEFAULT_BINDINGS)).expect_err("0.3 only");
        assert!(matches!(&error, A2aClientError::NoCompatibleInterface { offered, .. } if offered == &["JSONRPC@0.3"]));
        let v11 = parse_card(card_with(
            json!([{"url": "http://h/", "protocolBinding": "JSONRPC", "protocolVersion": "1.1"}]),
        ))
        .expect("card");
        assert!(choose_interface(&v11, &prefer(&DEFAULT_BINDINGS)).is_ok(), "another 1.x when no 1.0");
        let lowercase = parse_card(card_with(
            json!([{"url": "http://h/", "protocolBinding": "jsonrpc", "protocolVersion": "1.0"}]),
        ))
        .expect("card");
        assert!(choose_interface(&lowercase, &prefer(&DEFAULT_BINDINGS)).is_err(), "bindings match exactly");
    }

    fn card_with(interfaces: Value) -> Value {
        card(interfaces)
    }

    #[test]
    fn a_card_is_strict_where_it_matters() {
        let broken_jsonrpc = card(json!([{"url": "http://h/", "protocolBinding": "JSONRPC"}]));
        assert!(parse_card(broken_jsonrpc).is_err(), "a spoken binding must be well-formed");
        let mut no_name = card(json!([{"url": "http://h/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]));
        no_name.as_object_mut().map(|card| card.remove("name"));
        assert!(parse_card(no_name).is_err());
        let error = A2aClient::from_card(
            parse_card(card(json!([{"url": "http://h/", "protocolBinding": "urn:x", "protocolVersion": "1.0"}])))
                .expect("card"),
            A2aClientOptions::default(),
        )
        .expect_err("no interface");
        assert!(error.to_string().contains("no compatible interface"), "{error}");
        let error = A2aClient::from_card(
            parse_card(card(json!([{"url": "ftp://h/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}])))
                .expect("card"),
            A2aClientOptions::default(),
        )
        .expect_err("bad URL");
        assert!(matches!(error, A2aClientError::InvalidUrl { .. }));
    }

    #[test]
    fn card_urls() {
        assert_eq!(card_url("http://h:1").expect("url").as_str(), "http://h:1/.well-known/agent-card.json");
        assert_eq!(card_url("http://h:1/base/").expect("url").as_str(), "http://h:1/base/.well-known/agent-card.json");
        assert_eq!(card_url("http://h/x/card.json").expect("url").as_str(), "http://h/x/card.json");
        assert!(card_url("file:///etc/passwd").is_err());
    }

    fn client(binding: &str, url: &str, tenant: Option<&str>) -> A2aClient {
        let mut interface = json!({"url": url, "protocolBinding": binding, "protocolVersion": "1.0"});
        if let Some(tenant) = tenant {
            interface["tenant"] = json!(tenant);
        }
        let card = parse_card(card(json!([interface]))).expect("card");
        A2aClient::from_card(card, A2aClientOptions::default()).expect("client")
    }

    #[test]
    fn rest_calls_follow_the_routes_under_the_tenant() {
        let rest = client("HTTP+JSON", "http://h/a2a/rest/", Some("acme"));
        let call = rest
            .call("GetTask", Method::GET, &["tasks", "t/1"], &[("historyLength", "2".into())], json!({}))
            .expect("call");
        assert_eq!(call.url.as_str(), "http://h/a2a/rest/acme/tasks/t%2F1?historyLength=2");
        assert!(call.body.is_none());
        let call = rest
            .call("SendMessage", Method::POST, &["message:send"], &[], json!({"tenant": "acme", "message": {}}))
            .expect("call");
        assert_eq!(call.url.as_str(), "http://h/a2a/rest/acme/message:send");
        assert_eq!(call.body, Some(json!({"message": {}})), "the tenant travels in the path");

        let rpc = client("JSONRPC", "http://h/a2a/jsonrpc", Some("acme"));
        let mut tenant = None;
        rpc.fill_tenant(&mut tenant);
        assert_eq!(tenant.as_deref(), Some("acme"));
        let call = rpc.call("GetTask", Method::GET, &["tasks", "x"], &[], json!({"id": "x"})).expect("call");
        assert_eq!((call.method, call.url.as_str()), (Method::POST, "http://h/a2a/jsonrpc"));
        let body = call.body.expect("body");
        assert_eq!((body["jsonrpc"].clone(), body["method"].clone()), (json!("2.0"), json!("GetTask")));
        assert_eq!(Some(&body["id"]), call.rpc_id.as_ref());
        let request = jsonrpc::Request::from_value(body).expect("a request the servers read");
        assert_eq!((request.method.as_str(), request.params), ("GetTask", Some(json!({"id": "x"}))));
    }

    #[test]
    fn jsonrpc_answers_are_checked_and_errors_typed() {
        let id = json!("abc");
        let ok = rpc_result("u", StatusCode::OK, br#"{"jsonrpc":"2.0","id":"abc","result":{"x":1}}"#, Some(&id));
        assert_eq!(ok.expect("result"), json!({"x": 1}));
        let wrong_id = rpc_result("u", StatusCode::OK, br#"{"jsonrpc":"2.0","id":"zzz","result":{}}"#, Some(&id));
        assert!(matches!(wrong_id, Err(A2aClientError::InvalidResponse { .. })));
        let not_json = rpc_result("u", StatusCode::OK, b"<html>", Some(&id));
        assert!(matches!(not_json, Err(A2aClientError::InvalidResponse { .. })));
        let http = rpc_result("u", StatusCode::BAD_GATEWAY, b"<html>", Some(&id));
        assert!(matches!(http, Err(A2aClientError::Status { status: 502, .. })));
        let not_found = rpc_result(
            "u",
            StatusCode::OK,
            br#"{"jsonrpc":"2.0","id":"abc","error":{"code":-32001,"message":"gone","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{"taskId":"t"}}]}}"#,
            Some(&id),
        )
        .expect_err("error");
        assert_eq!(not_found.kind(), Some(A2aErrorKind::TaskNotFound));
        let a2a = not_found.a2a_error().expect("a2a");
        assert_eq!((a2a.message.as_str(), a2a.metadata.get("taskId").map(String::as_str)), ("gone", Some("t")));
        let null_id = rpc_result(
            "u",
            StatusCode::OK,
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#,
            Some(&id),
        );
        assert_eq!(null_id.expect_err("error").kind(), Some(A2aErrorKind::JsonParse));
        let custom = rpc_result(
            "u",
            StatusCode::OK,
            br#"{"jsonrpc":"2.0","id":"abc","error":{"code":-31000,"message":"x"}}"#,
            Some(&id),
        );
        assert!(matches!(custom, Err(A2aClientError::JsonRpc { error }) if error.code == -31000));
        for (status, body) in [
            (StatusCode::OK, r#"{"jsonrpc":"1.0","id":"abc","result":{}}"#),
            (StatusCode::BAD_GATEWAY, r#"{"jsonrpc":"1.0","id":"abc","result":{}}"#),
            (StatusCode::OK, r#"{"jsonrpc":"2.0","id":"abc","result":{},"error":{"code":1,"message":"x"}}"#),
            (StatusCode::OK, r#"{"jsonrpc":"2.0","id":"abc"}"#),
        ] {
            let read = rpc_result("u", status, body.as_bytes(), Some(&id));
            assert!(matches!(read, Err(A2aClientError::InvalidResponse { .. })), "{status} {body}");
        }
        let http = rpc_result("u", StatusCode::BAD_GATEWAY, br#"{"jsonrpc":"2.0","id":"abc"}"#, Some(&id));
        assert!(matches!(http, Err(A2aClientError::Status { status: 502, .. })), "no response: the status tells");
    }

    #[test]
    fn rest_errors_keep_status_reason_and_message() {
        let body = br#"{"error":{"code":400,"status":"FAILED_PRECONDITION","message":"done already","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_CANCELABLE","domain":"a2a-protocol.org"}]}}"#;
        let error = rest_error("u", StatusCode::BAD_REQUEST, body);
        assert_eq!((error.kind(), error.http_status()), (Some(A2aErrorKind::TaskNotCancelable), Some(400)));
        assert_eq!(error.a2a_error().map(|e| e.message.as_str()), Some("done already"));
        let plain = rest_error("u", StatusCode::NOT_FOUND, b"Not Found");
        assert!(matches!(plain, A2aClientError::Status { status: 404, ref body, .. } if body == "Not Found"));
        let streamed = stream_rest_item("u", "error", std::str::from_utf8(body).expect("utf8")).expect_err("error");
        assert_eq!(streamed.kind(), Some(A2aErrorKind::TaskNotCancelable));
        let update = stream_rest_item(
            "u",
            "message",
            r#"{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}"#,
        )
        .expect("update");
        assert!(!settles(&update));
        assert!(matches!(
            stream_rest_item("u", "", r#"{"kind":"status-update"}"#),
            Err(A2aClientError::InvalidResponse { .. })
        ));
    }

    #[test]
    fn jsonrpc_stream_items_carry_results_or_errors() {
        let id = json!(7);
        let done = stream_rpc_item(
            "u",
            r#"{"jsonrpc":"2.0","id":7,"result":{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}}"#,
            Some(&id),
        )
        .expect("item");
        assert!(settles(&done));
        assert_eq!(task_id_of(&done), Some("t"));
        let error =
            stream_rpc_item("u", r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32004,"message":"no"}}"#, Some(&id));
        assert_eq!(error.expect_err("error").kind(), Some(A2aErrorKind::UnsupportedOperation));
    }

    #[tokio::test]
    async fn one_oversized_event_stops_the_stream_but_many_small_ones_do_not() {
        let small = "data: x\n\n".repeat(1000);
        let chunks: Vec<Result<Vec<u8>, reqwest::Error>> = (0..2000).map(|_| Ok(small.as_bytes().to_vec())).collect();
        let total = bounded_sse(futures_util::stream::iter(chunks)).filter(|item| std::future::ready(item.is_err()));
        assert_eq!(total.count().await, 0, "18 MB in small events is fine");
        let big = vec![b'a'; 1024 * 1024];
        let chunks: Vec<Result<Vec<u8>, reqwest::Error>> = (0..9).map(|_| Ok(big.clone())).collect();
        let errors = bounded_sse(futures_util::stream::iter(chunks)).filter(|item| std::future::ready(item.is_err()));
        assert_eq!(errors.count().await, 1);
        let crlf: Vec<Result<Vec<u8>, reqwest::Error>> =
            (0..20).map(|_| Ok([vec![b'a'; 512 * 1024], b"\r\n\r\n".to_vec()].concat())).collect();
        let errors = bounded_sse(futures_util::stream::iter(crlf)).filter(|item| std::future::ready(item.is_err()));
        assert_eq!(errors.count().await, 0, "CRLF boundaries count");
    }

    #[tokio::test]
    async fn no_compatible_interface_makes_no_request() {
        // A card whose only interface is unreachable: the error must come before any connection.
        let card = parse_card(card(
            json!([{"url": "http://192.0.2.1/", "protocolBinding": "urn:x:binding", "protocolVersion": "1.0"}]),
        ))
        .expect("card");
        let started = std::time::Instant::now();
        let error = A2aClient::from_card(card, A2aClientOptions::default()).expect_err("none");
        assert!(matches!(error, A2aClientError::NoCompatibleInterface { .. }));
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn messages_get_fresh_ids() {
        let (first, second) = (user_text_message("a"), user_text_message("a"));
        assert_ne!(first.message_id, second.message_id);
        assert_eq!(first.message_id.len(), 32);
        assert_eq!(first.role, Role::User);
        assert_eq!(first.parts[0].as_text(), Some("a"));
        assert_eq!(major_minor("1.0"), Some((1, 0)));
        assert_eq!(major_minor("1"), Some((1, 0)));
        assert_eq!(major_minor("x"), None);
    }
}
