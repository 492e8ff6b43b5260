//! The gRPC binding (`GRPC`, spec §10): every call of [`A2aClient`] as an RPC of
//! `lf.a2a.v1.A2AService`, through the generated client of [`accord_grpc::pb`] and the message
//! conversions of [`accord_grpc`].
//!
//! The interface `url` is `host:port` (spec), spoken in plaintext HTTP/2 (h2c) as the official
//! SDKs and the TCK do; `http://host:port` means the same, and `https://host:port` is HTTP/2 over
//! TLS (rustls, the system's root certificates and those of [`A2aClientOptions::tls`], which also
//! gives the client certificate). The channel connects on the first call and is
//! shared by the client's clones. The caller's [`A2aClientOptions::headers`] travel as metadata
//! (lowercase keys), with `a2a-version: 1.0`. Errors are `google.rpc.Status` answers, read by
//! [`accord_grpc::status::from_status`]; a stream has no event ids.
//!
//! [`A2aClientOptions::headers`]: super::A2aClientOptions::headers
//! [`A2aClientOptions::tls`]: super::A2aClientOptions::tls

use std::fmt::Display;
use std::sync::OnceLock;
use std::time::Duration;

use accord_grpc::pb;
use accord_grpc::pb::a2a_service_client::A2aServiceClient;
use accord_types::a2a::{AgentInterface, StreamResponse};
use async_trait::async_trait;
use futures_util::StreamExt;
use reqwest::Url;
use reqwest::header::HeaderMap;
use tonic::metadata::MetadataMap;
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};

use super::transport::{
    A2A_VERSION, A2A_VERSION_HEADER, Answer, Binding, Connection, ProtocolVersion, StreamFault, Streaming, Target,
    Transport, Unary,
};
use crate::error::{ClientError, Operation, Site};
use crate::http::{MAX_RESPONSE_BYTES, excerpt};

/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The gRPC binding of one interface: where it is, and its channel once the first call opened it.
#[derive(Debug)]
pub(crate) struct Grpc {
    /// Its endpoint is the channel's origin, `http(s)://host:port/`.
    target: Target,
    endpoint: Endpoint,
    channel: OnceLock<Channel>,
    headers: HeaderMap,
    request_timeout: Duration,
}

impl Grpc {
    /// The binding of the gRPC interface `interface` (its URL read by [`endpoint_url`]).
    pub(crate) fn new(
        interface: &AgentInterface,
        headers: HeaderMap,
        request_timeout: Duration,
        tls: Option<&crate::TlsConfig>,
        secure: bool,
    ) -> Result<Self, ClientError> {
        let url = &interface.url;
        let invalid = |reason: String| ClientError::InvalidUrl { url: url.to_owned(), reason };
        let endpoint_url = endpoint_url(url, secure).map_err(invalid)?;
        let origin = endpoint_url.as_str().trim_end_matches('/').to_owned();
        let mut endpoint =
            Endpoint::from_shared(origin).map_err(|error| invalid(error.to_string()))?.connect_timeout(CONNECT_TIMEOUT);
        if endpoint_url.scheme() == "https" {
            endpoint = endpoint
                .tls_config(tls.map_or_else(|| ClientTlsConfig::new().with_native_roots(), crate::TlsConfig::grpc))
                .map_err(|error| invalid(format!("TLS: {error}")))?;
        }
        Ok(Self {
            target: Target::new(Binding::Grpc, ProtocolVersion::V1_0, interface, endpoint_url),
            endpoint,
            channel: OnceLock::new(),
            headers,
            request_timeout,
        })
    }

    /// The generated client on this target's channel (opened lazily: no connection is made
    /// before the first request).
    fn client(&self) -> A2aServiceClient<Channel> {
        let channel = self.channel.get_or_init(|| self.endpoint.connect_lazy()).clone();
        A2aServiceClient::new(channel).max_decoding_message_size(MAX_RESPONSE_BYTES)
    }

    /// A gRPC request: the converted message, with the caller's headers and `a2a-version` as
    /// metadata.
    fn request<T, P>(&self, operation: Operation, message: T) -> Result<tonic::Request<P>, ClientError>
    where
        P: TryFrom<T>,
        P::Error: Display,
    {
        let message = P::try_from(message)
            .map_err(|error| ClientError::invalid(operation, &self.target.endpoint, format!("request: {error}")))?;
        let mut headers = self.headers.clone();
        headers.insert(A2A_VERSION_HEADER, http::HeaderValue::from_static(A2A_VERSION));
        // Reserved names (`content-type`, `te`, `grpc-*` …) are removed by tonic when it sends.
        Ok(tonic::Request::from_parts(MetadataMap::from_headers(headers), tonic::Extensions::default(), message))
    }

    /// One unary RPC: converts `request`, calls `rpc` within the request timeout, converts the
    /// answer back.
    async fn unary<T, P, R, A, F, Fut>(&self, operation: Operation, request: T, rpc: F) -> Result<A, ClientError>
    where
        P: TryFrom<T>,
        P::Error: Display,
        A: TryFrom<R>,
        A::Error: Display,
        F: FnOnce(A2aServiceClient<Channel>, tonic::Request<P>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<R>, tonic::Status>>,
    {
        let site = Site::new(operation, &self.target.endpoint);
        let request = self.request(operation, request)?;
        let answer = match tokio::time::timeout(self.request_timeout, rpc(self.client(), request)).await {
            Err(_) => return Err(ClientError::Timeout { operation, url: site.url }),
            Ok(answer) => answer.map_err(|status| status_error(&site, status))?,
        };
        A::try_from(answer.into_inner()).map_err(|error| site.invalid(error.to_string()))
    }
}

#[async_trait]
impl Transport for Grpc {
    fn target(&self) -> &Target {
        &self.target
    }

    async fn call(&self, mut request: Unary) -> Result<Answer, ClientError> {
        request.fill_tenant(&self.target.interface);
        let op = request.operation();
        Ok(match request {
            Unary::SendMessage(request) => Answer::Message(
                self.unary::<_, pb::SendMessageRequest, _, _, _, _>(op, *request, |mut c, r| async move {
                    c.send_message(r).await
                })
                .await?,
            ),
            Unary::GetTask(request) => {
                Answer::Task(
                    self.unary::<_, pb::GetTaskRequest, _, _, _, _>(op, request, |mut c, r| async move {
                        c.get_task(r).await
                    })
                    .await?,
                )
            }
            Unary::ListTasks(request) => Answer::Tasks(
                self.unary::<_, pb::ListTasksRequest, _, _, _, _>(op, request, |mut c, r| async move {
                    c.list_tasks(r).await
                })
                .await?,
            ),
            Unary::CancelTask(request) => Answer::Task(
                self.unary::<_, pb::CancelTaskRequest, _, _, _, _>(op, request, |mut c, r| async move {
                    c.cancel_task(r).await
                })
                .await?,
            ),
            Unary::GetExtendedCard(request) => Answer::Card(Box::new(
                self.unary::<_, pb::GetExtendedAgentCardRequest, _, _, _, _>(op, request, |mut c, r| async move {
                    c.get_extended_agent_card(r).await
                })
                .await?,
            )),
            Unary::CreatePushConfig(config) => Answer::PushConfig(
                self.unary::<_, pb::TaskPushNotificationConfig, _, _, _, _>(op, config, |mut c, r| async move {
                    c.create_task_push_notification_config(r).await
                })
                .await?,
            ),
            Unary::GetPushConfig(request) => Answer::PushConfig(
                self.unary::<_, pb::GetTaskPushNotificationConfigRequest, _, _, _, _>(
                    op,
                    request,
                    |mut c, r| async move { c.get_task_push_notification_config(r).await },
                )
                .await?,
            ),
            Unary::ListPushConfigs(request) => Answer::PushConfigs(
                self.unary::<_, pb::ListTaskPushNotificationConfigsRequest, _, _, _, _>(
                    op,
                    request,
                    |mut c, r| async move { c.list_task_push_notification_configs(r).await },
                )
                .await?,
            ),
            Unary::DeletePushConfig(request) => {
                self.unary::<_, pb::DeleteTaskPushNotificationConfigRequest, _, (), _, _>(
                    op,
                    request,
                    |mut c, r| async move { c.delete_task_push_notification_config(r).await },
                )
                .await?;
                Answer::Deleted
            }
        })
    }

    /// Opens a server-streaming RPC (within the request timeout). gRPC events have no ids: a
    /// subscription starts with the task's snapshot, and `last_event_id` is not sent.
    async fn open(&self, mut request: Streaming, _last_event_id: Option<&str>) -> Result<Connection, ClientError> {
        request.fill_tenant(&self.target.interface);
        let op = request.operation();
        let site = Site::new(op, &self.target.endpoint);
        let mut client = self.client();
        let open = async {
            match request {
                Streaming::SendMessage(request) => {
                    client.send_streaming_message(self.request::<_, pb::SendMessageRequest>(op, *request)?).await
                }
                Streaming::Subscribe(request) => {
                    client.subscribe_to_task(self.request::<_, pb::SubscribeToTaskRequest>(op, request)?).await
                }
            }
            .map_err(|status| status_error(&site, status))
        };
        let streaming = match tokio::time::timeout(self.request_timeout, open).await {
            Err(_) => return Err(ClientError::Timeout { operation: op, url: site.url }),
            Ok(answer) => answer?.into_inner(),
        };
        let opened = site.clone();
        let events = streaming.map(move |item| match item {
            Ok(message) => StreamResponse::try_from(message)
                .map(|response| (None, response))
                .map_err(|error| StreamFault::Failed(site.invalid(format!("stream event: {error}")))),
            // A broken connection is worth a resubscription; the peer's error or an oversized
            // event is not.
            Err(status) => Err(match status_error(&site, status) {
                ClientError::GrpcTransport { status, .. } => StreamFault::Dropped(status.to_string()),
                error => StreamFault::Failed(error),
            }),
        });
        Ok(Connection { site: opened, events: Box::pin(events) })
    }
}

/// Reads a gRPC interface URL: `host:port` (plaintext, or TLS when `secure`: the card that lists
/// it was served over https), `http://host[:port]` (plaintext, port 80
/// by default) or `https://host[:port]` (TLS, port 443 by default). IPv6 hosts are written in
/// brackets. Anything else — another scheme, a path, a query, credentials, a bare host without a
/// port — is refused, with the reason.
pub(crate) fn endpoint_url(url: &str, secure: bool) -> Result<Url, String> {
    let trimmed = url.trim();
    if trimmed.is_empty() {
        return Err("a gRPC interface URL is empty".into());
    }
    let explicit = trimmed.contains("://");
    let parsed = if explicit {
        Url::parse(trimmed).map_err(|error| error.to_string())?
    } else {
        let scheme = if secure { "https" } else { "http" };
        Url::parse(&format!("{scheme}://{trimmed}")).map_err(|error| format!("not host:port: {error}"))?
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

/// Reads a failed RPC: a transport failure (the status came from the connection, not the peer),
/// an answer over [`MAX_RESPONSE_BYTES`], or the peer's `google.rpc.Status`.
fn status_error(site: &Site, status: tonic::Status) -> ClientError {
    let local_limit = format!("the limit is: {MAX_RESPONSE_BYTES} bytes");
    if status.code() == tonic::Code::OutOfRange
        && status.details().is_empty()
        && status.message().contains(&local_limit)
    {
        return site.invalid(format!(
            "the response exceeds {MAX_RESPONSE_BYTES} bytes ({})",
            excerpt(status.message().as_bytes())
        ));
    }
    let transport = std::error::Error::source(&status).is_some()
        || (status.code() == tonic::Code::Unavailable && status.details().is_empty());
    if transport {
        return ClientError::GrpcTransport {
            operation: site.operation,
            url: site.url.clone(),
            status: Box::new(status),
            handshake: None,
        };
    }
    site.a2a(None, accord_grpc::status::from_status(&status))
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
            assert_eq!(endpoint_url(url, false).map(String::from).as_deref(), Ok(endpoint), "{url}");
        }
        // A bare address on a card of https interfaces is gRPC over TLS; explicit schemes hold.
        assert_eq!(endpoint_url("127.0.0.1:50051", true).map(String::from).as_deref(), Ok("https://127.0.0.1:50051/"));
        assert_eq!(endpoint_url("http://h:1", true).map(String::from).as_deref(), Ok("http://h:1/"));
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
            let error = endpoint_url(url, false).expect_err(url);
            assert!(error.contains(reason), "{url}: {error}");
        }
    }

    #[test]
    fn statuses_read_as_transport_oversize_or_a2a_errors() {
        let site = Site::new(Operation::GetTask, "u");
        let dropped = status_error(&site, tonic::Status::unavailable("connection refused"));
        assert!(matches!(dropped, ClientError::GrpcTransport { .. }), "{dropped:?}");
        assert!(dropped.is_retryable());
        let oversized = status_error(
            &site,
            tonic::Status::out_of_range(format!(
                "Error, decoded message length too large: found 9000000 bytes, the limit is: {MAX_RESPONSE_BYTES} bytes"
            )),
        );
        assert!(matches!(oversized, ClientError::InvalidResponse { .. }), "{oversized:?}");
        let peer = accord_grpc::status::to_status(
            &accord_types::a2a::A2aError::new(accord_types::a2a::A2aErrorKind::TaskNotFound).with_message("gone"),
            accord_types::a2a::ErrorMapping::default(),
        );
        let error = status_error(&site, peer);
        assert_eq!(error.a2a_kind(), Some(accord_types::a2a::A2aErrorKind::TaskNotFound));
        assert!(!error.is_retryable());
    }
}
