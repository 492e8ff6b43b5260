//! The HTTP backend: a skill whose code is an HTTP endpoint. Each run sends one request — by
//! default a POST of the input JSON (or a resumed task's envelope); with a method and a URL path
//! template, the request an existing REST service expects (`GET /items/{id}?q=…`, `PUT
//! /items/{id}` with a JSON body) — and its JSON answer, or its NDJSON / server-sent-event
//! stream, becomes the run's outcome. The contract is `docs/backends.md`.
//!
//! This module owns the request, the reading of the answer within its limits, and the mapping of
//! what went wrong to the caller's mistake (a rejected run) or the skill's failure (a failed run).
//! It never puts a header value, the URL's credentials or its query in an error, a log line or a
//! `Debug` output.

use std::sync::Arc;
use std::time::Duration;

use accord_engine::{BoxFuture, Handler, Message, Outcome, Run, SkillError};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Response, StatusCode};
use serde_json::{Map, Value};
use tokio::time::Instant;
use url::Url;

use crate::contract::{self, Files, Lines, MAX_REASON_CHARS, SseEvents, StreamEvent, bounded, failure, invalid_answer};
use crate::gate::{self, Gate};
use crate::{BackendError, Secret};

/// Headers Accord sets on every request; a configuration may not set them.
pub const RESERVED_HEADERS: &[&str] = &[
    "accept",
    "content-type",
    "content-length",
    "host",
    "transfer-encoding",
    "connection",
    "accord-task-id",
    "accord-context-id",
    "accord-owner",
    "accord-skill",
    "accord-run-id",
    "accord-follow-up",
];

/// The HTTP method of a backend's request. `GET` and `DELETE` carry the input in the query
/// string; `POST`, `PUT` and `PATCH` as a JSON body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum HttpMethod {
    /// `GET`: the input's fields (beyond the path's) as the query string.
    Get,
    /// `POST` (the default): the input as the JSON body.
    #[default]
    Post,
    /// `PUT`: the input's fields (beyond the path's) as the JSON body.
    Put,
    /// `PATCH`: the input's fields (beyond the path's) as the JSON body.
    Patch,
    /// `DELETE`: the input's fields (beyond the path's) as the query string.
    Delete,
}

impl HttpMethod {
    /// The methods, in the order the messages list them.
    pub const ALL: [HttpMethod; 5] = [Self::Get, Self::Post, Self::Put, Self::Patch, Self::Delete];

    /// `GET`, `POST`, …
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "GET",
            Self::Post => "POST",
            Self::Put => "PUT",
            Self::Patch => "PATCH",
            Self::Delete => "DELETE",
        }
    }

    /// The method named `name` (any case).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|method| method.as_str().eq_ignore_ascii_case(name))
    }

    /// Whether the input travels in the query string rather than a body.
    fn has_query(self) -> bool {
        matches!(self, Self::Get | Self::Delete)
    }

    fn reqwest(self) -> reqwest::Method {
        match self {
            Self::Get => reqwest::Method::GET,
            Self::Post => reqwest::Method::POST,
            Self::Put => reqwest::Method::PUT,
            Self::Patch => reqwest::Method::PATCH,
            Self::Delete => reqwest::Method::DELETE,
        }
    }
}

impl std::fmt::Display for HttpMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One piece of a URL path template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    /// Path text as written (already percent-encoded as the URL parser left it).
    Literal(String),
    /// `{name}`: the input's field `name`, percent-encoded as a path segment.
    Variable(String),
}

/// A URL path with `{name}` variables.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PathTemplate {
    pieces: Vec<Piece>,
}

impl PathTemplate {
    fn variables(&self) -> impl Iterator<Item = &str> {
        self.pieces.iter().filter_map(|piece| match piece {
            Piece::Variable(name) => Some(name.as_str()),
            Piece::Literal(_) => None,
        })
    }

    /// The template as written: `/items/{id}`.
    fn shown(&self) -> String {
        self.pieces
            .iter()
            .map(|piece| match piece {
                Piece::Literal(text) => text.clone(),
                Piece::Variable(name) => format!("{{{name}}}"),
            })
            .collect()
    }
}

/// The text that stands for variable `index` while a template URL is parsed: letters and digits
/// only, so that the parser leaves it as it is.
fn marker(index: usize) -> String {
    format!("accordvariable{index}x")
}

/// How to reach an HTTP backend.
#[derive(Clone)]
pub struct HttpConfig {
    url: Url,
    method: HttpMethod,
    path: Option<PathTemplate>,
    headers: Vec<(HeaderName, Secret)>,
    timeout: Duration,
    concurrency: Option<usize>,
    max_answer_bytes: usize,
}

impl HttpConfig {
    /// The endpoint as a streamable-HTTP MCP server (its URL and headers count there).
    pub(crate) fn into_mcp(self) -> crate::mcp::McpTransport {
        let headers = self.headers.into_iter().map(|(name, value)| (name.as_str().to_owned(), value)).collect();
        crate::mcp::McpTransport::Http { url: self.url.to_string(), headers }
    }
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("HttpConfig")
            .field("url", &self.endpoint())
            .field("method", &self.method)
            .field("headers", &headers)
            .field("timeout", &self.timeout)
            .field("concurrency", &self.concurrency)
            .field("max_answer_bytes", &self.max_answer_bytes)
            .finish()
    }
}

/// `url` without credentials, query or fragment: what may appear in logs and `Debug`.
pub(crate) fn redacted(url: &Url) -> String {
    let mut shown = format!("{}://{}", url.scheme(), url.host_str().unwrap_or(""));
    if let Some(port) = url.port() {
        shown.push_str(&format!(":{port}"));
    }
    shown.push_str(url.path());
    if url.query().is_some() {
        shown.push_str("?<redacted>");
    }
    shown
}

impl HttpConfig {
    /// The default [`HttpConfig::timeout`]: 30 s.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
    /// The default [`HttpConfig::max_answer_bytes`]: 16 MiB.
    pub const DEFAULT_MAX_ANSWER_BYTES: usize = 16 << 20;

    /// A backend at `url`, with the defaults: 30 s timeout, no concurrency limit, 16 MiB answers.
    pub fn new(url: Url) -> Self {
        Self {
            url,
            method: HttpMethod::Post,
            path: None,
            headers: Vec::new(),
            timeout: Self::DEFAULT_TIMEOUT,
            concurrency: None,
            max_answer_bytes: Self::DEFAULT_MAX_ANSWER_BYTES,
        }
    }

    /// A backend at a URL whose path may hold `{name}` variables (`http://shop/items/{id}`), each
    /// filled at each run from the input's field `name`, percent-encoded as a path segment. A
    /// name is 1 to 64 characters of `[A-Za-z0-9_-]`; a variable may stand only in the path (not
    /// the host, the query or the fragment). Without variables it is [`HttpConfig::new`].
    pub fn from_template(template: &str) -> Result<Self, BackendError> {
        let mut text = String::with_capacity(template.len());
        let mut names: Vec<String> = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find(['{', '}']) {
            if rest[open..].starts_with('}') {
                return Err(BackendError::new("a `}` without its `{` (a path variable is written `{name}`)"));
            }
            text.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let Some(close) = after.find('}') else {
                return Err(BackendError::new("a `{` without its `}` (a path variable is written `{name}`)"));
            };
            let name = &after[..close];
            let valid = !name.is_empty()
                && name.len() <= 64
                && name.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-');
            if !valid {
                return Err(BackendError::new(format!(
                    "`{{{}}}` is not a path variable (a name is 1 to 64 characters of [A-Za-z0-9_-])",
                    bounded(name, 64)
                )));
            }
            if names.iter().any(|known| known == name) {
                return Err(BackendError::new(format!("the path variable `{{{name}}}` appears twice")));
            }
            text.push_str(&marker(names.len()));
            names.push(name.to_owned());
            rest = &after[close + 1..];
        }
        text.push_str(rest);
        let url = Url::parse(&text).map_err(|error| BackendError::new(format!("not a valid URL ({error})")))?;
        if names.is_empty() {
            return Ok(Self::new(url));
        }
        // Each marker must be found in the path, and nowhere else.
        let path = url.path().to_owned();
        let outside =
            [url.host_str().unwrap_or(""), url.username(), url.query().unwrap_or(""), url.fragment().unwrap_or("")];
        let mut pieces = Vec::new();
        let mut rest = path.as_str();
        for (index, name) in names.iter().enumerate() {
            let marker = marker(index);
            match rest.find(&marker) {
                Some(at) if !outside.iter().any(|part| part.contains(&marker)) => {
                    if at > 0 {
                        pieces.push(Piece::Literal(rest[..at].to_owned()));
                    }
                    pieces.push(Piece::Variable(name.clone()));
                    rest = &rest[at + marker.len()..];
                }
                _ => {
                    return Err(BackendError::new(format!(
                        "the variable `{{{name}}}` may stand only in the URL's path"
                    )));
                }
            }
        }
        if !rest.is_empty() {
            pieces.push(Piece::Literal(rest.to_owned()));
        }
        let mut config = Self::new(url);
        config.path = Some(PathTemplate { pieces });
        Ok(config)
    }

    /// The request's method (default `POST`).
    pub fn method(mut self, method: HttpMethod) -> Self {
        self.method = method;
        self
    }

    /// The method the requests use.
    pub fn http_method(&self) -> HttpMethod {
        self.method
    }

    /// The names of the URL path's `{name}` variables, in the order of the path (none for a
    /// fixed URL).
    pub fn path_variables(&self) -> Vec<&str> {
        self.path.as_ref().map(|path| path.variables().collect()).unwrap_or_default()
    }

    /// Adds a header sent with every request (its value never prints).
    pub fn header(mut self, name: HeaderName, value: impl Into<Secret>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// How long a run may wait: for the whole answer when it is JSON; for the answer's headers and
    /// then between two chunks of a stream.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The most runs that call the backend at once (`None`: no limit). Runs beyond it wait
    /// (cancellable) for a place.
    pub fn concurrency(mut self, limit: Option<usize>) -> Self {
        self.concurrency = gate::at_least_one(limit);
        self
    }

    /// The most bytes an answer may have, a stream's included; more fails the run.
    pub fn max_answer_bytes(mut self, bytes: usize) -> Self {
        self.max_answer_bytes = bytes;
        self
    }

    /// The endpoint without credentials, query or fragment (safe to show), with its path
    /// variables as written (`http://shop:3000/items/{id}`).
    pub fn endpoint(&self) -> String {
        match &self.path {
            None => redacted(&self.url),
            Some(path) => {
                let mut url = self.url.clone();
                url.set_path("");
                let base = redacted(&url);
                let base = base.strip_suffix("?<redacted>").unwrap_or(&base).trim_end_matches('/').to_owned();
                let query = if self.url.query().is_some() { "?<redacted>" } else { "" };
                format!("{base}{}{query}", path.shown())
            }
        }
    }
}

/// A skill handler that calls an HTTP backend (see [`HttpConfig`] and `docs/backends.md`).
///
/// Cheap to clone; clones share the client and the concurrency limit.
#[derive(Clone)]
pub struct HttpBackend {
    inner: Arc<Inner>,
}

struct Inner {
    config: HttpConfig,
    client: reqwest::Client,
    headers: HeaderMap,
    gate: Gate,
}

impl std::fmt::Debug for HttpBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpBackend").field("config", &self.inner.config).finish_non_exhaustive()
    }
}

impl HttpBackend {
    /// A handler for `config`. Fails when a header value cannot be sent or the HTTP client cannot
    /// be made.
    pub fn new(config: HttpConfig) -> Result<Self, BackendError> {
        let mut headers = HeaderMap::new();
        for (name, value) in &config.headers {
            let mut value = HeaderValue::from_str(value.expose())
                .map_err(|_| BackendError::new(format!("the value of header {name} is not a valid header value")))?;
            value.set_sensitive(true);
            headers.append(name.clone(), value);
        }
        let client = reqwest::Client::builder()
            // A redirect would resend the input (and the configured headers) somewhere else.
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(config.timeout)
            .build()
            .map_err(|_| BackendError::new("the HTTP client could not be created"))?;
        let gate = Gate::new(config.concurrency);
        Ok(Self { inner: Arc::new(Inner { config, client, headers, gate }) })
    }

    /// The configuration.
    pub fn config(&self) -> &HttpConfig {
        &self.inner.config
    }
}

impl Handler for HttpBackend {
    fn call(&self, run: Run) -> BoxFuture<Result<Outcome, SkillError>> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move { inner.run(run).await })
    }
}

/// How an answer is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Json,
    Ndjson,
    Sse,
}

fn framing(response: &Response) -> Framing {
    let content_type = response.headers().get(CONTENT_TYPE).and_then(|value| value.to_str().ok()).unwrap_or("");
    let essence = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    match essence.as_str() {
        "text/event-stream" => Framing::Sse,
        "application/x-ndjson" | "application/ndjson" | "application/jsonl" => Framing::Ndjson,
        _ => Framing::Json,
    }
}

/// Why reading a body stopped.
enum ReadFailure {
    Timeout,
    TooLarge,
    Transport(reqwest::Error),
}

impl Inner {
    async fn run(&self, run: Run) -> Result<Outcome, SkillError> {
        // Held until the run ends; a run waiting for a place still answers to cancellation.
        let _place = self.gate.enter(&run).await?;
        // Cancelling drops the request in flight, which closes its connection.
        tokio::select! {
            outcome = self.exchange(&run) => outcome,
            () = run.cancelled() => Err(contract::cancelled()),
        }
    }

    fn request_headers(&self, run: &Run, follow_up: bool) -> HeaderMap {
        let mut headers = self.headers.clone();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("application/json, application/x-ndjson, text/event-stream"));
        let mut put = |name: &'static str, value: &str| {
            // Ids a caller chose may hold bytes a header cannot: then the header is left out.
            if let Ok(value) = HeaderValue::from_str(value) {
                headers.insert(HeaderName::from_static(name), value);
            }
        };
        put("accord-skill", run.skill());
        put("accord-run-id", run.run_id());
        if let Some(task) = run.task() {
            put("accord-task-id", task.id.as_str());
            if let Some(context) = &task.context_id {
                put("accord-context-id", context);
            }
        }
        if let Some(owner) = run.owner() {
            put("accord-owner", owner);
        }
        if follow_up {
            put("accord-follow-up", "true");
        }
        headers
    }

    /// The request a run sends: its URL (the path's variables filled, the query added) and its
    /// body. `Err` is the caller's mistake: an input that cannot make the request.
    fn request_for(&self, run: &Run) -> Result<Target, String> {
        let config = &self.config;
        let input = run.input();
        let needs_fields = config.path.is_some() || config.method.has_query();
        let mut fields: Map<String, Value> = match input {
            Value::Object(fields) => fields.clone(),
            _ if needs_fields => {
                return Err(format!(
                    "the input must be a JSON object: its fields fill the request ({} {})",
                    config.method,
                    config.endpoint()
                ));
            }
            _ => Map::new(),
        };
        let mut url = config.url.clone();
        // `id "7"`: what names the resource to the caller (the caller's own values, never the
        // file's path, which may hold an expanded secret).
        let mut named = String::new();
        if let Some(template) = &config.path {
            let mut path = String::new();
            for piece in &template.pieces {
                match piece {
                    Piece::Literal(text) => path.push_str(text),
                    Piece::Variable(name) => {
                        let value = fields.remove(name);
                        path.push_str(&path_segment(name, value.clone())?);
                        if !named.is_empty() {
                            named.push_str(", ");
                        }
                        let text = match value {
                            Some(Value::String(text)) => format!("{:?}", bounded(&text, 128)),
                            Some(other) => other.to_string(),
                            None => String::new(),
                        };
                        named.push_str(&format!("{name} {text}"));
                    }
                }
            }
            url.set_path(&path);
        }
        let body = if config.method.has_query() {
            if !fields.is_empty() {
                // By name, whatever order the input's map keeps.
                let mut sorted: Vec<(&String, &Value)> = fields.iter().collect();
                sorted.sort_by_key(|(name, _)| *name);
                let mut pairs = url.query_pairs_mut();
                for (name, value) in sorted {
                    for text in query_values(value) {
                        pairs.append_pair(name, &text);
                    }
                }
            }
            None
        } else {
            // A fixed URL's body is the input as it is; a template's, the fields the path left.
            let input = if config.path.is_some() { Value::Object(fields) } else { input.clone() };
            let body = match contract::envelope(run) {
                Some(Value::Object(mut envelope)) => {
                    envelope.insert("input".into(), input);
                    Value::Object(envelope)
                }
                _ => input,
            };
            Some(serde_json::to_vec(&body).map_err(|_| "the input does not encode".to_owned())?)
        };
        Ok(Target { url, named, body })
    }

    async fn exchange(&self, run: &Run) -> Result<Outcome, SkillError> {
        let follow_up = contract::envelope(run).is_some();
        let mut target = match self.request_for(run) {
            Ok(target) => target,
            Err(reason) => return Ok(Outcome::Rejected(Message::agent_text(bounded(&reason, MAX_REASON_CHARS)))),
        };
        let timeout = self.config.timeout;
        let deadline = Instant::now() + timeout;
        let mut headers = self.request_headers(run, follow_up);
        let mut request = self.client.request(self.config.method.reqwest(), target.url.clone());
        match target.body.take() {
            Some(body) => request = request.body(body),
            // No body, no content type.
            None => {
                headers.remove(CONTENT_TYPE);
            }
        }
        let request = request.headers(headers);
        let mut response = match tokio::time::timeout_at(deadline, request.send()).await {
            Err(_) => return Err(self.timed_out(run)),
            Ok(Err(error)) => return Err(self.request_failed(run, error)),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if status.is_success() {
            return match framing(&response) {
                Framing::Json => {
                    let body = self.read(run, &mut response, self.config.max_answer_bytes, deadline).await?;
                    let answer: Value = serde_json::from_slice(&body)
                        .map_err(|_| invalid_answer("the backend's answer is not JSON"))?;
                    contract::outcome_of_answer(answer, &mut Files::new(run))
                }
                framing => self.stream(run, response, framing).await,
            };
        }
        if status.is_client_error() {
            return self.refusal(run, status, response, deadline, &target).await;
        }
        tracing::warn!(skill = run.skill(), status = status.as_u16(), "the HTTP backend failed");
        if status.is_redirection() {
            return Err(failure(
                "backend_error",
                format!("the backend answered with a redirect ({}), which Accord does not follow", status_text(status)),
            ));
        }
        let retryable = matches!(status.as_u16(), 502..=504);
        Err(failure("backend_error", format!("the backend failed ({})", status_text(status))).retryable(retryable))
    }

    /// Reads a whole body of at most `cap` bytes by `deadline`.
    async fn read(
        &self,
        run: &Run,
        response: &mut Response,
        cap: usize,
        deadline: Instant,
    ) -> Result<Vec<u8>, SkillError> {
        match read_capped(response, cap, deadline).await {
            Ok(body) => Ok(body),
            Err(ReadFailure::Timeout) => Err(self.timed_out(run)),
            Err(ReadFailure::TooLarge) => Err(self.too_large()),
            Err(ReadFailure::Transport(error)) => Err(self.request_failed(run, error)),
        }
    }

    /// Reads a stream of events, forwarding its deltas, until its end event.
    async fn stream(&self, run: &Run, mut response: Response, framing: Framing) -> Result<Outcome, SkillError> {
        let mut lines = Lines::new(self.config.max_answer_bytes);
        let mut sse = SseEvents::default();
        let mut files = Files::new(run);
        loop {
            let chunk = match tokio::time::timeout(self.config.timeout, response.chunk()).await {
                Err(_) => return Err(self.timed_out(run)),
                Ok(Err(error)) => return Err(self.request_failed(run, error)),
                Ok(Ok(chunk)) => chunk,
            };
            let (complete, done) = match chunk {
                Some(chunk) => (lines.feed(&chunk).map_err(|_| self.too_large())?, false),
                None => (lines.finish().into_iter().collect(), true),
            };
            for line in complete {
                let data = match framing {
                    Framing::Sse => sse.line(&line),
                    _ => {
                        (!line.iter().all(u8::is_ascii_whitespace)).then(|| String::from_utf8_lossy(&line).into_owned())
                    }
                };
                if let Some(data) = data
                    && let Some(end) = Self::event(run, &data, &mut files).await
                {
                    return end;
                }
            }
            if done {
                if let Some(data) = sse.finish()
                    && let Some(end) = Self::event(run, &data, &mut files).await
                {
                    return end;
                }
                return Err(invalid_answer("the backend's stream ended without an `output`"));
            }
        }
    }

    /// Handles one event's data: `Some` when it ends the run.
    async fn event(run: &Run, data: &str, files: &mut Files) -> Option<Result<Outcome, SkillError>> {
        let Ok(value) = serde_json::from_str::<Value>(data) else {
            return Some(Err(invalid_answer("an event of the backend's stream is not JSON")));
        };
        match contract::stream_event(value, files) {
            StreamEvent::Progress(event) => {
                run.emit(event).await;
                None
            }
            StreamEvent::End(end) => Some(end),
        }
    }

    /// A 4xx answer: the caller's mistake (a rejected run), except where the status says the
    /// backend would not take Accord's credentials or is busy — those are the skill's failure.
    async fn refusal(
        &self,
        run: &Run,
        status: StatusCode,
        mut response: Response,
        deadline: Instant,
        target: &Target,
    ) -> Result<Outcome, SkillError> {
        let templated = self.config.path.is_some();
        match status.as_u16() {
            // A fixed URL that is not there, or a method the resource does not take: the agent
            // file names the wrong endpoint, which no caller can fix.
            404 | 405 if !templated || status == StatusCode::METHOD_NOT_ALLOWED => {
                tracing::warn!(
                    skill = run.skill(),
                    status = status.as_u16(),
                    method = %self.config.method,
                    endpoint = %self.config.endpoint(),
                    "the HTTP backend has no such endpoint: check the skill's URL and method in the agent file"
                );
                return Err(failure(
                    "backend_misconfigured",
                    format!(
                        "the backend has no endpoint for this skill's {} request ({}): the agent file's URL or method is wrong",
                        self.config.method,
                        status_text(status)
                    ),
                ));
            }
            401 | 403 | 407 => {
                tracing::warn!(skill = run.skill(), status = status.as_u16(), "the HTTP backend refused Accord");
                return Err(failure(
                    "backend_unauthorized",
                    format!("the backend refused Accord's credentials ({})", status_text(status)),
                ));
            }
            408 | 429 => {
                return Err(
                    failure("backend_busy", format!("the backend is busy ({})", status_text(status))).retryable(true)
                );
            }
            _ => {}
        }
        let content_type = response.headers().get(CONTENT_TYPE).and_then(|value| value.to_str().ok());
        let textual = content_type.is_some_and(|value| value.to_ascii_lowercase().starts_with("text/plain"));
        // The reason is read within a small cap: a refusal is a sentence, not a document.
        let body = read_capped(&mut response, 64 << 10, deadline).await.unwrap_or_default();
        let reason = match reason_of(&body, textual) {
            // A templated URL's 404: the resource the caller named does not exist.
            Some(reason) if status == StatusCode::NOT_FOUND => {
                format!("{reason} (no resource with {}: {})", target.named, status_text(status))
            }
            Some(reason) => reason,
            None if status == StatusCode::NOT_FOUND => {
                format!("no resource with {} ({})", target.named, status_text(status))
            }
            None => format!("the backend refused the request ({})", status_text(status)),
        };
        Ok(Outcome::Rejected(Message::agent_text(bounded(&reason, MAX_REASON_CHARS))))
    }

    fn timed_out(&self, run: &Run) -> SkillError {
        tracing::warn!(skill = run.skill(), "the HTTP backend timed out");
        failure("backend_timeout", format!("the backend did not answer within {}", seconds(self.config.timeout)))
            .retryable(true)
    }

    fn too_large(&self) -> SkillError {
        failure(
            "backend_answer_too_large",
            format!("the backend's answer is larger than {} bytes", self.config.max_answer_bytes),
        )
    }

    /// A request that failed before an answer: the reqwest error is logged without its URL and
    /// never reaches the caller.
    fn request_failed(&self, run: &Run, error: reqwest::Error) -> SkillError {
        let connect = error.is_connect();
        let timeout = error.is_timeout();
        tracing::warn!(skill = run.skill(), error = %error.without_url(), "the HTTP backend could not be reached");
        if timeout {
            return self.timed_out(run);
        }
        let message = if connect { "could not connect to the backend" } else { "the request to the backend failed" };
        failure("backend_unavailable", message).retryable(true)
    }
}

/// A run's request, made from its input.
struct Target {
    url: Url,
    /// The path variables' values (`id "7", part 3`): name the resource in a refusal.
    named: String,
    /// The JSON body (`None` for `GET` and `DELETE`).
    body: Option<Vec<u8>>,
}

/// The input's field `name` as a path segment: a string, number or boolean, percent-encoded so
/// that it stays one segment (`/` is `%2F`). `Err` says why the input cannot fill it.
fn path_segment(name: &str, value: Option<Value>) -> Result<String, String> {
    let text = match value {
        None | Some(Value::Null) => {
            return Err(format!("the input has no `{name}`, which the URL's path needs"));
        }
        Some(Value::String(text)) => text,
        Some(Value::Number(number)) => number.to_string(),
        Some(Value::Bool(value)) => value.to_string(),
        Some(_) => {
            return Err(format!("`{name}` must be a string, a number or a boolean to stand in the URL's path"));
        }
    };
    // Empty, `.` or `..` would name another resource (the collection, or a parent).
    if matches!(text.as_str(), "" | "." | "..") {
        return Err(format!("`{name}` must not be empty, `.` or `..` (it stands in the URL's path)"));
    }
    let mut segment = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            segment.push(char::from(byte));
        } else {
            segment.push_str(&format!("%{byte:02X}"));
        }
    }
    Ok(segment)
}

/// The query values of one input field: a string as it is, a number or boolean as its JSON
/// text, `null` none, an array one value per item (each by these rules, an item that is an
/// array or object as its JSON text), an object its JSON text.
fn query_values(value: &Value) -> Vec<String> {
    match value {
        Value::Null => Vec::new(),
        Value::String(text) => vec![text.clone()],
        Value::Number(_) | Value::Bool(_) | Value::Object(_) => vec![value.to_string()],
        Value::Array(items) => items
            .iter()
            .filter(|item| !item.is_null())
            .map(|item| match item {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            })
            .collect(),
    }
}

/// `2.5 s`, `30 s`.
pub(crate) fn seconds(duration: Duration) -> String {
    format!("{} s", duration.as_secs_f64())
}

fn status_text(status: StatusCode) -> String {
    match status.canonical_reason() {
        Some(reason) => format!("HTTP {} {reason}", status.as_u16()),
        None => format!("HTTP {}", status.as_u16()),
    }
}

/// A refusal's reason from its body: `{"error": {"message"}}`, `{"error": "..."}` or
/// `{"message": "..."}`, or a `text/plain` body.
fn reason_of(body: &[u8], textual: bool) -> Option<String> {
    if textual {
        let text = String::from_utf8_lossy(body).trim().to_owned();
        return (!text.is_empty()).then_some(text);
    }
    let value: Value = serde_json::from_slice(body).ok()?;
    let text = match (value.get("error"), value.get("message")) {
        (Some(Value::String(text)), _) => text,
        (Some(error), _) if error.get("message").is_some_and(Value::is_string) => error.get("message")?.as_str()?,
        (_, Some(Value::String(text))) => text,
        _ => return None,
    };
    (!text.trim().is_empty()).then(|| text.trim().to_owned())
}

async fn read_capped(response: &mut Response, cap: usize, deadline: Instant) -> Result<Vec<u8>, ReadFailure> {
    if response.content_length().is_some_and(|length| length > cap as u64) {
        return Err(ReadFailure::TooLarge);
    }
    let mut body = Vec::new();
    loop {
        match tokio::time::timeout_at(deadline, response.chunk()).await {
            Err(_) => return Err(ReadFailure::Timeout),
            Ok(Err(error)) => return Err(ReadFailure::Transport(error)),
            Ok(Ok(None)) => return Ok(body),
            Ok(Ok(Some(chunk))) => {
                if body.len().saturating_add(chunk.len()) > cap {
                    return Err(ReadFailure::TooLarge);
                }
                body.extend_from_slice(&chunk);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn urls_show_without_credentials_or_query() {
        let url = Url::parse("https://user:pw@example.com:8443/quote?key=s3cret#x").expect("url");
        assert_eq!(redacted(&url), "https://example.com:8443/quote?<redacted>");
    }

    #[test]
    fn templates_show_their_variables_and_never_their_query() {
        let config = HttpConfig::from_template("http://u:pw@shop:3000/v1/items/{id}/parts/{part}.json?key=s3cret")
            .expect("template");
        assert_eq!(config.endpoint(), "http://shop:3000/v1/items/{id}/parts/{part}.json?<redacted>");
        assert_eq!(config.path_variables(), ["id", "part"]);
        assert!(!format!("{config:?}").contains("s3cret"));
        let fixed = HttpConfig::from_template("http://shop/items").expect("fixed");
        assert!(fixed.path_variables().is_empty());
    }

    #[test]
    fn path_values_are_one_segment_and_query_values_follow_their_types() {
        assert_eq!(path_segment("id", Some(json!("a/b c?é"))).as_deref(), Ok("a%2Fb%20c%3F%C3%A9"));
        assert_eq!(path_segment("id", Some(json!(12.5))).as_deref(), Ok("12.5"));
        assert_eq!(path_segment("id", Some(json!(true))).as_deref(), Ok("true"));
        assert!(path_segment("id", Some(json!(".."))).is_err());
        assert!(path_segment("id", None).is_err());
        assert_eq!(query_values(&json!(null)), Vec::<String>::new());
        assert_eq!(query_values(&json!([1, "a", null, [2], {"b": 3}])), ["1", "a", "[2]", "{\"b\":3}"]);
        assert_eq!(query_values(&json!({"a": [1]})), ["{\"a\":[1]}"]);
    }

    #[test]
    fn refusal_reasons_come_from_the_usual_error_shapes() {
        assert_eq!(reason_of(br#"{"error": {"message": "no such item"}}"#, false).as_deref(), Some("no such item"));
        assert_eq!(reason_of(br#"{"error": "bad size"}"#, false).as_deref(), Some("bad size"));
        assert_eq!(reason_of(br#"{"message": "nope"}"#, false).as_deref(), Some("nope"));
        assert_eq!(reason_of(b"<html>", false), None);
        assert_eq!(reason_of(b"plain words\n", true).as_deref(), Some("plain words"));
    }
}
