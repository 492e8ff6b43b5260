//! The client's A2A 0.3 dialect: the calls of [`A2aClient`] spelled in 0.3 — JSON-RPC methods
//! (`message/send`, `tasks/get`, …) or the 0.3 REST routes (`/v1/message:send`, … appended to
//! the interface URL, ProtoJSON bodies) — and the answers read back into the 1.0 types through
//! the one conversion ([`accord_types::a2a::v03::convert`], [`accord_types::a2a::v03::proto`]).
//! Also reading a 0.3 card (no `supportedInterfaces`; `url`, `preferredTransport`,
//! `additionalInterfaces`) as a card whose interfaces are 0.3 ones.
//!
//! 0.3 is never spoken over gRPC (0.3's gRPC is another service): [`choose_interface_v03`] skips
//! `GRPC` entries and a gRPC client has no fallback, so the `Binding::Grpc` arms below, which
//! share the REST ones, are never taken.

use std::sync::Arc;

use accord_types::a2a::card::PROTOCOL_BINDING_JSONRPC;
use accord_types::a2a::v03::{self as wire, methods, proto};
use accord_types::a2a::{
    A2aError, A2aErrorKind, AgentCard, DeleteTaskPushNotificationConfigRequest, GetTaskPushNotificationConfigRequest,
    JsonRpcError, ListTaskPushNotificationConfigsResponse, SendMessageRequest, SendMessageResponse, StreamResponse,
    Task, TaskPushNotificationConfig,
};
use accord_types::jsonrpc::{self, ResponseError};
use reqwest::{Method, StatusCode, Url};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{A2aClient, A2aClientError, Binding, Bound, Call, excerpt, major_minor, random_hex, to_value};

/// The 0.3 interface of `card` to fall back on (or to use, when the card offers no 1.0 one):
/// an entry whose `protocolVersion` is `0.3`, of the binding `same` when there is one, else of
/// the first binding of `preference` this client speaks.
pub fn choose_interface_v03<'c>(
    card: &'c AgentCard,
    preference: &[String],
    same: Option<Binding>,
) -> Option<(Binding, &'c accord_types::a2a::AgentInterface)> {
    let wanted = same.map(|binding| binding.as_str().to_owned()).into_iter().chain(preference.iter().cloned());
    for wanted in wanted {
        let Some(binding) = Binding::from_name(&wanted).filter(|binding| *binding != Binding::Grpc) else { continue };
        let found = card.supported_interfaces.iter().find(|interface| {
            interface.protocol_binding == wanted && major_minor(&interface.protocol_version) == Some((0, 3))
        });
        if let Some(interface) = found {
            return Some((binding, interface));
        }
    }
    None
}

/// A 0.3 card read as one with `supportedInterfaces`: when a card has none but has the 0.3 `url`,
/// its interfaces are `url` (binding `preferredTransport`, default `JSONRPC`) and each
/// `additionalInterfaces` entry (`{url, transport}`), all at the card's `protocolVersion` (major
/// and minor; default `0.3`). Its `securitySchemes` and `security`, in the 0.3 shape which the
/// 1.0 card type does not read, are left out (this client sends the headers it is given).
pub(super) fn card_with_interfaces(mut value: Value) -> Value {
    let Some(card) = value.as_object_mut() else { return value };
    let listed = card.get("supportedInterfaces").or_else(|| card.get("supported_interfaces"));
    if listed.is_some_and(|listed| !listed.is_null()) {
        return value;
    }
    let Some(url) = card.get("url").and_then(Value::as_str).map(str::to_owned) else { return value };
    let version = card
        .get("protocolVersion")
        .and_then(Value::as_str)
        .and_then(major_minor)
        .map_or_else(|| wire::PROTOCOL_VERSION.to_owned(), |(major, minor)| format!("{major}.{minor}"));
    let preferred =
        card.get("preferredTransport").and_then(Value::as_str).unwrap_or(PROTOCOL_BINDING_JSONRPC).to_owned();
    let entry = |url: &str, binding: &str| serde_json::json!({"url": url, "protocolBinding": binding, "protocolVersion": version});
    let mut interfaces = vec![entry(&url, &preferred)];
    for additional in card.get("additionalInterfaces").and_then(Value::as_array).into_iter().flatten() {
        let (Some(url), Some(binding)) =
            (additional.get("url").and_then(Value::as_str), additional.get("transport").and_then(Value::as_str))
        else {
            continue;
        };
        let listed = entry(url, binding);
        if !interfaces.contains(&listed) {
            interfaces.push(listed);
        }
    }
    card.insert("supportedInterfaces".into(), Value::Array(interfaces));
    card.remove("securitySchemes");
    card.remove("security");
    value
}

/// Whether the card declares an extended card: 0.3's `supportsAuthenticatedExtendedCard`, or
/// 1.0's `capabilities.extendedAgentCard`.
pub(super) fn declares_extended_card(card: &AgentCard) -> bool {
    card.extra.get("supportsAuthenticatedExtendedCard").and_then(Value::as_bool) == Some(true)
        || card.capabilities.extended_agent_card == Some(true)
}

/// The error a 0.3 peer cannot answer: the operation is not part of 0.3.
pub(super) fn unsupported(operation: &str) -> A2aClientError {
    A2aClientError::A2a {
        http_status: None,
        error: A2aError::new(A2aErrorKind::UnsupportedOperation)
            .with_message(format!("{operation} is not part of A2A 0.3, which this peer speaks")),
    }
}

fn invalid(url: &str, reason: String) -> A2aClientError {
    A2aClientError::InvalidResponse { url: url.to_owned(), reason }
}

/// Reads a 0.3 JSON-RPC response body: its `result`, or the 0.3 error it carries.
pub(super) fn rpc_result(
    url: &str,
    status: StatusCode,
    body: &[u8],
    rpc_id: Option<&Value>,
) -> Result<Value, A2aClientError> {
    let response = match jsonrpc::Response::<Value>::parse(body) {
        Ok(response) => response,
        Err(error @ ResponseError::Version(_)) => return Err(invalid(url, error.to_string())),
        Err(_) if !status.is_success() => {
            return Err(A2aClientError::Status { url: url.to_owned(), status: status.as_u16(), body: excerpt(body) });
        }
        Err(error) => return Err(invalid(url, error.to_string())),
    };
    if let Some(id) = rpc_id {
        response.check_id(id).map_err(|error| invalid(url, error.to_string()))?;
    }
    response.into_result().map_err(|error| error_of(None, error))
}

/// A 0.3 error object as the client's error.
fn error_of(http_status: Option<u16>, error: JsonRpcError) -> A2aClientError {
    match wire::error_from_object(&error) {
        Some(a2a) => A2aClientError::A2a { http_status, error: a2a },
        None => A2aClientError::JsonRpc { error },
    }
}

/// Reads a 0.3 REST error: the `{code, message, data}` body the 0.3 JS SDK (and Accord) write;
/// a `{message}` body without a code (the 0.3 Python SDK's) by its HTTP status, as that SDK maps
/// its errors (404 task not found, 409 not cancelable, 415, 422 invalid params, 501
/// unsupported, 502, 500); a 1.0 `google.rpc.Status` body; else the status and body.
pub(super) fn rest_error(url: &str, status: StatusCode, body: &[u8]) -> A2aClientError {
    let value: Option<Value> = serde_json::from_slice(body).ok();
    if let Some(Ok(error)) = value.clone().map(serde_json::from_value::<JsonRpcError>) {
        return error_of(Some(status.as_u16()), error);
    }
    let message = value.as_ref().and_then(|value| value.get("message")).and_then(Value::as_str);
    let by_status = match status.as_u16() {
        404 => Some(A2aErrorKind::TaskNotFound),
        409 => Some(A2aErrorKind::TaskNotCancelable),
        415 => Some(A2aErrorKind::ContentTypeNotSupported),
        400 | 422 => Some(A2aErrorKind::InvalidParams),
        501 => Some(A2aErrorKind::UnsupportedOperation),
        502 => Some(A2aErrorKind::InvalidAgentResponse),
        500 => Some(A2aErrorKind::Internal),
        _ => None,
    };
    match (message, by_status) {
        (Some(message), Some(kind)) if value.as_ref().is_some_and(|value| value.get("error").is_none()) => {
            A2aClientError::A2a { http_status: Some(status.as_u16()), error: A2aError::new(kind).with_message(message) }
        }
        _ => super::rest_error(url, status, body),
    }
}

/// One SSE `data` of 0.3 JSON-RPC: a JSON-RPC response carrying a 0.3 event.
pub(super) fn stream_rpc_item(url: &str, data: &str, rpc_id: Option<&Value>) -> Result<StreamResponse, A2aClientError> {
    let value = rpc_result(url, StatusCode::OK, data.as_bytes(), rpc_id)?;
    let event: wire::StreamEvent =
        serde_json::from_value(value).map_err(|error| invalid(url, format!("0.3 stream event: {error}")))?;
    Ok(event.into())
}

/// One SSE event of 0.3 REST: a bare proto `StreamResponse`, or an error object (an `event:
/// error` frame, or a body with a numeric `code`).
pub(super) fn stream_rest_item(url: &str, event: &str, data: &str) -> Result<StreamResponse, A2aClientError> {
    let value: Value =
        serde_json::from_str(data).map_err(|error| invalid(url, format!("stream event is not JSON: {error}")))?;
    if event == "error" || value.get("code").is_some_and(Value::is_i64) {
        return Err(match serde_json::from_value::<JsonRpcError>(value) {
            Ok(error) => error_of(None, error),
            Err(error) => invalid(url, format!("stream error event: {error}")),
        });
    }
    let response: proto::StreamResponse =
        serde_json::from_value(value).map_err(|error| invalid(url, format!("0.3 stream event: {error}")))?;
    Ok(wire::StreamEvent::from(response).into())
}

fn read<T: DeserializeOwned>(url: &str, value: Value) -> Result<T, A2aClientError> {
    serde_json::from_value(value).map_err(|error| invalid(url, format!("0.3 answer: {error}")))
}

impl A2aClient {
    /// A 0.3 JSON-RPC call of `method` with `params`.
    fn rpc_call_v03(bound: Arc<Bound>, method: &str, params: Value) -> Result<Call, A2aClientError> {
        let id = Value::String(random_hex());
        let request = jsonrpc::Request::new(id.clone(), method, params);
        Ok(Call {
            method: Method::POST,
            url: bound.endpoint.clone(),
            body: Some(to_value(&request)?),
            rpc_id: Some(id),
            bound,
        })
    }

    /// A 0.3 REST call: `path` (starting `/v1/`, segments already escaped) appended to the
    /// interface URL.
    fn rest_call_v03(
        bound: Arc<Bound>,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<Value>,
    ) -> Result<Call, A2aClientError> {
        let base = bound.endpoint.as_str().split(['?', '#']).next().unwrap_or_default().trim_end_matches('/');
        let mut url = Url::parse(&format!("{base}{path}"))
            .map_err(|error| A2aClientError::InvalidUrl { url: format!("{base}{path}"), reason: error.to_string() })?;
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query.iter().map(|(name, value)| (*name, value.as_str())));
        }
        Ok(Call { method, url, body, rpc_id: None, bound })
    }

    pub(super) async fn send_message_v03(
        &self,
        bound: Arc<Bound>,
        request: SendMessageRequest,
    ) -> Result<SendMessageResponse, A2aClientError> {
        let params = wire::MessageSendParams::from(request);
        let result: wire::SendMessageResult = match bound.binding {
            Binding::JsonRpc => {
                let call = Self::rpc_call_v03(bound, methods::MESSAGE_SEND, to_value(&params)?)?;
                let (url, value) = self.unary_value(call).await?;
                read(&url, value)?
            }
            Binding::HttpJson | Binding::Grpc => {
                let body = to_value(&proto::SendMessageRequest::from(params))?;
                let call = Self::rest_call_v03(bound, Method::POST, proto::paths::MESSAGE_SEND, &[], Some(body))?;
                let (url, value) = self.unary_value(call).await?;
                read::<proto::SendMessageResponse>(&url, value)?.into()
            }
        };
        Ok(result.into())
    }

    pub(super) fn stream_call_v03(
        &self,
        bound: Arc<Bound>,
        request: SendMessageRequest,
    ) -> Result<Call, A2aClientError> {
        let params = wire::MessageSendParams::from(request);
        match bound.binding {
            Binding::JsonRpc => Self::rpc_call_v03(bound, methods::MESSAGE_STREAM, to_value(&params)?),
            Binding::HttpJson | Binding::Grpc => {
                let body = to_value(&proto::SendMessageRequest::from(params))?;
                Self::rest_call_v03(bound, Method::POST, proto::paths::MESSAGE_STREAM, &[], Some(body))
            }
        }
    }

    pub(super) fn subscribe_call_v03(&self, bound: Arc<Bound>, id: &str) -> Result<Call, A2aClientError> {
        match bound.binding {
            Binding::JsonRpc => {
                let params = wire::TaskIdParams { id: id.to_owned(), metadata: None };
                Self::rpc_call_v03(bound, methods::TASKS_RESUBSCRIBE, to_value(&params)?)
            }
            // The 0.3 SDK servers subscribe with GET only.
            Binding::HttpJson | Binding::Grpc => Self::rest_call_v03(
                bound,
                Method::GET,
                &format!("{}:subscribe", proto::paths::task(&escape(id))),
                &[],
                None,
            ),
        }
    }

    async fn task_v03(&self, call: Call) -> Result<Task, A2aClientError> {
        let rest = call.bound.binding == Binding::HttpJson;
        let (url, value) = self.unary_value(call).await?;
        let task: wire::Task = if rest { read::<proto::Task>(&url, value)?.into() } else { read(&url, value)? };
        Ok(task.into())
    }

    pub(super) async fn get_task_v03(
        &self,
        bound: Arc<Bound>,
        id: &str,
        history_length: Option<i32>,
    ) -> Result<Task, A2aClientError> {
        let call = match bound.binding {
            Binding::JsonRpc => {
                let params = wire::TaskQueryParams { id: id.to_owned(), history_length, metadata: None };
                Self::rpc_call_v03(bound, methods::TASKS_GET, to_value(&params)?)?
            }
            Binding::HttpJson | Binding::Grpc => {
                let query: Vec<(&str, String)> =
                    history_length.map(|length| ("historyLength", length.to_string())).into_iter().collect();
                Self::rest_call_v03(bound, Method::GET, &proto::paths::task(&escape(id)), &query, None)?
            }
        };
        self.task_v03(call).await
    }

    pub(super) async fn cancel_task_v03(&self, bound: Arc<Bound>, id: &str) -> Result<Task, A2aClientError> {
        let call = match bound.binding {
            Binding::JsonRpc => {
                let params = wire::TaskIdParams { id: id.to_owned(), metadata: None };
                Self::rpc_call_v03(bound, methods::TASKS_CANCEL, to_value(&params)?)?
            }
            Binding::HttpJson | Binding::Grpc => {
                let path = format!("{}:cancel", proto::paths::task(&escape(id)));
                Self::rest_call_v03(bound, Method::POST, &path, &[], None)?
            }
        };
        self.task_v03(call).await
    }

    pub(super) fn extended_card_call_v03(&self, bound: Arc<Bound>) -> Result<Call, A2aClientError> {
        match bound.binding {
            Binding::JsonRpc => Self::rpc_call_v03(bound, methods::GET_AUTHENTICATED_EXTENDED_CARD, Value::Null),
            Binding::HttpJson | Binding::Grpc => Self::rest_call_v03(bound, Method::GET, proto::paths::CARD, &[], None),
        }
    }

    async fn push_config_v03(&self, call: Call) -> Result<TaskPushNotificationConfig, A2aClientError> {
        let rest = call.bound.binding == Binding::HttpJson;
        let (url, value) = self.unary_value(call).await?;
        let config: wire::TaskPushNotificationConfig =
            if rest { read::<proto::TaskPushNotificationConfig>(&url, value)?.into() } else { read(&url, value)? };
        Ok(config.into())
    }

    pub(super) async fn create_push_config_v03(
        &self,
        bound: Arc<Bound>,
        config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2aClientError> {
        let config = wire::TaskPushNotificationConfig::from(config);
        let call = match bound.binding {
            Binding::JsonRpc => Self::rpc_call_v03(bound, methods::PUSH_CONFIG_SET, to_value(&config)?)?,
            Binding::HttpJson | Binding::Grpc => {
                let task = config.task_id.clone();
                let body = proto::CreateTaskPushNotificationConfigRequest {
                    parent: format!("tasks/{task}"),
                    config_id: config.push_notification_config.id.clone().unwrap_or_default(),
                    config: config.into(),
                };
                let path = proto::paths::push_configs(&escape(&task));
                Self::rest_call_v03(bound, Method::POST, &path, &[], Some(to_value(&body)?))?
            }
        };
        self.push_config_v03(call).await
    }

    pub(super) async fn get_push_config_v03(
        &self,
        bound: Arc<Bound>,
        request: GetTaskPushNotificationConfigRequest,
    ) -> Result<TaskPushNotificationConfig, A2aClientError> {
        let call = match bound.binding {
            Binding::JsonRpc => {
                let params = wire::PushConfigParams {
                    id: request.task_id,
                    push_notification_config_id: Some(request.id),
                    metadata: None,
                };
                Self::rpc_call_v03(bound, methods::PUSH_CONFIG_GET, to_value(&params)?)?
            }
            Binding::HttpJson | Binding::Grpc => {
                let path = proto::paths::push_config(&escape(&request.task_id), &escape(&request.id));
                Self::rest_call_v03(bound, Method::GET, &path, &[], None)?
            }
        };
        self.push_config_v03(call).await
    }

    pub(super) async fn list_push_configs_v03(
        &self,
        bound: Arc<Bound>,
        task_id: &str,
    ) -> Result<ListTaskPushNotificationConfigsResponse, A2aClientError> {
        let rest = bound.binding == Binding::HttpJson;
        let call = if rest {
            Self::rest_call_v03(bound, Method::GET, &proto::paths::push_configs(&escape(task_id)), &[], None)?
        } else {
            let params = wire::TaskIdParams { id: task_id.to_owned(), metadata: None };
            Self::rpc_call_v03(bound, methods::PUSH_CONFIG_LIST, to_value(&params)?)?
        };
        let (url, value) = self.unary_value(call).await?;
        let configs: Vec<wire::TaskPushNotificationConfig> = if rest {
            let list: proto::ListTaskPushNotificationConfigResponse = read(&url, value)?;
            list.configs.into_iter().map(Into::into).collect()
        } else {
            read(&url, value)?
        };
        // 0.3 answers every config at once: one page.
        Ok(ListTaskPushNotificationConfigsResponse {
            configs: configs.into_iter().map(Into::into).collect(),
            next_page_token: String::new(),
        })
    }

    pub(super) fn delete_push_config_call_v03(
        &self,
        bound: Arc<Bound>,
        request: &DeleteTaskPushNotificationConfigRequest,
    ) -> Result<Call, A2aClientError> {
        match bound.binding {
            Binding::JsonRpc => {
                let params = wire::PushConfigParams {
                    id: request.task_id.clone(),
                    push_notification_config_id: Some(request.id.clone()),
                    metadata: None,
                };
                Self::rpc_call_v03(bound, methods::PUSH_CONFIG_DELETE, to_value(&params)?)
            }
            Binding::HttpJson | Binding::Grpc => {
                let path = proto::paths::push_config(&escape(&request.task_id), &escape(&request.id));
                Self::rest_call_v03(bound, Method::DELETE, &path, &[], None)
            }
        }
    }
}

/// One path segment, percent-encoded (an id may hold `/`, `?` or `%`): every byte but the
/// unreserved ones of RFC 3986.
fn escape(segment: &str) -> String {
    segment
        .bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => char::from(byte).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}
