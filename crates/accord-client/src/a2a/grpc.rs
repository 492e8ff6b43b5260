//! The gRPC binding (`GRPC`, spec §10): every call of [`A2aClient`] as an RPC of
//! `lf.a2a.v1.A2AService`, through the generated client of [`accord_grpc::pb`] and the message
//! conversions of [`accord_grpc`].
//!
//! The interface `url` is `host:port` (spec), spoken in plaintext HTTP/2 (h2c) as the official
//! SDKs and the TCK do; `http://host:port` means the same, and `https://host:port` is HTTP/2 over
//! TLS (rustls, the system's root certificates). The channel connects on the first call and is
//! shared by the client's clones. The caller's [`A2aClientOptions::headers`] travel as metadata
//! (lowercase keys), with `a2a-version: 1.0`. Errors are `google.rpc.Status` answers, read by
//! [`accord_grpc::status::from_status`]; a stream has no event ids.
//!
//! [`A2aClientOptions::headers`]: super::A2aClientOptions::headers

use std::fmt::Display;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use accord_grpc::pb;
use accord_grpc::pb::a2a_service_client::A2aServiceClient;
use accord_types::a2a::StreamResponse;
use futures_util::StreamExt;
use reqwest::Url;
use tonic::metadata::MetadataMap;
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};

use super::{A2A_VERSION, A2A_VERSION_HEADER, A2aClient, A2aClientError, Bound, Connection, Frame, MAX_RESPONSE_BYTES};
use super::{StreamFault, excerpt};

/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where a gRPC interface is, and its channel once the first call opened it.
#[derive(Debug)]
pub(super) struct Target {
    endpoint: Endpoint,
    channel: OnceLock<Channel>,
}

impl Target {
    /// The target of the gRPC interface `url` (see [`endpoint_url`]).
    pub(super) fn new(url: &str) -> Result<(Url, Self), A2aClientError> {
        let invalid = |reason: String| A2aClientError::InvalidUrl { url: url.to_owned(), reason };
        let endpoint_url = endpoint_url(url).map_err(invalid)?;
        let origin = endpoint_url.as_str().trim_end_matches('/').to_owned();
        let mut endpoint =
            Endpoint::from_shared(origin).map_err(|error| invalid(error.to_string()))?.connect_timeout(CONNECT_TIMEOUT);
        if endpoint_url.scheme() == "https" {
            endpoint = endpoint
                .tls_config(ClientTlsConfig::new().with_native_roots())
                .map_err(|error| invalid(format!("TLS: {error}")))?;
        }
        Ok((endpoint_url, Self { endpoint, channel: OnceLock::new() }))
    }

    /// The generated client on this target's channel (opened lazily: no connection is made
    /// before the first request).
    fn client(&self) -> A2aServiceClient<Channel> {
        let channel = self.channel.get_or_init(|| self.endpoint.connect_lazy()).clone();
        A2aServiceClient::new(channel).max_decoding_message_size(MAX_RESPONSE_BYTES)
    }
}

/// Reads a gRPC interface URL: `host:port` (plaintext), `http://host[:port]` (plaintext, port 80
/// by default) or `https://host[:port]` (TLS, port 443 by default). IPv6 hosts are written in
/// brackets. Anything else — another scheme, a path, a query, credentials, a bare host without a
/// port — is refused, with the reason.
pub(crate) fn endpoint_url(url: &str) -> Result<Url, String> {
    let trimmed = url.trim();
    if trimmed.is_empty() {
        return Err("a gRPC interface URL is empty".into());
    }
    let explicit = trimmed.contains("://");
    let parsed = if explicit {
        Url::parse(trimmed).map_err(|error| error.to_string())?
    } else {
        Url::parse(&format!("http://{trimmed}")).map_err(|error| format!("not host:port: {error}"))?
    };
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "a gRPC interface URL is host:port, http://host:port or https://host:port, not a {} URL",
            parsed.scheme()
        ));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err("a gRPC interface URL needs a host".into());
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("a gRPC interface URL carries no credentials (send them as headers)".into());
    }
    if parsed.path() != "/" || parsed.query().is_some() || parsed.fragment().is_some() {
        return Err("a gRPC interface URL has no path, query or fragment (the service is at the root)".into());
    }
    if !explicit && parsed.port().is_none() {
        return Err("a gRPC interface URL without a scheme is host:port; the port is missing".into());
    }
    Ok(parsed)
}

/// What a streaming RPC asks for.
pub(super) enum StreamCall {
    /// `SendStreamingMessage`.
    Send(Box<accord_types::a2a::SendMessageRequest>),
    /// `SubscribeToTask`.
    Subscribe(accord_types::a2a::SubscribeToTaskRequest),
}

impl A2aClient {
    /// A gRPC request: the converted message, with the caller's headers and `a2a-version` as
    /// metadata.
    fn grpc_request<T, P>(&self, bound: &Bound, message: T) -> Result<tonic::Request<P>, A2aClientError>
    where
        P: TryFrom<T>,
        P::Error: Display,
    {
        let message = P::try_from(message).map_err(|error| A2aClientError::InvalidResponse {
            url: bound.endpoint.to_string(),
            reason: format!("request: {error}"),
        })?;
        let mut headers = self.options.headers.clone();
        headers.insert(A2A_VERSION_HEADER, http::HeaderValue::from_static(A2A_VERSION));
        // Reserved names (`content-type`, `te`, `grpc-*` …) are removed by tonic when it sends.
        Ok(tonic::Request::from_parts(MetadataMap::from_headers(headers), tonic::Extensions::default(), message))
    }

    fn target(bound: &Bound) -> Result<&Target, A2aClientError> {
        bound.grpc.as_ref().ok_or_else(|| A2aClientError::InvalidUrl {
            url: bound.interface.url.clone(),
            reason: "not a gRPC interface".into(),
        })
    }

    /// One unary RPC: converts `request`, calls `rpc` within the request timeout, converts the
    /// answer back.
    pub(super) async fn grpc_unary<T, P, R, A, F, Fut>(
        &self,
        bound: &Bound,
        request: T,
        rpc: F,
    ) -> Result<A, A2aClientError>
    where
        P: TryFrom<T>,
        P::Error: Display,
        A: TryFrom<R>,
        A::Error: Display,
        F: FnOnce(A2aServiceClient<Channel>, tonic::Request<P>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<R>, tonic::Status>>,
    {
        let url = bound.endpoint.to_string();
        let request = self.grpc_request(bound, request)?;
        let client = Self::target(bound)?.client();
        let answer = match tokio::time::timeout(self.options.request_timeout, rpc(client, request)).await {
            Err(_) => return Err(A2aClientError::Timeout { url }),
            Ok(answer) => answer.map_err(|status| status_error(&url, status))?,
        };
        A::try_from(answer.into_inner())
            .map_err(|error| A2aClientError::InvalidResponse { url, reason: error.to_string() })
    }

    /// Opens a server-streaming RPC (within the request timeout) as a [`Connection`] whose frames
    /// are already converted.
    pub(super) async fn grpc_open_stream(
        &self,
        bound: Arc<Bound>,
        call: StreamCall,
    ) -> Result<Connection, A2aClientError> {
        let url = bound.endpoint.to_string();
        let mut client = Self::target(&bound)?.client();
        let open = async {
            match call {
                StreamCall::Send(request) => {
                    client
                        .send_streaming_message(self.grpc_request::<_, pb::SendMessageRequest>(&bound, *request)?)
                        .await
                }
                StreamCall::Subscribe(request) => {
                    client.subscribe_to_task(self.grpc_request::<_, pb::SubscribeToTaskRequest>(&bound, request)?).await
                }
            }
            .map_err(|status| status_error(&url, status))
        };
        let streaming = match tokio::time::timeout(self.options.request_timeout, open).await {
            Err(_) => return Err(A2aClientError::Timeout { url }),
            Ok(answer) => answer?.into_inner(),
        };
        let frames_url = url.clone();
        let events = streaming.map(move |item| match item {
            Ok(message) => {
                StreamResponse::try_from(message).map(|response| Frame::Decoded(Box::new(response))).map_err(|error| {
                    StreamFault::Failed(A2aClientError::InvalidResponse {
                        url: frames_url.clone(),
                        reason: format!("stream event: {error}"),
                    })
                })
            }
            // A broken connection is worth a resubscription; the peer's error or an oversized
            // event is not.
            Err(status) => Err(match status_error(&frames_url, status) {
                A2aClientError::GrpcTransport { status, .. } => StreamFault::Dropped(status.to_string()),
                error => StreamFault::Failed(error),
            }),
        });
        Ok(Connection { url, rpc_id: None, bound, events: Box::pin(events) })
    }
}

/// Reads a failed RPC: a transport failure (the status came from the connection, not the peer),
/// an answer over [`MAX_RESPONSE_BYTES`], or the peer's `google.rpc.Status`.
fn status_error(url: &str, status: tonic::Status) -> A2aClientError {
    let local_limit = format!("the limit is: {MAX_RESPONSE_BYTES} bytes");
    if status.code() == tonic::Code::OutOfRange
        && status.details().is_empty()
        && status.message().contains(&local_limit)
    {
        return A2aClientError::InvalidResponse {
            url: url.to_owned(),
            reason: format!(
                "the response exceeds {MAX_RESPONSE_BYTES} bytes ({})",
                excerpt(status.message().as_bytes())
            ),
        };
    }
    let transport = std::error::Error::source(&status).is_some()
        || (status.code() == tonic::Code::Unavailable && status.details().is_empty());
    if transport {
        return A2aClientError::GrpcTransport { url: url.to_owned(), status };
    }
    A2aClientError::A2a { http_status: None, error: accord_grpc::status::from_status(&status) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_urls() {
        for (url, endpoint) in [
            ("127.0.0.1:50051", "http://127.0.0.1:50051/"),
            ("agent.example:443", "http://agent.example:443/"),
            (" [::1]:7 ", "http://[::1]:7/"),
            ("http://agent.example:8080", "http://agent.example:8080/"),
            ("http://agent.example/", "http://agent.example/"),
            ("https://agent.example", "https://agent.example/"),
            ("https://agent.example:8443/", "https://agent.example:8443/"),
        ] {
            assert_eq!(endpoint_url(url).map(String::from).as_deref(), Ok(endpoint), "{url}");
        }
        for (url, reason) in [
            ("", "empty"),
            ("agent.example", "the port is missing"),
            ("agent.example:x", "not host:port"),
            ("grpc://agent.example:1", "not a grpc URL"),
            ("ftp://agent.example:1", "not a ftp URL"),
            ("http://agent.example:1/a2a", "no path"),
            ("agent.example:1/a2a", "no path"),
            ("http://agent.example:1/?x=1", "no path, query"),
            ("http://user:pw@agent.example:1", "no credentials"),
            ("http://:1", "empty host"),
        ] {
            let error = endpoint_url(url).expect_err(url);
            assert!(error.contains(reason), "{url}: {error}");
        }
    }

    #[test]
    fn statuses_read_as_transport_oversize_or_a2a_errors() {
        let dropped = status_error("u", tonic::Status::unavailable("connection refused"));
        assert!(matches!(dropped, A2aClientError::GrpcTransport { .. }), "{dropped:?}");
        assert!(dropped.is_retryable());
        let oversized = status_error(
            "u",
            tonic::Status::out_of_range(format!(
                "Error, decoded message length too large: found 9000000 bytes, the limit is: {MAX_RESPONSE_BYTES} bytes"
            )),
        );
        assert!(matches!(oversized, A2aClientError::InvalidResponse { .. }), "{oversized:?}");
        let peer = accord_grpc::status::to_status(
            &accord_types::a2a::A2aError::new(accord_types::a2a::A2aErrorKind::TaskNotFound).with_message("gone"),
            accord_types::a2a::ErrorMapping::default(),
        );
        let error = status_error("u", peer);
        assert_eq!(error.kind(), Some(accord_types::a2a::A2aErrorKind::TaskNotFound));
        assert!(!error.is_retryable());
    }

    #[test]
    fn a_bad_grpc_url_fails_the_client_before_any_request() {
        let card = super::super::parse_card(serde_json::json!({
            "name": "peer", "description": "a peer", "version": "1.0.0", "capabilities": {},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"], "skills": [],
            "supportedInterfaces": [{"url": "peer.example/a2a", "protocolBinding": "GRPC", "protocolVersion": "1.0"}],
        }))
        .expect("card");
        let error = A2aClient::from_card(card, super::super::A2aClientOptions::default()).expect_err("bad URL");
        assert!(
            matches!(&error, A2aClientError::InvalidUrl { url, reason } if url == "peer.example/a2a" && reason.contains("no path")),
            "{error}"
        );
    }
}
