//! The load generator: `connections` keep-alive HTTP/1.1 connections (hyper's connection API over
//! tokio TCP streams, one task per connection), each sending one request after another for the
//! warm-up and then the measured window, checking every answer.
//!
//! An `https://` target is reached over TLS (rustls, the certificate verified against the
//! authority given with [`Target::discover_tls`]), with X25519 as its only key exchange and no
//! session resumption: with [`Config::new_connections`] every request then pays a full
//! handshake.
//!
//! A request counts in the window it was sent in. Only a right answer counts as throughput and
//! has its latency kept; a wrong answer, a failed task, a JSON-RPC error, a transport failure or a
//! timeout counts as an error (warm-up errors too) and the connection is opened anew after a
//! transport failure or a timeout.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};

use crate::check::{self, CheckError, DeltaCheck, StreamCheck};
use crate::sse;
use crate::stats::{self, Summary};

/// What the generator sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// A2A JSON-RPC `SendMessage`, blocking, one text part.
    A2aSend,
    /// A2A JSON-RPC `SendStreamingMessage`: one SSE stream per request, read to its end.
    A2aStream,
    /// Lucid `POST /entrypoints/echo/invoke`.
    LucidInvoke,
    /// Lucid `POST /tasks`, then `GET /tasks/{id}/subscribe` until it ends, then `GET /tasks/{id}`.
    LucidTask,
    /// A2A JSON-RPC `ListTasks`, first page of 50.
    List,
    /// A2A JSON-RPC `SendStreamingMessage` of a task that streams [`DELTAS`] text deltas (the
    /// Accord demo's `ticks` skill, [`Config::delta_interval_ms`] apart), read to its end; every
    /// delta's text is checked.
    A2aDeltas,
    /// `GET /health`, any server: the answer must be HTTP 200. No card is read
    /// ([`Target::locate`]).
    Health,
}

/// The skill the `a2a-send` and `a2a-stream` messages name by default: the echo skill of Accord's
/// demo agent and of the SDK echo servers.
pub const DEFAULT_SKILL_ID: &str = "echo";

/// The text deltas one `a2a-deltas` task streams.
pub const DELTAS: u64 = 1000;

/// The default pause between two deltas of an `a2a-deltas` task, in milliseconds: deltas as a
/// model streams tokens. With no pause at all, the official Rust SDK's server fails a stream of
/// more than about 50 chunks (its event queue overflows: JSON-RPC -32603), so it could not be
/// measured beside.
pub const DEFAULT_DELTA_INTERVAL_MS: u64 = 1;

impl Scenario {
    /// Every scenario, in report order.
    pub const ALL: [Self; 7] =
        [Self::A2aSend, Self::A2aStream, Self::LucidInvoke, Self::LucidTask, Self::List, Self::A2aDeltas, Self::Health];

    /// The scenario's name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::A2aSend => "a2a-send",
            Self::A2aStream => "a2a-stream",
            Self::LucidInvoke => "lucid-invoke",
            Self::LucidTask => "lucid-task",
            Self::List => "list",
            Self::A2aDeltas => "a2a-deltas",
            Self::Health => "health",
        }
    }

    /// What one operation is, for the rate's unit.
    pub fn unit(self) -> &'static str {
        match self {
            Self::A2aStream | Self::A2aDeltas => "streams/s",
            Self::LucidTask => "tasks/s",
            _ => "req/s",
        }
    }

    fn uses_jsonrpc(self) -> bool {
        matches!(self, Self::A2aSend | Self::A2aStream | Self::List | Self::A2aDeltas)
    }
}

impl FromStr for Scenario {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|scenario| scenario.name() == text.trim()).ok_or_else(|| {
            let names: Vec<&str> = Self::ALL.iter().map(|scenario| scenario.name()).collect();
            format!("unknown scenario {text:?}: one of {}", names.join(", "))
        })
    }
}

/// Where the requests go: one address, the `Host` to send, the Lucid base path and the A2A
/// JSON-RPC path found on the agent's card.
#[derive(Debug, Clone)]
pub struct Target {
    /// The server's socket address.
    pub addr: SocketAddr,
    /// TLS, for an `https://` URL.
    pub tls: Option<Tls>,
    /// The `Host` header.
    pub authority: String,
    /// The base path (empty, or `/x` with no trailing slash).
    pub base_path: String,
    /// The path of the card's `JSONRPC` interface, if it lists one.
    pub jsonrpc_path: Option<String>,
    /// The path of the card's `HTTP+JSON` interface, if it lists one.
    pub rest_path: Option<String>,
}

/// The path of an absolute or relative URL (`/` when it has none).
fn path_of(url: &str) -> Result<String, String> {
    let uri: http::Uri = url.parse().map_err(|error| format!("bad URL {url:?}: {error}"))?;
    let path = uri.path();
    Ok(if path.is_empty() { "/".to_owned() } else { path.to_owned() })
}

/// How an `https://` target is reached: the client configuration and the name its certificate
/// must hold.
#[derive(Clone)]
pub struct Tls {
    connector: tokio_rustls::TlsConnector,
    name: ServerName<'static>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls").field("name", &self.name).finish_non_exhaustive()
    }
}

impl Tls {
    /// A client that trusts the authorities of the PEM file `ca_file` and checks `host`: TLS 1.3
    /// and 1.2, X25519 only (the key exchange every peer of the harness offers first, so that
    /// servers are compared on the same one), ALPN `http/1.1`, no session resumption.
    fn new(ca_file: &Path, host: &str) -> Result<Self, String> {
        let mut roots = rustls::RootCertStore::empty();
        let authorities = CertificateDer::pem_file_iter(ca_file)
            .map_err(|error| format!("--ca-file {}: {error}", ca_file.display()))?;
        for authority in authorities {
            let authority = authority.map_err(|error| format!("--ca-file {}: {error}", ca_file.display()))?;
            roots.add(authority).map_err(|error| format!("--ca-file {}: {error}", ca_file.display()))?;
        }
        let mut provider = rustls::crypto::aws_lc_rs::default_provider();
        provider.kx_groups = vec![rustls::crypto::aws_lc_rs::kx_group::X25519];
        let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
            .with_safe_default_protocol_versions()
            .map_err(|error| error.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.resumption = rustls::client::Resumption::disabled();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let name = ServerName::try_from(host.trim_start_matches('[').trim_end_matches(']').to_owned())
            .map_err(|error| format!("{host}: not a name a certificate can hold: {error}"))?;
        Ok(Self { connector: tokio_rustls::TlsConnector::from(Arc::new(config)), name })
    }
}

impl Target {
    /// Reads the agent card at `url` (the server's base URL, `http://` only) and finds the
    /// `JSONRPC` interface on it.
    pub async fn discover(url: &str) -> Result<Self, String> {
        Self::discover_tls(url, None).await
    }

    /// [`Target::discover`], `https://` too: its certificate is verified against the
    /// authorities of `ca_file`.
    pub async fn discover_tls(url: &str, ca_file: Option<&Path>) -> Result<Self, String> {
        let mut target = Self::locate(url, ca_file).await?;
        let mut conn = Conn::connect(&target)
            .await
            .map_err(|error| format!("cannot connect to {}: {}", target.addr, error.error))?;
        let card_path = format!("{}/.well-known/agent-card.json", target.base_path);
        let request = target.request(Method::GET, &card_path, None, &[]).map_err(|error| error.error.to_string())?;
        let (status, body) = conn.exchange(request).await.map_err(|error| error.error.to_string())?;
        if status != StatusCode::OK {
            return Err(format!("{card_path}: HTTP {status}"));
        }
        let card: Value =
            serde_json::from_slice(&body).map_err(|_| format!("{card_path}: not JSON: {}", check::excerpt(&body)))?;
        let interfaces = card.get("supportedInterfaces").and_then(Value::as_array).cloned().unwrap_or_default();
        let interface = |binding: &str| {
            interfaces
                .iter()
                .find(|interface| interface.get("protocolBinding").and_then(Value::as_str) == Some(binding))
                .and_then(|interface| interface.get("url").and_then(Value::as_str))
        };
        target.jsonrpc_path = interface("JSONRPC").map(path_of).transpose()?;
        target.rest_path = interface("HTTP+JSON")
            .map(|url| Ok::<_, String>(path_of(url)?.trim_end_matches('/').to_owned()))
            .transpose()?;
        Ok(target)
    }

    /// The server at `url` (`http://`, or `https://` with `ca_file`), without reading a card:
    /// for scenarios any HTTP server answers ([`Scenario::Health`]).
    pub async fn locate(url: &str, ca_file: Option<&Path>) -> Result<Self, String> {
        let uri: http::Uri = url.parse().map_err(|error| format!("bad --url {url:?}: {error}"))?;
        let authority = uri.authority().ok_or_else(|| format!("--url {url:?} has no host"))?.clone();
        let (default_port, tls) = match (uri.scheme_str(), ca_file) {
            (Some("http"), _) => (80, None),
            (Some("https"), Some(ca_file)) => (443, Some(Tls::new(ca_file, authority.host())?)),
            (Some("https"), None) => return Err(format!("--url {url:?}: https:// needs --ca-file")),
            _ => return Err(format!("--url {url:?}: only http:// and https:// are supported")),
        };
        let port = authority.port_u16().unwrap_or(default_port);
        let addr = tokio::net::lookup_host((authority.host(), port))
            .await
            .map_err(|error| format!("cannot resolve {authority}: {error}"))?
            .next()
            .ok_or_else(|| format!("{authority} resolves to no address"))?;
        let base_path = uri.path().trim_end_matches('/').to_owned();
        Ok(Self { addr, tls, authority: authority.to_string(), base_path, jsonrpc_path: None, rest_path: None })
    }

    pub(crate) fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<String>,
        headers: &[(&str, &str)],
    ) -> Result<Request<Full<Bytes>>, OpError> {
        let mut builder = Request::builder().method(method).uri(path).header(http::header::HOST, &self.authority);
        if body.is_some() {
            builder = builder.header(http::header::CONTENT_TYPE, "application/json");
        }
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        // A path or header built from what the server sent (a task id, a token) may not be valid.
        builder.body(Full::new(body.map(Bytes::from).unwrap_or_default())).map_err(|error| OpError {
            error: CheckError::new("unusable answer", format!("cannot build the next request to {path:?}: {error}")),
            broken: false,
        })
    }
}

/// What failed, and whether the connection can carry another request.
#[derive(Debug)]
pub(crate) struct OpError {
    pub(crate) error: CheckError,
    pub(crate) broken: bool,
}

impl OpError {
    /// A wrong answer read to its end: the connection stays usable.
    pub(crate) fn answer(error: CheckError) -> Self {
        Self { error, broken: false }
    }

    pub(crate) fn transport(error: impl std::fmt::Display) -> Self {
        Self { error: CheckError::new("transport", error.to_string()), broken: true }
    }
}

/// One keep-alive HTTP/1.1 connection.
pub(crate) struct Conn {
    sender: SendRequest<Full<Bytes>>,
}

impl Conn {
    pub(crate) async fn open(addr: SocketAddr) -> Result<Self, OpError> {
        let stream = tokio::net::TcpStream::connect(addr).await.map_err(OpError::transport)?;
        stream.set_nodelay(true).map_err(OpError::transport)?;
        Self::over(stream).await
    }

    /// A connection to `target`, over TLS if it is `https://` (a full handshake: no resumption).
    pub(crate) async fn connect(target: &Target) -> Result<Self, OpError> {
        let Some(tls) = &target.tls else { return Self::open(target.addr).await };
        let stream = tokio::net::TcpStream::connect(target.addr).await.map_err(OpError::transport)?;
        stream.set_nodelay(true).map_err(OpError::transport)?;
        let stream = tls
            .connector
            .connect(tls.name.clone(), stream)
            .await
            .map_err(|error| OpError { error: CheckError::new("handshake", error.to_string()), broken: true })?;
        Self::over(stream).await
    }

    async fn over<T>(stream: T) -> Result<Self, OpError>
    where
        T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let (sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.map_err(OpError::transport)?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(Self { sender })
    }

    pub(crate) async fn send(&mut self, request: Request<Full<Bytes>>) -> Result<http::Response<Incoming>, OpError> {
        self.sender.ready().await.map_err(OpError::transport)?;
        self.sender.send_request(request).await.map_err(OpError::transport)
    }

    /// Sends and reads the whole answer.
    pub(crate) async fn exchange(&mut self, request: Request<Full<Bytes>>) -> Result<(StatusCode, Bytes), OpError> {
        let response = self.send(request).await?;
        let status = response.status();
        let body = response.into_body().collect().await.map_err(OpError::transport)?.to_bytes();
        Ok((status, body))
    }
}

/// Reads an SSE answer to its end, handing each event's data to `on_event`; returns the body's
/// length. A non-SSE answer is
/// read whole and reported (a JSON-RPC error, an HTTP error).
pub(crate) async fn read_events(
    response: http::Response<Incoming>,
    mut on_event: impl FnMut(&sse::Event) -> Result<(), CheckError>,
) -> Result<u64, OpError> {
    let status = response.status();
    let is_sse = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/event-stream"));
    let mut body = response.into_body();
    if status != StatusCode::OK || !is_sse {
        let bytes = body.collect().await.map_err(OpError::transport)?.to_bytes();
        if status != StatusCode::OK {
            return Err(OpError::answer(CheckError::new(format!("HTTP {}", status.as_u16()), check::excerpt(&bytes))));
        }
        let error = serde_json::from_slice::<Value>(&bytes)
            .ok()
            .and_then(|answer| check::jsonrpc_result(&answer).err())
            .unwrap_or_else(|| CheckError::new("not an event stream", check::excerpt(&bytes)));
        return Err(OpError::answer(error));
    }
    let mut parser = sse::Parser::new();
    let mut bytes = 0u64;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(OpError::transport)?;
        let Ok(data) = frame.into_data() else { continue };
        bytes += data.len() as u64;
        for event in parser.push(&data) {
            // The rest of the stream is not read: the connection cannot be reused.
            on_event(&event).map_err(|error| OpError { error, broken: true })?;
        }
    }
    Ok(bytes)
}

/// What the run shares between its connections.
struct Shared {
    target: Target,
    scenario: Scenario,
    measure_from: Instant,
    until: Instant,
    timeout: Duration,
    list_min_total: Option<u64>,
    delta_interval_ms: u64,
    nonce: String,
    /// Operations still to start, when the run is capped.
    budget: Option<std::sync::atomic::AtomicU64>,
    /// Each operation on a connection of its own.
    new_connections: bool,
    /// The `metadata.skillId` of the `a2a-send` and `a2a-stream` messages.
    skill_id: String,
}

impl Shared {
    fn jsonrpc_path(&self) -> &str {
        self.target.jsonrpc_path.as_deref().unwrap_or("/")
    }

    fn a2a_message(&self, method: &str, id: u64, token: &str) -> String {
        self.a2a_request(method, id, token, &self.skill_id, &json!({"text": token}))
    }

    /// A JSON-RPC request carrying one user message: a text part of `input` as JSON, for `skill`.
    fn a2a_request(&self, method: &str, id: u64, token: &str, skill: &str, input: &Value) -> String {
        json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": method,
            "params": {"message": {
                "messageId": format!("m-{token}"),
                "role": "ROLE_USER",
                "parts": [{"text": input.to_string()}],
                "metadata": {"skillId": skill},
            }},
        })
        .to_string()
    }

    /// One operation of the scenario; returns how many events and body bytes of streams it read
    /// (none outside streams).
    async fn operation(&self, conn: &mut Conn, id: u64, token: &str) -> Result<Read, OpError> {
        let a2a = [("a2a-version", "1.0")];
        match self.scenario {
            Scenario::A2aSend => {
                let body = self.a2a_message("SendMessage", id, token);
                let request = self.target.request(Method::POST, self.jsonrpc_path(), Some(body), &a2a)?;
                let (status, body) = conn.exchange(request).await?;
                check::a2a_send(status.as_u16(), &body, token).map_err(OpError::answer)?;
                Ok(Read::default())
            }
            Scenario::A2aStream => {
                let body = self.a2a_message("SendStreamingMessage", id, token);
                let headers = [("a2a-version", "1.0"), ("accept", "text/event-stream")];
                let request = self.target.request(Method::POST, self.jsonrpc_path(), Some(body), &headers)?;
                let response = conn.send(request).await?;
                let mut stream = StreamCheck::default();
                let bytes = read_events(response, |event| stream.event(&event.data, token)).await?;
                stream.finish().map_err(OpError::answer)?;
                Ok(Read { events: stream.events, bytes })
            }
            Scenario::A2aDeltas => {
                let input = json!({"count": DELTAS, "interval_ms": self.delta_interval_ms});
                let body = self.a2a_request("SendStreamingMessage", id, token, "ticks", &input);
                let headers = [("a2a-version", "1.0"), ("accept", "text/event-stream")];
                let request = self.target.request(Method::POST, self.jsonrpc_path(), Some(body), &headers)?;
                let response = conn.send(request).await?;
                let mut stream = DeltaCheck::default();
                let bytes = read_events(response, |event| stream.event(&event.data)).await?;
                stream.finish(DELTAS).map_err(OpError::answer)?;
                Ok(Read { events: stream.events, bytes })
            }
            Scenario::LucidInvoke => {
                let path = format!("{}/entrypoints/echo/invoke", self.target.base_path);
                let body = json!({"input": {"text": token}}).to_string();
                let (status, body) = conn.exchange(self.target.request(Method::POST, &path, Some(body), &[])?).await?;
                check::lucid_invoke(status.as_u16(), &body, token).map_err(OpError::answer)?;
                Ok(Read::default())
            }
            Scenario::LucidTask => self.lucid_task(conn, token).await,
            Scenario::Health => {
                let path = format!("{}/health", self.target.base_path);
                let close = [("connection", "close")];
                let headers: &[(&str, &str)] = if self.new_connections { &close } else { &[] };
                let (status, body) = conn.exchange(self.target.request(Method::GET, &path, None, headers)?).await?;
                if status != StatusCode::OK {
                    return Err(OpError::answer(CheckError::new(
                        format!("HTTP {}", status.as_u16()),
                        check::excerpt(&body),
                    )));
                }
                Ok(Read::default())
            }
            Scenario::List => {
                let body = json!({"jsonrpc": "2.0", "id": id, "method": "ListTasks", "params": {"pageSize": 50}});
                let request = self.target.request(Method::POST, self.jsonrpc_path(), Some(body.to_string()), &a2a)?;
                let (status, body) = conn.exchange(request).await?;
                check::a2a_list(status.as_u16(), &body, self.list_min_total).map_err(OpError::answer)?;
                Ok(Read::default())
            }
        }
    }

    /// Lucid task: create, wait on the task's update stream until it ends, read it.
    async fn lucid_task(&self, conn: &mut Conn, token: &str) -> Result<Read, OpError> {
        let base = &self.target.base_path;
        let body = json!({
            "skillId": "echo",
            "message": {"role": "user", "content": {"text": json!({"text": token}).to_string()}},
        });
        let request = self.target.request(Method::POST, &format!("{base}/tasks"), Some(body.to_string()), &[])?;
        let (status, body) = conn.exchange(request).await?;
        let capability = check::lucid_created(status.as_u16(), &body).map_err(OpError::answer)?;
        let access = [("task-access-token", capability.access_token.as_str())];
        if !check::lucid_terminal(&capability.status) {
            let path = format!("{base}/tasks/{}/subscribe", capability.task_id);
            let headers = [access[0], ("accept", "text/event-stream")];
            let response = conn.send(self.target.request(Method::GET, &path, None, &headers)?).await?;
            let mut ended = false;
            read_events(response, |event| {
                let update: Value = serde_json::from_str(&event.data)
                    .map_err(|_| CheckError::new("event not JSON", check::excerpt(event.data.as_bytes())))?;
                ended |= update.get("status").and_then(Value::as_str).is_some_and(check::lucid_terminal);
                Ok(())
            })
            .await?;
            if !ended {
                return Err(OpError::answer(CheckError::new("task stream ended early", capability.task_id)));
            }
        }
        let path = format!("{base}/tasks/{}", capability.task_id);
        let (status, body) = conn.exchange(self.target.request(Method::GET, &path, None, &access)?).await?;
        check::lucid_task(status.as_u16(), &body, &capability.task_id, token).map_err(OpError::answer)?;
        Ok(Read::default())
    }
}

/// What one operation read of streams.
#[derive(Debug, Default, Clone, Copy)]
struct Read {
    events: u64,
    bytes: u64,
}

/// What one connection counted.
#[derive(Debug, Default)]
struct Tally {
    latencies_us: Vec<u64>,
    ok: u64,
    errors: u64,
    warmup_ok: u64,
    warmup_errors: u64,
    events: u64,
    bytes: u64,
    kinds: BTreeMap<String, u64>,
    samples: Vec<String>,
}

/// How many error details a report keeps.
const SAMPLES: usize = 10;

impl Tally {
    fn error(&mut self, error: &CheckError, measured: bool) {
        if measured {
            self.errors += 1;
        } else {
            self.warmup_errors += 1;
        }
        *self.kinds.entry(error.kind.clone()).or_default() += 1;
        if self.samples.len() < SAMPLES {
            self.samples.push(error.to_string());
        }
    }

    fn merge(&mut self, other: Self) {
        self.latencies_us.extend(other.latencies_us);
        self.ok += other.ok;
        self.errors += other.errors;
        self.warmup_ok += other.warmup_ok;
        self.warmup_errors += other.warmup_errors;
        self.events += other.events;
        self.bytes += other.bytes;
        for (kind, count) in other.kinds {
            *self.kinds.entry(kind).or_default() += count;
        }
        for sample in other.samples {
            if self.samples.len() < SAMPLES {
                self.samples.push(sample);
            }
        }
    }
}

async fn connection(shared: Arc<Shared>, worker: usize) -> Tally {
    let mut tally = Tally::default();
    let mut conn: Option<Conn> = None;
    let mut sequence = 0u64;
    loop {
        let sent = Instant::now();
        if sent >= shared.until {
            break;
        }
        let measured = sent >= shared.measure_from;
        if let Some(budget) = &shared.budget {
            let taken = budget.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| left.checked_sub(1));
            if taken.is_err() {
                break;
            }
        }
        let open = match conn.take() {
            Some(open) => Ok(open),
            None => Conn::connect(&shared.target).await,
        };
        let mut open = match open {
            Ok(open) => open,
            Err(error) => {
                tally.error(&error.error, measured);
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        sequence += 1;
        let token = format!("{}-{worker}-{sequence}", shared.nonce);
        let outcome = tokio::time::timeout(shared.timeout, shared.operation(&mut open, sequence, &token)).await;
        let elapsed = sent.elapsed();
        match outcome {
            Ok(Ok(read)) => {
                if !shared.new_connections {
                    conn = Some(open);
                }
                if measured {
                    tally.ok += 1;
                    tally.events += read.events;
                    tally.bytes += read.bytes;
                    tally.latencies_us.push(u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX));
                } else {
                    tally.warmup_ok += 1;
                }
            }
            Ok(Err(error)) => {
                if !error.broken {
                    conn = Some(open);
                }
                tally.error(&error.error, measured);
            }
            Err(_) => {
                let error = CheckError::new("timeout", format!("no answer within {:?}", shared.timeout));
                tally.error(&error, measured);
            }
        }
    }
    tally
}

/// How a run is driven.
#[derive(Debug, Clone)]
pub struct Config {
    /// What to send.
    pub scenario: Scenario,
    /// Connections, each with one request in flight.
    pub connections: usize,
    /// The measured window.
    pub duration: Duration,
    /// Sent before the window, checked, not measured.
    pub warmup: Duration,
    /// The longest one operation may take.
    pub timeout: Duration,
    /// For `list`: the least `totalSize` a right answer has.
    pub list_min_total: Option<u64>,
    /// For `a2a-deltas`: milliseconds between two deltas of a task (as a model streams tokens).
    pub delta_interval_ms: u64,
    /// A server process whose CPU time (utime + stime from `/proc/PID/stat`) over the window is
    /// divided among the window's operations.
    pub server_pid: Option<u32>,
    /// Clock ticks per second of `/proc/PID/stat` (`getconf CLK_TCK`, 100 on Linux).
    pub clock_ticks: u64,
    /// Stop after starting this many operations (warm-up included), even before the window ends.
    pub max_operations: Option<u64>,
    /// Open a new connection for every operation (over TLS, a full handshake each).
    pub new_connections: bool,
    /// The `metadata.skillId` of the `a2a-send` and `a2a-stream` messages (`echo`): another for a
    /// server that fronts a remote agent's echo skill under a prefix.
    pub skill_id: String,
    /// A second process (the remote agent behind the server, say) whose CPU time over the window
    /// is divided among the window's operations too, reported apart.
    pub peer_pid: Option<u32>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            scenario: Scenario::A2aSend,
            connections: 16,
            duration: Duration::from_secs(10),
            warmup: Duration::from_secs(2),
            timeout: Duration::from_secs(30),
            list_min_total: None,
            delta_interval_ms: DEFAULT_DELTA_INTERVAL_MS,
            server_pid: None,
            clock_ticks: 100,
            max_operations: None,
            new_connections: false,
            skill_id: DEFAULT_SKILL_ID.to_owned(),
            peer_pid: None,
        }
    }
}

/// The result of a run.
#[derive(Debug, Clone)]
pub struct Report {
    /// The scenario.
    pub scenario: Scenario,
    /// Connections used.
    pub connections: usize,
    /// The measured window, in seconds.
    pub duration_s: f64,
    /// Right answers in the window.
    pub ok: u64,
    /// Wrong or failed answers in the window.
    pub errors: u64,
    /// Right answers during the warm-up.
    pub warmup_ok: u64,
    /// Wrong or failed answers during the warm-up (reported like the others).
    pub warmup_errors: u64,
    /// Right answers per second of the window.
    pub rate: f64,
    /// Stream events read in the window (`a2a-stream`, `a2a-deltas`).
    pub events: u64,
    /// Body bytes of the streams read in the window (`a2a-stream`, `a2a-deltas`).
    pub bytes: u64,
    /// Latency of the right answers.
    pub latency: Summary,
    /// Errors by kind (warm-up included).
    pub error_kinds: BTreeMap<String, u64>,
    /// The first few errors, in full.
    pub error_samples: Vec<String>,
    /// The server's CPU seconds over the window, when its pid was given.
    pub server_cpu_s: Option<f64>,
    /// This load generator's CPU seconds over the window: near the window's length, the
    /// generator and not the server sets the pace.
    pub generator_cpu_s: Option<f64>,
    /// The peer process's CPU seconds over the window, when its pid was given
    /// ([`Config::peer_pid`]).
    pub peer_cpu_s: Option<f64>,
}

impl Report {
    /// Every error, warm-up included.
    pub fn all_errors(&self) -> u64 {
        self.errors + self.warmup_errors
    }

    /// Events per second of the window.
    pub fn events_per_s(&self) -> f64 {
        if self.duration_s > 0.0 { self.events as f64 / self.duration_s } else { 0.0 }
    }

    /// The server's CPU microseconds per operation of the window.
    pub fn server_cpu_us_per_op(&self) -> Option<f64> {
        let operations = self.ok + self.errors;
        self.server_cpu_s.filter(|_| operations > 0).map(|seconds| seconds * 1e6 / operations as f64)
    }

    /// The peer process's CPU microseconds per operation of the window.
    pub fn peer_cpu_us_per_op(&self) -> Option<f64> {
        let operations = self.ok + self.errors;
        self.peer_cpu_s.filter(|_| operations > 0).map(|seconds| seconds * 1e6 / operations as f64)
    }

    /// Text deltas the window's right answers carried (`a2a-deltas`).
    fn deltas(&self) -> u64 {
        if self.scenario == Scenario::A2aDeltas { self.ok * DELTAS } else { 0 }
    }

    /// The server's CPU microseconds per text delta streamed (`a2a-deltas`).
    pub fn server_cpu_us_per_delta(&self) -> Option<f64> {
        let deltas = self.deltas();
        self.server_cpu_s.filter(|_| deltas > 0).map(|seconds| seconds * 1e6 / deltas as f64)
    }

    /// Stream body bytes per text delta (`a2a-deltas`): what the wire carries for one.
    pub fn bytes_per_delta(&self) -> Option<f64> {
        let deltas = self.deltas();
        (deltas > 0).then(|| self.bytes as f64 / deltas as f64)
    }

    /// The report as one JSON object.
    pub fn to_json(&self) -> Value {
        let mut report = json!({
            "scenario": self.scenario.name(),
            "unit": self.scenario.unit(),
            "connections": self.connections,
            "duration_s": self.duration_s,
            "ok": self.ok,
            "errors": self.all_errors(),
            "errors_in_window": self.errors,
            "warmup_ok": self.warmup_ok,
            "warmup_errors": self.warmup_errors,
            "rate": self.rate,
            "events": self.events,
            "events_per_s": self.events_per_s(),
            "bytes": self.bytes,
            "server_cpu_us_per_delta": self.server_cpu_us_per_delta(),
            "bytes_per_delta": self.bytes_per_delta(),
            "events_per_op": if self.ok > 0 { Some(self.events as f64 / self.ok as f64) } else { None },
            "p50_us": self.latency.p50_us,
            "p99_us": self.latency.p99_us,
            "max_us": self.latency.max_us,
            "mean_us": self.latency.mean_us,
            "server_cpu_s": self.server_cpu_s,
            "server_cpu_us_per_op": self.server_cpu_us_per_op(),
            "generator_cpu_s": self.generator_cpu_s,
            "error_kinds": self.error_kinds,
            "error_samples": self.error_samples,
        });
        // Only with a peer: the report of a run without one is as it was.
        if let (Some(seconds), Value::Object(fields)) = (self.peer_cpu_s, &mut report) {
            fields.insert("peer_cpu_s".to_owned(), json!(seconds));
            fields.insert("peer_cpu_us_per_op".to_owned(), json!(self.peer_cpu_us_per_op()));
        }
        report
    }

    /// The report as a few lines for a person.
    pub fn human(&self) -> String {
        let mut text = format!(
            "{}: {:.0} {} over {:.1}s on {} connections (ok {}, errors {}), p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            self.scenario.name(),
            self.rate,
            self.scenario.unit(),
            self.duration_s,
            self.connections,
            self.ok,
            self.all_errors(),
            self.latency.p50_us as f64 / 1000.0,
            self.latency.p99_us as f64 / 1000.0,
            self.latency.max_us as f64 / 1000.0,
        );
        if self.events > 0 {
            text.push_str(&format!(", {:.0} events/s", self.events_per_s()));
        }
        if let Some(bytes) = self.bytes_per_delta() {
            let events = self.events as f64 / self.ok.max(1) as f64;
            text.push_str(&format!(", {bytes:.1} bytes/delta, {events:.0} events a stream"));
        }
        if let Some(cpu) = self.server_cpu_us_per_op() {
            text.push_str(&format!(", server CPU {cpu:.0} µs/op"));
        }
        if let (Some(server), true) = (self.server_cpu_s, self.duration_s > 0.0) {
            text.push_str(&format!(", server busy {:.0}%", server * 100.0 / self.duration_s));
        }
        if let Some(cpu) = self.peer_cpu_us_per_op() {
            text.push_str(&format!(", peer CPU {cpu:.0} µs/op"));
        }
        if let (Some(generator), true) = (self.generator_cpu_s, self.duration_s > 0.0) {
            text.push_str(&format!(", load generator busy {:.0}%", generator * 100.0 / self.duration_s));
        }
        for (kind, count) in &self.error_kinds {
            text.push_str(&format!("\n  error {kind}: {count}"));
        }
        for sample in &self.error_samples {
            text.push_str(&format!("\n  e.g. {sample}"));
        }
        text
    }
}

/// utime + stime of a process, in clock ticks.
pub fn cpu_ticks(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: the fields start after the last `)`.
    let fields: Vec<&str> = text.rsplit_once(')')?.1.split_whitespace().collect();
    // Field 3 (state) is fields[0]; utime and stime are fields 14 and 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// Whether `target` can take `scenario` (A2A scenarios need a `JSONRPC` interface on the card).
pub fn supports(target: &Target, scenario: Scenario) -> bool {
    !scenario.uses_jsonrpc() || target.jsonrpc_path.is_some()
}

/// Runs the scenario against the target and reports.
pub async fn run(target: Target, config: &Config) -> Report {
    let started = Instant::now();
    let measure_from = started + config.warmup;
    let until = measure_from + config.duration;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |since| since.as_nanos());
    let shared = Arc::new(Shared {
        target,
        scenario: config.scenario,
        measure_from,
        until,
        timeout: config.timeout,
        list_min_total: config.list_min_total,
        delta_interval_ms: config.delta_interval_ms,
        nonce: format!("b{:x}{:x}", std::process::id(), nanos % 0x1_0000_0000),
        budget: config.max_operations.map(std::sync::atomic::AtomicU64::new),
        new_connections: config.new_connections,
        skill_id: config.skill_id.clone(),
    });
    // The server's CPU clock, this process's and the peer's, read when the window opens and when it closes.
    let server_pid = config.server_pid;
    let peer_pid = config.peer_pid;
    let ticks_per_second = config.clock_ticks.max(1) as f64;
    // A run capped by `max_operations` may end before `until`: then the window closes with it.
    let (finished, finished_rx) = tokio::sync::oneshot::channel::<()>();
    let clocks = tokio::spawn(async move {
        let read = || (server_pid.and_then(cpu_ticks), cpu_ticks(std::process::id()), peer_pid.and_then(cpu_ticks));
        tokio::time::sleep_until(measure_from.into()).await;
        let before = read();
        tokio::select! {
            () = tokio::time::sleep_until(until.into()) => {}
            _ = finished_rx => {}
        }
        let after = read();
        let seconds =
            |before: Option<u64>, after: Option<u64>| Some(after?.saturating_sub(before?) as f64 / ticks_per_second);
        (seconds(before.0, after.0), seconds(before.1, after.1), seconds(before.2, after.2))
    });
    let workers: Vec<_> =
        (0..config.connections.max(1)).map(|worker| tokio::spawn(connection(Arc::clone(&shared), worker))).collect();
    let mut tally = Tally::default();
    for worker in workers {
        match worker.await {
            Ok(counted) => tally.merge(counted),
            Err(error) => tally.error(&CheckError::new("worker panicked", error.to_string()), true),
        }
    }
    let ended = Instant::now().min(until);
    let _ = finished.send(());
    let (server_cpu_s, generator_cpu_s, peer_cpu_s) = clocks.await.unwrap_or((None, None, None));
    // The window's length: shorter than asked when the run was capped and ended early.
    let duration_s = ended.saturating_duration_since(measure_from).as_secs_f64();
    let latency = stats::summarize(std::mem::take(&mut tally.latencies_us));
    Report {
        scenario: config.scenario,
        connections: config.connections.max(1),
        duration_s,
        ok: tally.ok,
        errors: tally.errors,
        warmup_ok: tally.warmup_ok,
        warmup_errors: tally.warmup_errors,
        rate: if duration_s > 0.0 { tally.ok as f64 / duration_s } else { 0.0 },
        events: tally.events,
        bytes: tally.bytes,
        latency,
        error_kinds: tally.kinds,
        error_samples: tally.samples,
        server_cpu_s,
        generator_cpu_s,
        peer_cpu_s,
    }
}

/// Subscribers held open by [`hold_subscribers`].
#[derive(Debug, Clone, Default)]
pub struct Subscribers {
    /// Streams that delivered their first event and stayed open.
    pub open: usize,
    /// Streams that failed to open or to deliver a first event that is not an error.
    pub failed: usize,
    /// The first few failures.
    pub samples: Vec<String>,
    /// How long opening them all took, in seconds.
    pub open_s: f64,
}

/// How many subscriptions are being opened at once.
const OPENING_AT_ONCE: usize = 256;

/// Opens `count` A2A JSON-RPC `SubscribeToTask` streams on `task_id`, each on its own connection,
/// and waits for each one's first event (the task as it is). Calls `ready` once all are open or
/// failed, then keeps them open until `hold` has passed and closes them.
pub async fn hold_subscribers(
    target: Target,
    task_id: &str,
    count: usize,
    hold: Duration,
    ready: impl FnOnce(&Subscribers),
) -> Subscribers {
    let started = Instant::now();
    let target = Arc::new(target);
    let opening = Arc::new(tokio::sync::Semaphore::new(OPENING_AT_ONCE));
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel::<Result<(), CheckError>>();
    let (release_tx, release_rx) = tokio::sync::watch::channel(false);
    let mut streams = Vec::with_capacity(count);
    for index in 0..count {
        let (target, opening, done_tx, mut release_rx) =
            (Arc::clone(&target), Arc::clone(&opening), done_tx.clone(), release_rx.clone());
        let task_id = task_id.to_owned();
        streams.push(tokio::spawn(async move {
            let permit = opening.acquire_owned().await;
            let body = json!({"jsonrpc": "2.0", "id": index, "method": "SubscribeToTask", "params": {"id": task_id}});
            let path = target.jsonrpc_path.clone().unwrap_or_else(|| "/".to_owned());
            let headers = [("a2a-version", "1.0"), ("accept", "text/event-stream")];
            let opened = async {
                let mut conn = Conn::connect(&target).await.map_err(|error| error.error)?;
                let request = target
                    .request(Method::POST, &path, Some(body.to_string()), &headers)
                    .map_err(|error| error.error)?;
                let response = conn.send(request).await.map_err(|error| error.error)?;
                let status = response.status();
                let mut body = response.into_body();
                if status != StatusCode::OK {
                    let bytes = body.collect().await.map(|body| body.to_bytes()).unwrap_or_default();
                    return Err(CheckError::new(format!("HTTP {}", status.as_u16()), check::excerpt(&bytes)));
                }
                let mut parser = sse::Parser::new();
                loop {
                    let frame = body
                        .frame()
                        .await
                        .ok_or_else(|| CheckError::new("stream ended", "before its first event"))?
                        .map_err(|error| CheckError::new("transport", error.to_string()))?;
                    let Ok(data) = frame.into_data() else { continue };
                    if let Some(event) = parser.push(&data).into_iter().next() {
                        let answer: Value = serde_json::from_str(&event.data)
                            .map_err(|_| CheckError::new("event not JSON", check::excerpt(event.data.as_bytes())))?;
                        check::jsonrpc_result(&answer)?;
                        return Ok((conn, body));
                    }
                }
            }
            .await;
            drop(permit);
            match opened {
                Ok((conn, mut body)) => {
                    let _ = done_tx.send(Ok(()));
                    // Hold the stream (draining whatever else it sends) until released.
                    loop {
                        tokio::select! {
                            _ = release_rx.changed() => break,
                            frame = body.frame() => if frame.is_none() { break },
                        }
                    }
                    drop(conn);
                }
                Err(error) => {
                    let _ = done_tx.send(Err(error));
                }
            }
        }));
    }
    drop(done_tx);
    let mut held = Subscribers::default();
    while let Some(outcome) = done_rx.recv().await {
        match outcome {
            Ok(()) => held.open += 1,
            Err(error) => {
                held.failed += 1;
                if held.samples.len() < SAMPLES {
                    held.samples.push(error.to_string());
                }
            }
        }
        if held.open + held.failed == count {
            break;
        }
    }
    held.open_s = started.elapsed().as_secs_f64();
    ready(&held);
    tokio::time::sleep(hold).await;
    let _ = release_tx.send(true);
    for stream in streams {
        let _ = stream.await;
    }
    held
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_names_round_trip() {
        for scenario in Scenario::ALL {
            assert_eq!(scenario.name().parse::<Scenario>(), Ok(scenario));
        }
        assert!("a2a-sned".parse::<Scenario>().is_err());
    }

    #[test]
    fn cpu_ticks_of_this_process() {
        assert!(cpu_ticks(std::process::id()).is_some());
        assert_eq!(cpu_ticks(u32::MAX), None);
    }

    #[test]
    fn paths_of_interface_urls() {
        assert_eq!(path_of("http://127.0.0.1:1/a2a/jsonrpc"), Ok("/a2a/jsonrpc".to_owned()));
        assert_eq!(path_of("http://127.0.0.1:1"), Ok("/".to_owned()));
        assert_eq!(path_of("http://127.0.0.1:1/"), Ok("/".to_owned()));
    }

    #[test]
    fn errors_are_tallied_by_kind_with_samples() {
        let mut tally = Tally::default();
        tally.error(&CheckError::new("wrong echo", "x"), true);
        tally.error(&CheckError::new("wrong echo", "y"), false);
        let mut other = Tally::default();
        other.error(&CheckError::new("task TASK_STATE_FAILED", "z"), true);
        tally.merge(other);
        assert_eq!(tally.errors, 2);
        assert_eq!(tally.warmup_errors, 1);
        assert_eq!(tally.kinds.get("wrong echo"), Some(&2));
        assert_eq!(tally.samples.len(), 3);
    }
}
