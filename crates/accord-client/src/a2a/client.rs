//! The A2A client: [`A2aClient`] and its options. It chooses the binding from the card, holds it
//! behind the [`Transport`] seam with the 0.3 fallback rule, and each public method builds its
//! request, calls the seam and returns the answer.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use accord_types::a2a::card::{PROTOCOL_BINDING_GRPC, PROTOCOL_BINDING_HTTP_JSON, PROTOCOL_BINDING_JSONRPC};
use accord_types::a2a::{
    A2aErrorKind, AgentCard, AgentInterface, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse, ListTasksRequest,
    ListTasksResponse, Message, Part, Role, SendMessageRequest, SendMessageResponse, SubscribeToTaskRequest, Task,
    TaskPushNotificationConfig,
};
use reqwest::header::HeaderMap;

use super::card::{choose_interface, choose_interface_v03, fetch_card};
#[cfg(feature = "grpc")]
use super::grpc::Grpc;
use super::http::HttpWire;
use super::jsonrpc::JsonRpc;
use super::rest::Rest;
use super::stream::{A2aEventStream, Policy, follow};
use super::transport::{Answer, Binding, Connection, ProtocolVersion, Streaming, Transport, Unary};
use super::v03::V03;
use crate::error::{ClientError, Operation};

/// The bindings tried when the caller names none, in order.
pub const DEFAULT_BINDINGS: [&str; 3] = [PROTOCOL_BINDING_JSONRPC, PROTOCOL_BINDING_HTTP_JSON, PROTOCOL_BINDING_GRPC];

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
    /// Extra trusted CA certificates and a client certificate ([`crate::TlsOptions::load`]), for
    /// the client's own HTTP client (when [`http`](Self::http) is `None`) and for gRPC over
    /// `https://`. Default: none (the platform's roots, no client certificate).
    pub tls: Option<crate::TlsConfig>,
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
            tls: None,
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

/// A fresh random message id (128 bits, hex).
pub fn new_message_id() -> String {
    crate::http::random_hex()
}

/// A user message with one text part and a fresh id.
pub fn user_text_message(text: impl Into<String>) -> Message {
    Message::new(new_message_id(), Role::User, vec![Part::text(text)])
}

/// An A2A client bound to one interface of one agent (1.0, with 0.3 as the fallback; see the
/// module documentation). Cheap to clone; clones share the fallback decision.
#[derive(Debug, Clone)]
pub struct A2aClient {
    card: Arc<AgentCard>,
    /// The binding chosen from the card: 1.0 when the card offers it, else 0.3.
    primary: Arc<dyn Transport>,
    /// The 0.3 binding used once a 1.0 peer answers `VersionNotSupported`.
    fallback: Option<Arc<dyn Transport>>,
    fell_back: Arc<AtomicBool>,
    options: Arc<A2aClientOptions>,
}

/// The transport of `binding` on `interface`, speaking `version`. The one place a binding is
/// named: everything after speaks through [`Transport`].
fn connect(
    binding: Binding,
    interface: &AgentInterface,
    version: ProtocolVersion,
    wire: &HttpWire,
    card: &AgentCard,
    // Only gRPC channels take it here: the HTTP bindings' client was built with it.
    #[cfg_attr(not(feature = "grpc"), expect(unused_variables))] tls: Option<&crate::TlsConfig>,
) -> Result<Arc<dyn Transport>, ClientError> {
    Ok(match (binding, version) {
        #[cfg(feature = "grpc")]
        (Binding::Grpc, ProtocolVersion::V1_0) => {
            {
                // A bare `host:port` is gRPC over TLS when the card's other interfaces are https.
                let secure = card.supported_interfaces.iter().any(|other| other.url.starts_with("https://"));
                Arc::new(Grpc::new(interface, wire.headers.clone(), wire.request_timeout, tls, secure)?)
            }
        }
        // Not reached: without the feature no interface is chosen as gRPC.
        #[cfg(not(feature = "grpc"))]
        (Binding::Grpc, ProtocolVersion::V1_0) => {
            return Err(ClientError::InvalidUrl {
                url: interface.url.clone(),
                reason: "this client was built without the `grpc` feature".into(),
            });
        }
        (Binding::JsonRpc, ProtocolVersion::V1_0) => Arc::new(JsonRpc::new(wire.clone(), interface)?),
        (Binding::HttpJson, ProtocolVersion::V1_0) => Arc::new(Rest::new(wire.clone(), interface)?),
        (binding, ProtocolVersion::V0_3) => Arc::new(V03::new(binding, wire.clone(), interface, card)?),
    })
}

impl A2aClient {
    /// Fetches the card (see [`fetch_card`]) and binds to the interface the options prefer.
    pub async fn from_card_url(url: &str, options: A2aClientOptions) -> Result<Self, ClientError> {
        let http = http_client(&options)?;
        let card = match fetch_card(&http, url, &options.headers).await {
            Ok(card) => card,
            Err(error) => return Err(explain(&options, error).await),
        };
        Self::build(http, card, options)
    }

    /// Binds to the interface of `card` the options prefer, without any network call.
    pub fn from_card(card: AgentCard, options: A2aClientOptions) -> Result<Self, ClientError> {
        let http = http_client(&options)?;
        Self::build(http, card, options)
    }

    fn build(http: reqwest::Client, card: AgentCard, options: A2aClientOptions) -> Result<Self, ClientError> {
        let wire = HttpWire { http, headers: options.headers.clone(), request_timeout: options.request_timeout };
        let at = |binding, interface, version| connect(binding, interface, version, &wire, &card, options.tls.as_ref());
        let (primary, fallback) = match choose_interface(&card, &options.bindings) {
            // No 0.3 fallback on gRPC: 0.3's gRPC is another service.
            Ok((binding @ Binding::Grpc, interface)) => (at(binding, interface, ProtocolVersion::V1_0)?, None),
            Ok((binding, interface)) => {
                let primary = at(binding, interface, ProtocolVersion::V1_0)?;
                // A 0.3 entry of the card when there is one, else 0.3 at the same URL.
                let fallback = match choose_interface_v03(&card, &options.bindings, Some(binding)) {
                    Some((binding, interface)) => at(binding, interface, ProtocolVersion::V0_3)?,
                    None => at(binding, interface, ProtocolVersion::V0_3)?,
                };
                (primary, Some(fallback))
            }
            Err(error) => match choose_interface_v03(&card, &options.bindings, None) {
                Some((binding, interface)) => (at(binding, interface, ProtocolVersion::V0_3)?, None),
                None => return Err(error),
            },
        };
        Ok(Self {
            card: Arc::new(card),
            primary,
            fallback,
            fell_back: Arc::new(AtomicBool::new(false)),
            options: Arc::new(options),
        })
    }

    /// The transport calls go to now.
    fn transport(&self) -> &Arc<dyn Transport> {
        match &self.fallback {
            Some(fallback) if self.fell_back.load(Ordering::Relaxed) => fallback,
            _ => &self.primary,
        }
    }

    /// Whether `error`, answered by `transport`, switches this client (and its clones) to 0.3:
    /// a 1.0 peer's `VersionNotSupported`, when there is a 0.3 binding to switch to.
    fn falls_back(&self, transport: &dyn Transport, error: &ClientError) -> bool {
        let switch = transport.version() == ProtocolVersion::V1_0
            && error.a2a_kind() == Some(A2aErrorKind::VersionNotSupported)
            && self.fallback.is_some();
        if switch {
            self.fell_back.store(true, Ordering::Relaxed);
        }
        switch
    }

    /// One operation through the seam, again on 0.3 when the fallback rule says so.
    async fn call(&self, request: Unary) -> Result<Answer, ClientError> {
        let transport = Arc::clone(self.transport());
        let answer = match transport.call(request.clone()).await {
            Err(error) if self.falls_back(transport.as_ref(), &error) => self.transport().call(request).await,
            other => other,
        };
        match answer {
            Err(error) => Err(explain(&self.options, error).await),
            answer => answer,
        }
    }

    /// Opens a stream through the seam (with the fallback rule), returning the transport that
    /// opened it: its reconnections go there too.
    async fn open(
        &self,
        request: Streaming,
        last_event_id: Option<&str>,
    ) -> Result<(Arc<dyn Transport>, Connection), ClientError> {
        let transport = Arc::clone(self.transport());
        match transport.open(request.clone(), last_event_id).await {
            Err(error) if self.falls_back(transport.as_ref(), &error) => {
                let transport = Arc::clone(self.transport());
                let connection = transport.open(request, last_event_id).await?;
                Ok((transport, connection))
            }
            Ok(connection) => Ok((transport, connection)),
            Err(error) => Err(explain(&self.options, error).await),
        }
    }

    fn policy(&self) -> Policy {
        Policy {
            stream_idle_timeout: self.options.stream_idle_timeout,
            max_reconnects: self.options.max_reconnects,
            reconnect_delay: self.options.reconnect_delay,
        }
    }

    /// The agent card the client was built from.
    pub fn card(&self) -> &AgentCard {
        &self.card
    }

    /// The interface in use.
    pub fn interface(&self) -> &AgentInterface {
        self.transport().interface()
    }

    /// The binding in use.
    pub fn binding(&self) -> Binding {
        self.transport().binding()
    }

    /// The protocol version in use: 1.0, or 0.3 when the card offers only 0.3 or the peer
    /// refused 1.0 with `VersionNotSupported`.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.transport().version()
    }

    /// `SendMessage`: the task (once terminal or interrupted, unless
    /// `configuration.returnImmediately`) or the agent's direct message.
    pub async fn send_message(&self, request: SendMessageRequest) -> Result<SendMessageResponse, ClientError> {
        match self.call(Unary::SendMessage(Box::new(request))).await? {
            Answer::Message(response) => Ok(response),
            other => Err(other.mismatch(Operation::SendMessage, self.transport().endpoint())),
        }
    }

    /// `SendStreamingMessage`: the task (or a message), then its updates.
    pub async fn send_streaming_message(&self, request: SendMessageRequest) -> Result<A2aEventStream, ClientError> {
        let (transport, connection) = self.open(Streaming::SendMessage(Box::new(request)), None).await?;
        Ok(follow(transport, self.policy(), connection, None, None))
    }

    /// `GetTask`, with at most `history_length` recent messages when set.
    pub async fn get_task(&self, id: &str, history_length: Option<i32>) -> Result<Task, ClientError> {
        let request = GetTaskRequest { tenant: None, id: id.to_owned(), history_length };
        match self.call(Unary::GetTask(request)).await? {
            Answer::Task(task) => Ok(task),
            other => Err(other.mismatch(Operation::GetTask, self.transport().endpoint())),
        }
    }

    /// `ListTasks`: one page of the caller's tasks. A2A 0.3 has no such operation: against a
    /// 0.3 peer this is [`A2aErrorKind::UnsupportedOperation`], without a request.
    pub async fn list_tasks(&self, request: ListTasksRequest) -> Result<ListTasksResponse, ClientError> {
        match self.call(Unary::ListTasks(request)).await? {
            Answer::Tasks(tasks) => Ok(tasks),
            other => Err(other.mismatch(Operation::ListTasks, self.transport().endpoint())),
        }
    }

    /// `CancelTask`: the task as canceled.
    pub async fn cancel_task(&self, id: &str) -> Result<Task, ClientError> {
        let request = CancelTaskRequest { tenant: None, id: id.to_owned(), metadata: None };
        match self.call(Unary::CancelTask(request)).await? {
            Answer::Task(task) => Ok(task),
            other => Err(other.mismatch(Operation::CancelTask, self.transport().endpoint())),
        }
    }

    /// `SubscribeToTask`: the current task, then its updates until it settles.
    pub async fn subscribe(&self, id: &str) -> Result<A2aEventStream, ClientError> {
        self.subscribe_after(id, None).await
    }

    /// `SubscribeToTask` resuming after the SSE event `last_event_id` (sent as `Last-Event-ID`):
    /// the updates after that event, without a new snapshot on servers that keep a log.
    pub async fn subscribe_after(&self, id: &str, last_event_id: Option<&str>) -> Result<A2aEventStream, ClientError> {
        let request = Streaming::Subscribe(SubscribeToTaskRequest { tenant: None, id: id.to_owned() });
        let (transport, connection) = self.open(request, last_event_id).await?;
        Ok(follow(transport, self.policy(), connection, Some(id.to_owned()), last_event_id.map(str::to_owned)))
    }

    /// `GetExtendedAgentCard`: the card an authenticated caller may see.
    pub async fn get_extended_card(&self) -> Result<AgentCard, ClientError> {
        match self.call(Unary::GetExtendedCard(GetExtendedAgentCardRequest::default())).await? {
            Answer::Card(card) => Ok(*card),
            other => Err(other.mismatch(Operation::GetExtendedCard, self.transport().endpoint())),
        }
    }

    /// `CreateTaskPushNotificationConfig`: registers a webhook for `config.taskId`.
    pub async fn create_push_config(
        &self,
        config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, ClientError> {
        match self.call(Unary::CreatePushConfig(config)).await? {
            Answer::PushConfig(config) => Ok(config),
            other => Err(other.mismatch(Operation::CreatePushConfig, self.transport().endpoint())),
        }
    }

    /// `GetTaskPushNotificationConfig`.
    pub async fn get_push_config(
        &self,
        request: GetTaskPushNotificationConfigRequest,
    ) -> Result<TaskPushNotificationConfig, ClientError> {
        match self.call(Unary::GetPushConfig(request)).await? {
            Answer::PushConfig(config) => Ok(config),
            other => Err(other.mismatch(Operation::GetPushConfig, self.transport().endpoint())),
        }
    }

    /// `ListTaskPushNotificationConfigs`.
    pub async fn list_push_configs(
        &self,
        request: ListTaskPushNotificationConfigsRequest,
    ) -> Result<ListTaskPushNotificationConfigsResponse, ClientError> {
        match self.call(Unary::ListPushConfigs(request)).await? {
            Answer::PushConfigs(configs) => Ok(configs),
            other => Err(other.mismatch(Operation::ListPushConfigs, self.transport().endpoint())),
        }
    }

    /// `DeleteTaskPushNotificationConfig`.
    pub async fn delete_push_config(
        &self,
        request: DeleteTaskPushNotificationConfigRequest,
    ) -> Result<(), ClientError> {
        match self.call(Unary::DeletePushConfig(request)).await? {
            Answer::Deleted => Ok(()),
            other => Err(other.mismatch(Operation::DeletePushConfig, self.transport().endpoint())),
        }
    }
}

/// `error` with the cause of a refused TLS handshake when a second handshake finds one
/// ([`crate::TlsConfig::refusal`]), tried with the options' TLS setting (or the defaults).
async fn explain(options: &A2aClientOptions, error: ClientError) -> ClientError {
    match &options.tls {
        Some(tls) => tls.explain(error).await,
        None => crate::TlsConfig::default().explain(error).await,
    }
}

fn http_client(options: &A2aClientOptions) -> Result<reqwest::Client, ClientError> {
    match &options.http {
        Some(http) => Ok(http.clone()),
        None => match &options.tls {
            Some(tls) => tls.http_client(),
            None => reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(10))
                .build()
                .map_err(ClientError::HttpClient),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::DEFAULT_BINDINGS;
    use crate::a2a::card::{major_minor, parse_card, test_card};
    use serde_json::json;

    fn prefer(bindings: &[&str]) -> Vec<String> {
        bindings.iter().map(|binding| (*binding).to_owned()).collect()
    }

    #[test]
    fn the_first_preferred_binding_at_version_1_0_wins_and_custom_ones_are_skipped() {
        let card = parse_card(test_card(json!([
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
        #[cfg(not(feature = "grpc"))]
        {
            let (binding, _) = choose_interface(&card, &prefer(&["GRPC", "JSONRPC"])).expect("interface");
            assert_eq!(binding, Binding::JsonRpc, "without the grpc feature, GRPC entries are passed over");
        }
        #[cfg(feature = "grpc")]
        {
            let (binding, interface) = choose_interface(&card, &prefer(&["GRPC", "JSONRPC"])).expect("interface");
            assert_eq!((binding, interface.url.as_str()), (Binding::Grpc, "h:1"), "gRPC first when asked");
            let grpc_only = parse_card(test_card(json!([
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
            assert_eq!(client.primary.endpoint().as_str(), "http://h:1/");
        }
        let only_03 = parse_card(test_card(
            json!([{"url": "http://h/", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}]),
        ))
        .expect("card");
        let error = choose_interface(&only_03, &prefer(&DEFAULT_BINDINGS)).expect_err("0.3 only");
        assert!(matches!(&error, ClientError::NoCompatibleInterface { offered, .. } if offered == &["JSONRPC@0.3"]));
        let v11 = parse_card(test_card(
            json!([{"url": "http://h/", "protocolBinding": "JSONRPC", "protocolVersion": "1.1"}]),
        ))
        .expect("card");
        assert!(choose_interface(&v11, &prefer(&DEFAULT_BINDINGS)).is_ok(), "another 1.x when no 1.0");
        let lowercase = parse_card(test_card(
            json!([{"url": "http://h/", "protocolBinding": "jsonrpc", "protocolVersion": "1.0"}]),
        ))
        .expect("card");
        assert!(choose_interface(&lowercase, &prefer(&DEFAULT_BINDINGS)).is_err(), "bindings match exactly");
    }

    #[test]
    fn a_card_is_strict_where_it_matters() {
        let broken_jsonrpc = test_card(json!([{"url": "http://h/", "protocolBinding": "JSONRPC"}]));
        assert!(parse_card(broken_jsonrpc).is_err(), "a spoken binding must be well-formed");
        let mut no_name =
            test_card(json!([{"url": "http://h/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]));
        no_name.as_object_mut().map(|card| card.remove("name"));
        assert!(parse_card(no_name).is_err());
        let error = A2aClient::from_card(
            parse_card(test_card(json!([{"url": "http://h/", "protocolBinding": "urn:x", "protocolVersion": "1.0"}])))
                .expect("card"),
            A2aClientOptions::default(),
        )
        .expect_err("no interface");
        assert!(error.to_string().contains("no compatible interface"), "{error}");
        let error = A2aClient::from_card(
            parse_card(test_card(json!([{"url": "ftp://h/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}])))
                .expect("card"),
            A2aClientOptions::default(),
        )
        .expect_err("bad URL");
        assert!(matches!(error, ClientError::InvalidUrl { .. }));
    }

    #[tokio::test]
    async fn no_compatible_interface_makes_no_request() {
        // A card whose only interface is unreachable: the error must come before any connection.
        let card = parse_card(test_card(
            json!([{"url": "http://192.0.2.1/", "protocolBinding": "urn:x:binding", "protocolVersion": "1.0"}]),
        ))
        .expect("card");
        let started = std::time::Instant::now();
        let error = A2aClient::from_card(card, A2aClientOptions::default()).expect_err("none");
        assert!(matches!(error, ClientError::NoCompatibleInterface { .. }));
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

    #[test]
    #[cfg(feature = "grpc")]
    fn a_bad_grpc_url_fails_the_client_before_any_request() {
        let card = parse_card(serde_json::json!({
            "name": "peer", "description": "a peer", "version": "1.0.0", "capabilities": {},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"], "skills": [],
            "supportedInterfaces": [{"url": "peer.example/a2a", "protocolBinding": "GRPC", "protocolVersion": "1.0"}],
        }))
        .expect("card");
        let error = A2aClient::from_card(card, A2aClientOptions::default()).expect_err("bad URL");
        assert!(
            matches!(&error, ClientError::InvalidUrl { url, reason } if url == "peer.example/a2a" && reason.contains("no path")),
            "{error}"
        );
    }

    #[test]
    #[cfg(not(feature = "grpc"))]
    fn without_the_grpc_feature_a_grpc_only_card_offers_nothing() {
        let card = parse_card(serde_json::json!({
            "name": "peer", "description": "a peer", "version": "1.0.0", "capabilities": {},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"], "skills": [],
            "supportedInterfaces": [{"url": "peer.example:443", "protocolBinding": "GRPC", "protocolVersion": "1.0"}],
        }))
        .expect("card");
        let error = A2aClient::from_card(card, A2aClientOptions::default()).expect_err("nothing spoken");
        assert!(
            matches!(&error, ClientError::NoCompatibleInterface { offered, .. } if offered == &["GRPC@1.0"]),
            "{error}"
        );
        assert_eq!(Binding::from_name("GRPC"), None);
    }
}
