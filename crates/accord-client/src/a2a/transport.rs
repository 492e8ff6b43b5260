//! The seam between [`A2aClient`](super::A2aClient) and the wire: the A2A operations as values
//! ([`Unary`], [`Streaming`], [`Answer`]) and the [`Transport`] every binding implements —
//! JSON-RPC, HTTP+JSON and gRPC at 1.0, and the 0.3 dialect as an adapter over the first two.
//! Also the names the bindings share (version, binding, the size cap). It imports no binding.

use std::fmt::Debug;
use std::pin::Pin;

use accord_types::a2a::card::{PROTOCOL_BINDING_GRPC, PROTOCOL_BINDING_HTTP_JSON, PROTOCOL_BINDING_JSONRPC};
use accord_types::a2a::jsonrpc::methods;
use accord_types::a2a::{
    AgentCard, AgentInterface, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest, GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, ListTasksRequest, ListTasksResponse, SendMessageRequest,
    SendMessageResponse, StreamResponse, SubscribeToTaskRequest, Task, TaskPushNotificationConfig,
};
use async_trait::async_trait;
use futures_util::Stream;
use reqwest::Url;

use crate::error::{ClientError, Operation, Site};

/// The protocol version this client speaks, sent as `A2A-Version` on every request.
pub const A2A_VERSION: &str = "1.0";

/// The name of the version header.
pub const A2A_VERSION_HEADER: &str = "a2a-version";

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

    /// The binding named exactly `name`, if this client speaks it (`GRPC` only when built with
    /// the `grpc` feature).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            PROTOCOL_BINDING_JSONRPC => Some(Self::JsonRpc),
            PROTOCOL_BINDING_HTTP_JSON => Some(Self::HttpJson),
            PROTOCOL_BINDING_GRPC if cfg!(feature = "grpc") => Some(Self::Grpc),
            _ => None,
        }
    }
}

impl std::fmt::Display for Binding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
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

/// An A2A operation answered once, with its 1.0 request.
#[derive(Debug, Clone)]
pub(crate) enum Unary {
    SendMessage(Box<SendMessageRequest>),
    GetTask(GetTaskRequest),
    ListTasks(ListTasksRequest),
    CancelTask(CancelTaskRequest),
    GetExtendedCard(GetExtendedAgentCardRequest),
    CreatePushConfig(TaskPushNotificationConfig),
    GetPushConfig(GetTaskPushNotificationConfigRequest),
    ListPushConfigs(ListTaskPushNotificationConfigsRequest),
    DeletePushConfig(DeleteTaskPushNotificationConfigRequest),
}

impl Unary {
    /// The 1.0 method name (JSON-RPC `method`, gRPC RPC).
    pub(crate) fn method(&self) -> &'static str {
        match self {
            Self::SendMessage(_) => methods::SEND_MESSAGE,
            Self::GetTask(_) => methods::GET_TASK,
            Self::ListTasks(_) => methods::LIST_TASKS,
            Self::CancelTask(_) => methods::CANCEL_TASK,
            Self::GetExtendedCard(_) => methods::GET_EXTENDED_AGENT_CARD,
            Self::CreatePushConfig(_) => methods::CREATE_TASK_PUSH_NOTIFICATION_CONFIG,
            Self::GetPushConfig(_) => methods::GET_TASK_PUSH_NOTIFICATION_CONFIG,
            Self::ListPushConfigs(_) => methods::LIST_TASK_PUSH_NOTIFICATION_CONFIGS,
            Self::DeletePushConfig(_) => methods::DELETE_TASK_PUSH_NOTIFICATION_CONFIG,
        }
    }

    /// The call, for errors.
    pub(crate) fn operation(&self) -> Operation {
        match self {
            Self::SendMessage(_) => Operation::SendMessage,
            Self::GetTask(_) => Operation::GetTask,
            Self::ListTasks(_) => Operation::ListTasks,
            Self::CancelTask(_) => Operation::CancelTask,
            Self::GetExtendedCard(_) => Operation::GetExtendedCard,
            Self::CreatePushConfig(_) => Operation::CreatePushConfig,
            Self::GetPushConfig(_) => Operation::GetPushConfig,
            Self::ListPushConfigs(_) => Operation::ListPushConfigs,
            Self::DeletePushConfig(_) => Operation::DeletePushConfig,
        }
    }

    /// Copies the interface's tenant into the request when it has none (1.0 bindings).
    pub(crate) fn fill_tenant(&mut self, interface: &AgentInterface) {
        let tenant = match self {
            Self::SendMessage(request) => &mut request.tenant,
            Self::GetTask(request) => &mut request.tenant,
            Self::ListTasks(request) => &mut request.tenant,
            Self::CancelTask(request) => &mut request.tenant,
            Self::GetExtendedCard(request) => &mut request.tenant,
            Self::CreatePushConfig(config) => &mut config.tenant,
            Self::GetPushConfig(request) => &mut request.tenant,
            Self::ListPushConfigs(request) => &mut request.tenant,
            Self::DeletePushConfig(request) => &mut request.tenant,
        };
        fill_tenant(interface, tenant);
    }
}

/// What a [`Unary`] operation answers, in the 1.0 types whatever the binding and version.
#[derive(Debug)]
pub(crate) enum Answer {
    Message(SendMessageResponse),
    Task(Task),
    Tasks(ListTasksResponse),
    Card(Box<AgentCard>),
    PushConfig(TaskPushNotificationConfig),
    PushConfigs(ListTaskPushNotificationConfigsResponse),
    Deleted,
}

impl Answer {
    /// The error for an answer of another operation than the one asked (a binding's bug, never
    /// the peer's doing, but not worth a panic).
    pub(crate) fn mismatch(self, operation: Operation, url: &Url) -> ClientError {
        ClientError::invalid(operation, url, "an answer to another operation")
    }
}

/// An A2A operation answered by a stream of events.
#[derive(Debug, Clone)]
pub(crate) enum Streaming {
    SendMessage(Box<SendMessageRequest>),
    Subscribe(SubscribeToTaskRequest),
}

impl Streaming {
    /// The call, for errors.
    pub(crate) fn operation(&self) -> Operation {
        match self {
            Self::SendMessage(_) => Operation::SendStreamingMessage,
            Self::Subscribe(_) => Operation::SubscribeTask,
        }
    }

    /// Copies the interface's tenant into the request when it has none (1.0 bindings).
    pub(crate) fn fill_tenant(&mut self, interface: &AgentInterface) {
        match self {
            Self::SendMessage(request) => fill_tenant(interface, &mut request.tenant),
            Self::Subscribe(request) => fill_tenant(interface, &mut request.tenant),
        }
    }
}

/// Copies the interface's tenant into a request's `tenant` when it has none.
pub(crate) fn fill_tenant(interface: &AgentInterface, tenant: &mut Option<String>) {
    if tenant.is_none() {
        *tenant = interface.tenant.clone().filter(|tenant| !tenant.is_empty());
    }
}

/// An open event stream: each event already read by its binding, with its SSE id (gRPC events
/// have none).
pub(crate) struct Connection {
    /// Where the stream came from, for errors.
    pub(crate) site: Site,
    pub(crate) events: Events,
}

/// The events of a connection: each with its SSE id, or why they stopped.
pub(crate) type Events = Pin<Box<dyn Stream<Item = Result<(Option<String>, StreamResponse), StreamFault>> + Send>>;

/// Why a connection's events stopped.
pub(crate) enum StreamFault {
    /// The connection failed: worth reconnecting.
    Dropped(String),
    /// The peer sent something no reconnection will fix (an event over the size limit).
    Fatal(String),
    /// The peer answered with an error, or an event that cannot be read: yielded as is.
    Failed(ClientError),
}

/// What a transport knows of the interface it talks to, the same for every binding: the card's
/// entry, where calls go, and the binding and version spoken. Each binding holds one, and the
/// [`Transport`] getters read it.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) binding: Binding,
    pub(crate) version: ProtocolVersion,
    pub(crate) interface: AgentInterface,
    /// The URL calls go to (for gRPC: the channel's origin, `http(s)://host:port/`).
    pub(crate) endpoint: Url,
}

impl Target {
    /// The card's `interface`, spoken in `binding` at `version`, its calls going to `endpoint`.
    pub(crate) fn new(binding: Binding, version: ProtocolVersion, interface: &AgentInterface, endpoint: Url) -> Self {
        Self { binding, version, interface: interface.clone(), endpoint }
    }
}

/// One binding of one interface, in one protocol version: how an A2A operation travels.
///
/// In the manner of rmcp's `Transport`, the client above it builds the request and reads the
/// answer; the binding only moves them. It is a trait object (`Arc<dyn Transport>`) rather than
/// an enum of the bindings or a generic parameter: the binding is chosen at run time from the
/// card, a client switches from 1.0 to the 0.3 adapter in place, and the public `A2aClient`
/// keeps no type parameter. Requests and answers are enums of the operations so the trait stays
/// object-safe; one dynamic call per request costs nothing beside the network.
#[async_trait]
pub(crate) trait Transport: Debug + Send + Sync {
    /// The interface talked to, in which binding and version.
    fn target(&self) -> &Target;
    /// The binding spoken.
    fn binding(&self) -> Binding {
        self.target().binding
    }
    /// The protocol version spoken.
    fn version(&self) -> ProtocolVersion {
        self.target().version
    }
    /// The card's interface this transport talks to.
    fn interface(&self) -> &AgentInterface {
        &self.target().interface
    }
    /// The URL calls go to (for gRPC: the channel's origin, `http(s)://host:port/`).
    fn endpoint(&self) -> &Url {
        &self.target().endpoint
    }
    /// Sends one operation and reads its answer.
    async fn call(&self, request: Unary) -> Result<Answer, ClientError>;
    /// Opens a stream; `last_event_id` (sent as `Last-Event-ID` where the binding has SSE ids)
    /// resumes after that event.
    async fn open(&self, request: Streaming, last_event_id: Option<&str>) -> Result<Connection, ClientError>;
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

/// The task a stream response is about (`None` for a message without a task).
pub(crate) fn task_id_of(response: &StreamResponse) -> Option<&str> {
    match response {
        StreamResponse::Task(task) => Some(&task.id),
        StreamResponse::Message(message) => message.task_id.as_deref(),
        StreamResponse::StatusUpdate(update) => Some(&update.task_id),
        StreamResponse::ArtifactUpdate(update) => Some(&update.task_id),
    }
}
