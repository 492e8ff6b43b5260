//! The Lucid HTTP profile's client: card fetch, `invoke` and `stream` of an entrypoint, and the
//! helpers its task and signed-card calls share (URLs, the answer reader, status errors).

use std::pin::Pin;

use accord_types::card::AgentCard;
use accord_types::lucid::{InvokeResponse, StreamEnvelope};
use eventsource_stream::Eventsource;
use futures_util::{Stream, StreamExt};
use reqwest::header::{ACCEPT, HeaderMap, HeaderName, HeaderValue};
use reqwest::{StatusCode, Url};
use serde_json::{Value, json};

use crate::error::{ClientError, Operation};
use crate::http::{self, MAX_RESPONSE_BYTES};
use crate::payment::{self, Settlement, send_paying};

/// Where an agent card may be found, relative to an agent's base URL, in the order tried after
/// the base URL itself.
pub const CARD_PATHS: &[&str] = &[".well-known/agent-card.json", ".well-known/agent.json", "agentcard.json"];

/// Options of [`Client::invoke`].
#[derive(Debug, Clone, Default)]
pub struct InvokeOptions {
    /// Sent as `Idempotency-Key` (trimmed; 20 to 256 characters). A retry with the same key is
    /// answered from the agent's record of the first success instead of running again.
    pub idempotency_key: Option<String>,
    /// Extra request headers.
    pub headers: HeaderMap,
}

/// One event of a stream, as received.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamEvent {
    /// The SSE `id`, when sent.
    pub id: Option<String>,
    /// The SSE `event` (`run-start`, `delta`, …; `message` when the server sent none).
    pub event: String,
    /// The data: JSON when it parses, else the raw text as a JSON string.
    pub data: Value,
}

impl StreamEvent {
    /// An event as parsed from the SSE wire: data that is not JSON is kept as a string.
    pub(crate) fn from_sse(event: eventsource_stream::Event) -> Self {
        Self {
            id: (!event.id.is_empty()).then_some(event.id),
            data: serde_json::from_str(&event.data).unwrap_or(Value::String(event.data)),
            event: event.event,
        }
    }

    /// The data as a Lucid envelope.
    pub fn envelope(&self) -> Result<StreamEnvelope, serde_json::Error> {
        serde_json::from_value(self.data.clone())
    }

    /// Whether this event ends the run.
    pub fn is_run_end(&self) -> bool {
        self.event == "run-end"
    }
}

/// The events of a stream, in order. Dropping it closes the connection, which cancels the run.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ClientError>> + Send>>;

/// A client. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Client {
    pub(crate) http: reqwest::Client,
    pub(crate) payments: Option<std::sync::Arc<dyn payment::PaymentHook>>,
    /// What the HTTP client was built with, for naming a refused handshake ([`Client::with_tls`]).
    pub(crate) tls: crate::TlsConfig,
}

impl Client {
    /// A client with a default HTTP client.
    pub fn new() -> Self {
        Self::default()
    }

    /// A client over your own `reqwest::Client` (timeouts, proxies, TLS roots).
    pub fn with_http(http: reqwest::Client) -> Self {
        Self { http, payments: None, tls: crate::TlsConfig::default() }
    }

    /// A client whose HTTP client trusts `tls`'s extra roots and presents its client certificate
    /// (with a 10 s connect timeout).
    pub fn with_tls(tls: &crate::TlsConfig) -> Result<Self, ClientError> {
        let mut client = Self::with_http(tls.http_client()?);
        client.tls = tls.clone();
        Ok(client)
    }

    /// A request to `url` that got no answer, with the cause of a refused TLS handshake when a
    /// second handshake finds one ([`crate::TlsConfig::refusal`]).
    pub(crate) async fn unreached(&self, operation: Operation, url: &Url, source: reqwest::Error) -> ClientError {
        self.tls.explain(ClientError::transport(operation, url, source)).await
    }

    /// Pays for priced calls with `hook`: a `402` is answered by the hook's credential and the
    /// request is retried once (see [`payment`]).
    pub fn with_payments(mut self, hook: std::sync::Arc<dyn payment::PaymentHook>) -> Self {
        self.payments = Some(hook);
        self
    }

    /// Fetches and parses an agent's card. `base` may be the card's own URL or the agent's base
    /// URL: the base URL itself is tried first, then each of [`CARD_PATHS`] under it. A 404 or a
    /// response that is not a card moves on to the next place; any other error status stops.
    pub async fn fetch_card(&self, base: &str) -> Result<AgentCard, ClientError> {
        let operation = Operation::FetchCard;
        let base_url = parse_url(base)?;
        if !matches!(base_url.scheme(), "http" | "https") {
            return Err(ClientError::InvalidUrl {
                url: base.to_owned(),
                reason: "only http and https are supported".into(),
            });
        }
        let mut candidates = vec![base_url.clone()];
        let dir = directory(&base_url);
        for path in CARD_PATHS {
            if let Ok(url) = dir.join(path)
                && !candidates.contains(&url)
            {
                candidates.push(url);
            }
        }
        for url in candidates {
            let (status, body) = match http::get_card(&self.http, &url, HeaderMap::new(), None).await {
                Ok(answer) => answer,
                Err(source) => return Err(self.unreached(operation, &url, source).await),
            };
            if status == StatusCode::NOT_FOUND {
                continue;
            }
            if !status.is_success() {
                return Err(ClientError::status_body(operation, &url, status.as_u16(), &body.unwrap_or_default()));
            }
            let Ok(body) = body else { continue };
            let Ok(value) = serde_json::from_slice::<Value>(&body) else { continue };
            if value.get("name").is_some_and(Value::is_string)
                && let Ok(card) = serde_json::from_value::<AgentCard>(value)
            {
                return Ok(card);
            }
        }
        Err(ClientError::CardNotFound { base: base.to_owned() })
    }

    /// Invokes a skill and returns its answer.
    pub async fn invoke(
        &self,
        card: &AgentCard,
        skill: &str,
        input: Value,
        options: InvokeOptions,
    ) -> Result<InvokeResponse, ClientError> {
        self.invoke_with_settlement(card, skill, input, options).await.map(|(response, _)| response)
    }

    /// [`Client::invoke`], with the payment evidence that came back with the answer, if any.
    pub async fn invoke_with_settlement(
        &self,
        card: &AgentCard,
        skill: &str,
        input: Value,
        options: InvokeOptions,
    ) -> Result<(InvokeResponse, Option<Settlement>), ClientError> {
        let operation = Operation::Invoke;
        let url = entrypoint_url(card, skill, "invoke")?;
        let mut request = self.http.post(url.clone()).headers(options.headers).json(&json!({ "input": input }));
        if let Some(key) = options.idempotency_key {
            let key = key.trim();
            if !(20..=256).contains(&key.chars().count()) {
                return Err(ClientError::InvalidIdempotencyKey);
            }
            request = request.header(HeaderName::from_static("idempotency-key"), key);
        }
        let response = match send_paying(self.payments.as_ref(), request).await {
            Ok(payment::Sent::Response(response)) => response,
            Ok(payment::Sent::Declined(reason)) => return Err(ClientError::PaymentDeclined { operation, reason }),
            Err(source) => return Err(self.unreached(operation, &url, source).await),
        };
        if !response.status().is_success() {
            return Err(status_error(operation, response).await);
        }
        let settlement = Settlement::from_headers(response.headers());
        let body = read_answer(operation, response).await?;
        let answer =
            serde_json::from_slice(&body).map_err(|error| ClientError::invalid(operation, &url, error.to_string()))?;
        Ok((answer, settlement))
    }

    /// Starts a skill as a stream and returns its events as they arrive.
    pub async fn stream(&self, card: &AgentCard, skill: &str, input: Value) -> Result<EventStream, ClientError> {
        let operation = Operation::Stream;
        let url = entrypoint_url(card, skill, "stream")?;
        let sent = self
            .http
            .post(url.clone())
            .header(ACCEPT, HeaderValue::from_static("text/event-stream"))
            .json(&json!({ "input": input }))
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(source) => return Err(self.unreached(operation, &url, source).await),
        };
        if !response.status().is_success() {
            return Err(status_error(operation, response).await);
        }
        let is_sse = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("text/event-stream"));
        if !is_sse {
            return Err(ClientError::invalid(operation, &url, "the response is not an event stream"));
        }
        let events = http::bounded_sse(response.bytes_stream()).eventsource().map(move |item| match item {
            Ok(event) => Ok(StreamEvent::from_sse(event)),
            Err(error) => Err(ClientError::invalid(operation, &url, error.to_string())),
        });
        Ok(Box::pin(events))
    }
}

pub(crate) fn parse_url(url: &str) -> Result<Url, ClientError> {
    Url::parse(url).map_err(|error| ClientError::InvalidUrl { url: url.to_owned(), reason: error.to_string() })
}

/// The URL with a trailing `/`, so that relative joins keep its whole path.
pub(crate) fn directory(url: &Url) -> Url {
    let mut dir = url.clone();
    if !dir.path().ends_with('/') {
        let path = format!("{}/", dir.path());
        dir.set_path(&path);
    }
    dir.set_query(None);
    dir
}

/// `{base}/entrypoints/{skill}/{action}`, after checking the card lists the skill.
pub(crate) fn entrypoint_url(card: &AgentCard, skill: &str, action: &str) -> Result<Url, ClientError> {
    if card.skill(skill).is_none() {
        return Err(ClientError::SkillNotFound { skill: skill.to_owned() });
    }
    let base = card.http_base_url().ok_or(ClientError::NoHttpInterface)?;
    let base = directory(&parse_url(base)?);
    let mut url = base.clone();
    url.path_segments_mut()
        .map_err(|()| ClientError::InvalidUrl { url: base.to_string(), reason: "cannot be a base".into() })?
        .pop_if_empty()
        .extend(["entrypoints", skill, action]);
    Ok(url)
}

/// Reads a whole answer, refusing more than [`MAX_RESPONSE_BYTES`].
pub(crate) async fn read_answer(operation: Operation, response: reqwest::Response) -> Result<Vec<u8>, ClientError> {
    let url = response.url().clone();
    http::read_bounded(response, MAX_RESPONSE_BYTES).await.map_err(|error| ClientError::body(operation, &url, error))
}

/// The error of an answer with an error status, with its body.
pub(crate) async fn status_error(operation: Operation, response: reqwest::Response) -> ClientError {
    let status = response.status();
    let url = response.url().clone();
    // An unreadable or oversized error body is reported as empty: the status is the answer.
    let body = http::read_bounded(response, MAX_RESPONSE_BYTES).await.unwrap_or_default();
    ClientError::status_body(operation, &url, status.as_u16(), &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(url: &str) -> AgentCard {
        serde_json::from_value(json!({"name": "a", "skills": [{"id": "echo"}],
            "supportedInterfaces": [{"url": url, "protocolBinding": "HTTP+JSON"}]}))
        .expect("card")
    }

    #[test]
    fn entrypoint_urls_keep_the_base_path() {
        let url = entrypoint_url(&card("https://h/api/agent"), "echo", "invoke").expect("url");
        assert_eq!(url.as_str(), "https://h/api/agent/entrypoints/echo/invoke");
        let url = entrypoint_url(&card("https://h/api/agent/"), "echo", "stream").expect("url");
        assert_eq!(url.as_str(), "https://h/api/agent/entrypoints/echo/stream");
        assert!(matches!(
            entrypoint_url(&card("https://h/"), "nope", "invoke"),
            Err(ClientError::SkillNotFound { .. })
        ));
    }
}
