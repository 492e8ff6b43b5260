//! The HTTP backend: a skill whose code is an HTTP endpoint. Each run POSTs the input JSON (or a
//! resumed task's envelope) to the endpoint; its JSON answer, or its NDJSON / server-sent-event
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
use serde_json::Value;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use url::Url;

use crate::contract::{self, Lines, MAX_REASON_CHARS, SseEvents, StreamEvent, bounded, failure, invalid_answer};
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

/// How to reach an HTTP backend.
#[derive(Clone)]
pub struct HttpConfig {
    url: Url,
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
            .field("url", &redacted(&self.url))
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
            headers: Vec::new(),
            timeout: Self::DEFAULT_TIMEOUT,
            concurrency: None,
            max_answer_bytes: Self::DEFAULT_MAX_ANSWER_BYTES,
        }
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
        self.concurrency = limit.map(|limit| limit.max(1));
        self
    }

    /// The most bytes an answer may have, a stream's included; more fails the run.
    pub fn max_answer_bytes(mut self, bytes: usize) -> Self {
        self.max_answer_bytes = bytes;
        self
    }

    /// The endpoint without credentials, query or fragment (safe to show).
    pub fn endpoint(&self) -> String {
        redacted(&self.url)
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
    limit: Option<Arc<Semaphore>>,
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
        let limit = config.concurrency.map(|limit| Arc::new(Semaphore::new(limit)));
        Ok(Self { inner: Arc::new(Inner { config, client, headers, limit }) })
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
        let _permit = match &self.limit {
            None => None,
            Some(limit) => tokio::select! {
                permit = Arc::clone(limit).acquire_owned() => permit.ok(),
                () = run.cancelled() => return Err(contract::cancelled()),
            },
        };
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

    async fn exchange(&self, run: &Run) -> Result<Outcome, SkillError> {
        let envelope = contract::envelope(run);
        let follow_up = envelope.is_some();
        let body = envelope.unwrap_or_else(|| run.input().clone());
        let body = serde_json::to_vec(&body).map_err(|_| SkillError::internal("the input does not encode"))?;
        let timeout = self.config.timeout;
        let deadline = Instant::now() + timeout;
        let request =
            self.client.post(self.config.url.clone()).headers(self.request_headers(run, follow_up)).body(body);
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
                    contract::outcome_of_answer(answer)
                }
                framing => self.stream(run, response, framing).await,
            };
        }
        if status.is_client_error() {
            return self.refusal(run, status, response, deadline).await;
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
                    && let Some(end) = Self::event(run, &data).await
                {
                    return end;
                }
            }
            if done {
                if let Some(data) = sse.finish()
                    && let Some(end) = Self::event(run, &data).await
                {
                    return end;
                }
                return Err(invalid_answer("the backend's stream ended without an `output`"));
            }
        }
    }

    /// Handles one event's data: `Some` when it ends the run.
    async fn event(run: &Run, data: &str) -> Option<Result<Outcome, SkillError>> {
        let Ok(value) = serde_json::from_str::<Value>(data) else {
            return Some(Err(invalid_answer("an event of the backend's stream is not JSON")));
        };
        match contract::stream_event(value) {
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
    ) -> Result<Outcome, SkillError> {
        match status.as_u16() {
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
        let reason = reason_of(&body, textual)
            .unwrap_or_else(|| format!("the backend refused the request ({})", status_text(status)));
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

    #[test]
    fn urls_show_without_credentials_or_query() {
        let url = Url::parse("https://user:pw@example.com:8443/quote?key=s3cret#x").expect("url");
        assert_eq!(redacted(&url), "https://example.com:8443/quote?<redacted>");
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
