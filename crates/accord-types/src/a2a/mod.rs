//! The official A2A v1.0 wire types, in ProtoJSON.
//!
//! Every message of the normative `specification/a2a.proto` (package `lf.a2a.v1`) that crosses
//! the JSON-RPC or HTTP+JSON bindings, with serde following the ProtoJSON rules of spec §5.5–5.7:
//!
//! - **Names.** Output is camelCase; input accepts camelCase and the proto snake_case names
//!   (`historyLength` and `history_length`). Unknown fields are ignored, except on the agent card,
//!   which keeps them (see [`card`]).
//! - **Enums** are written by name (`TASK_STATE_COMPLETED`, `ROLE_USER`) and read from the name,
//!   the 0.3 spelling (`completed`, `user`) or the number.
//! - **Oneofs** carry no `kind`: the member's name is the key (`{"text": "hi"}`,
//!   `{"statusUpdate": {…}}`), and zero or several members fail to deserialize.
//! - **Presence.** A `REQUIRED` field is a plain Rust type and missing it fails deserialization;
//!   every other singular field is an `Option`, written only when `Some`, so a proto `optional`
//!   keeps its presence (`streaming: false` is not absent). Non-required repeated and map fields
//!   are left out when empty and read `null` as empty.
//! - **What serde cannot check** — required arrays with at least one element, required strings
//!   that are not empty, ranges, RFC 3339 UTC timestamps, base64 — is checked by
//!   [`Validate::validate`], which names every offending field path.
//! - **`int32`** fields read JSON numbers or decimal strings; timestamps stay `String`s, checked
//!   and produced by [`time`].
//!
//! [`v03`] holds the A2A 0.3 dialect's shapes and their one conversion to and from these.
//!
//! [`errors`] holds the A2A error catalogue and its JSON-RPC and REST renderings, [`jsonrpc`] the
//! A2A view of the shared JSON-RPC 2.0 envelope ([`crate::jsonrpc`]). The module owns shapes
//! only: no I/O, no task rules, no routing.

#[macro_use]
mod oneof;
pub(crate) mod de;

pub mod card;
pub mod errors;
pub mod jsonrpc;
pub mod requests;
mod schema;
pub mod task;
pub mod time;
pub mod v03;
pub mod validate;

pub use card::{
    AgentCapabilities, AgentCard, AgentCardSignature, AgentExtension, AgentInterface, AgentProvider, AgentSkill,
    ApiKeySecurityScheme, AuthorizationCodeOAuthFlow, ClientCredentialsOAuthFlow, DeviceCodeOAuthFlow,
    HttpAuthSecurityScheme, ImplicitOAuthFlow, MutualTlsSecurityScheme, OAuth2SecurityScheme, OAuthFlows,
    OpenIdConnectSecurityScheme, PasswordOAuthFlow, SecurityRequirement, SecurityScheme, StringList,
};
pub use errors::{A2aError, A2aErrorKind, ErrorDetail, ErrorInfo, ErrorMapping, GrpcCode, RestErrorBody, RpcStatus};
pub use jsonrpc::{JsonRpcError, JsonRpcOutcome, JsonRpcRequest, JsonRpcResponse, RequestParseError};
pub use requests::{
    AuthenticationInfo, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest, Empty, GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, ListTasksRequest, ListTasksResponse, SendMessageConfiguration,
    SendMessageRequest, SubscribeToTaskRequest, TaskPushNotificationConfig,
};
pub use task::{
    Artifact, Message, Part, PartContent, Role, SendMessageResponse, StreamResponse, Task, TaskArtifactUpdateEvent,
    TaskState, TaskStatus, TaskStatusUpdateEvent, UnknownEnumValue,
};
pub use validate::{FieldViolation, Validate, ValidationError};
