//! What the HTTP bindings (JSON-RPC and HTTP+JSON, 1.0 and 0.3) share: the request with the
//! caller's headers and the version header, the timeouts, the bounded body, the event-stream
//! response, and reading a 1.0 JSON answer into its operation's type.

use std::time::Duration;

use accord_types::a2a::AgentInterface;
use eventsource_stream::Eventsource;
use futures_util::{Stream, StreamExt};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap};
use reqwest::{Method, StatusCode, Url};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::card::parse_card;
use super::transport::{A2A_VERSION, A2A_VERSION_HEADER, Answer, StreamFault, Unary};
use crate::error::{ClientError, Operation, Site};
use crate::http::{BoundError, MAX_RESPONSE_BYTES, bounded_sse, read_bounded};

/// The HTTP client and what goes on every request of one A2A client.
#[derive(Debug, Clone)]
pub(crate) struct HttpWire {
    pub(crate) http: reqwest::Client,
    pub(crate) headers: HeaderMap,
    /// The timeout of a call that is not a stream, and of a stream's response headers.
    pub(crate) request_timeout: Duration,
}

/// One HTTP request of a binding.
#[derive(Debug)]
pub(crate) struct HttpCall {
    pub(crate) operation: Operation,
    pub(crate) method: Method,
    pub(crate) url: Url,
    pub(crate) body: Option<Value>,
    /// Whether `A2A-Version: 1.0` is sent: a 0.3 request carries no version, which is how 0.3
    /// peers (and Accord) tell it.
    pub(crate) versioned: bool,
}

/// The answer to a streaming request: the events, or the status and body of a refusal.
pub(crate) enum Opened {
    Events(std::pin::Pin<Box<dyn Stream<Item = Result<eventsource_stream::Event, StreamFault>> + Send>>),
    Refused { status: StatusCode, body: Vec<u8> },
}

impl HttpCall {
    /// Where this call goes, for the errors of its answer.
    pub(crate) fn site(&self) -> Site {
        Site::new(self.operation, &self.url)
    }
}

impl HttpWire {
    fn request(&self, call: &HttpCall, accept: &'static str) -> reqwest::RequestBuilder {
        let mut request = self.http.request(call.method.clone(), call.url.clone()).headers(self.headers.clone());
        if call.versioned {
            request = request.header(A2A_VERSION_HEADER, A2A_VERSION);
        }
        request = request.header(ACCEPT, accept);
        if let Some(body) = &call.body {
            request = request.header(CONTENT_TYPE, "application/json").body(body.to_string());
        }
        request
    }

    async fn send(&self, request: reqwest::RequestBuilder, call: &HttpCall) -> Result<reqwest::Response, ClientError> {
        match tokio::time::timeout(self.request_timeout, request.send()).await {
            Err(_) => Err(ClientError::Timeout { operation: call.operation, url: call.url.to_string() }),
            Ok(Err(source)) => Err(ClientError::transport(call.operation, &call.url, source)),
            Ok(Ok(response)) => Ok(response),
        }
    }

    /// Sends a call and reads the whole answer, all within the request timeout.
    pub(crate) async fn exchange(&self, call: &HttpCall) -> Result<(StatusCode, Vec<u8>), ClientError> {
        let request = self.request(call, "application/json, application/a2a+json");
        let read = async {
            let response = self.send(request, call).await?;
            let status = response.status();
            let body = read_body(call, response).await?;
            Ok::<_, ClientError>((status, body))
        };
        match tokio::time::timeout(self.request_timeout, read).await {
            Ok(outcome) => outcome,
            Err(_) => Err(ClientError::Timeout { operation: call.operation, url: call.url.to_string() }),
        }
    }

    /// Sends a streaming call: its SSE events when the answer is a successful event stream (each
    /// event at most [`MAX_RESPONSE_BYTES`]), else the status and body for the binding to read.
    pub(crate) async fn open(&self, call: &HttpCall, last_event_id: Option<&str>) -> Result<Opened, ClientError> {
        let mut request = self.request(call, "text/event-stream");
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        let response = self.send(request, call).await?;
        let status = response.status();
        let is_sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.trim_start().to_ascii_lowercase().starts_with("text/event-stream"));
        if !(status.is_success() && is_sse) {
            let body = read_body(call, response).await?;
            return Ok(Opened::Refused { status, body });
        }
        let events = bounded_sse(response.bytes_stream()).eventsource().map(|item| {
            item.map_err(|error| match error {
                eventsource_stream::EventStreamError::Transport(BoundError { reason, oversized: true }) => {
                    StreamFault::Fatal(reason)
                }
                other => StreamFault::Dropped(other.to_string()),
            })
        });
        Ok(Opened::Events(Box::pin(events)))
    }
}

/// The URL of an HTTP interface: an `http` or `https` URL that can be a base.
pub(crate) fn interface_url(interface: &AgentInterface) -> Result<Url, ClientError> {
    let endpoint = Url::parse(&interface.url)
        .map_err(|error| ClientError::InvalidUrl { url: interface.url.clone(), reason: error.to_string() })?;
    if !matches!(endpoint.scheme(), "http" | "https") || endpoint.cannot_be_a_base() {
        return Err(ClientError::InvalidUrl {
            url: interface.url.clone(),
            reason: "an interface URL must be an http or https URL".into(),
        });
    }
    Ok(endpoint)
}

/// Reads a 1.0 JSON answer (a JSON-RPC `result`, or a REST body) as the answer to `request`.
pub(crate) fn answer_v1(request: &Unary, site: &Site, value: Value) -> Result<Answer, ClientError> {
    fn read<T: DeserializeOwned>(site: &Site, value: Value) -> Result<T, ClientError> {
        serde_json::from_value(value).map_err(|error| site.invalid(error.to_string()))
    }
    Ok(match request {
        Unary::SendMessage(_) => Answer::Message(read(site, value)?),
        Unary::GetTask(_) | Unary::CancelTask(_) => Answer::Task(read(site, value)?),
        Unary::ListTasks(_) => Answer::Tasks(read(site, value)?),
        Unary::GetExtendedCard(_) => Answer::Card(Box::new(parse_card(value).map_err(|reason| site.invalid(reason))?)),
        Unary::CreatePushConfig(_) | Unary::GetPushConfig(_) => Answer::PushConfig(read(site, value)?),
        Unary::ListPushConfigs(_) => Answer::PushConfigs(read(site, value)?),
        Unary::DeletePushConfig(_) => deleted(site, value)?,
    })
}

/// The answer to a delete: `{}` (or nothing).
pub(crate) fn deleted(site: &Site, value: Value) -> Result<Answer, ClientError> {
    match value {
        Value::Object(_) | Value::Null => Ok(Answer::Deleted),
        other => Err(site.invalid(format!("expected {{}}, got {other}"))),
    }
}

pub(crate) fn to_value(operation: Operation, value: &impl Serialize) -> Result<Value, ClientError> {
    serde_json::to_value(value).map_err(|error| ClientError::invalid(operation, "", format!("request: {error}")))
}

/// Reads a body, refusing more than [`MAX_RESPONSE_BYTES`].
pub(crate) async fn read_body(call: &HttpCall, response: reqwest::Response) -> Result<Vec<u8>, ClientError> {
    read_bounded(response, MAX_RESPONSE_BYTES)
        .await
        .map_err(|error| ClientError::body(call.operation, &call.url, error))
}
