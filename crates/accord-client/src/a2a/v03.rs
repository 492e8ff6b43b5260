//! The A2A 0.3 dialect, as an adapter over the two HTTP bindings: the 1.0 operations spelled in
//! 0.3 — JSON-RPC methods (`message/send`, `tasks/get`, …) or the 0.3 REST routes
//! (`/v1/message:send`, … appended to the interface URL, ProtoJSON bodies) — and the answers read
//! back into the 1.0 types through the one conversion ([`accord_types::a2a::v03::convert`],
//! [`accord_types::a2a::v03::proto`]). Requests carry no version header and no tenant.
//!
//! 0.3 is never spoken over gRPC (0.3's gRPC is another service): the client builds this adapter
//! for `JSONRPC` and `HTTP+JSON` interfaces only. The adapter is one type for both, as the 0.3
//! spelling of an operation is one decision with two renderings side by side.

use accord_types::a2a::v03::{self as wire, methods, proto};
use accord_types::a2a::{
    A2aError, A2aErrorKind, AgentCard, AgentInterface, JsonRpcError, ListTaskPushNotificationConfigsResponse,
    StreamResponse,
};
use async_trait::async_trait;
use reqwest::{Method, StatusCode, Url};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::card::{declares_extended_card, parse_card};
use super::http::{HttpCall, HttpWire, deleted, interface_url, to_value};
use super::jsonrpc::{open_rpc_stream, rpc_call, rpc_envelope};
use super::rest::{open_rest_stream, rest_exchange};
use super::transport::{Answer, Binding, Connection, ProtocolVersion, Streaming, Target, Transport, Unary};
use crate::error::{ClientError, Operation, Site};

/// The error a 0.3 peer cannot answer: the operation is not part of 0.3.
pub(crate) fn unsupported(operation: Operation, method: &str) -> ClientError {
    ClientError::A2a {
        operation,
        http_status: None,
        error: A2aError::new(A2aErrorKind::UnsupportedOperation)
            .with_message(format!("{method} is not part of A2A 0.3, which this peer speaks")),
    }
}

/// Reads a 0.3 JSON-RPC response body: its `result`, or the 0.3 error it carries.
pub(crate) fn rpc_result(
    site: &Site,
    status: StatusCode,
    body: &[u8],
    rpc_id: Option<&Value>,
) -> Result<Value, ClientError> {
    rpc_envelope(site, status, body, rpc_id)?.into_result().map_err(|error| error_of(site, None, error))
}

/// A 0.3 error object as the client's error.
fn error_of(site: &Site, http_status: Option<u16>, error: JsonRpcError) -> ClientError {
    match wire::error_from_object(&error) {
        Some(a2a) => site.a2a(http_status, a2a),
        None => ClientError::JsonRpc { operation: site.operation, error },
    }
}

/// Reads a 0.3 REST error: the `{code, message, data}` body the 0.3 JS SDK (and Accord) write;
/// a `{message}` body without a code (the 0.3 Python SDK's) by its HTTP status, as that SDK maps
/// its errors (404 task not found, 409 not cancelable, 415, 422 invalid params, 501
/// unsupported, 502, 500); a 1.0 `google.rpc.Status` body; else the status and body.
pub(crate) fn rest_error(site: &Site, status: StatusCode, body: &[u8]) -> ClientError {
    let value: Option<Value> = serde_json::from_slice(body).ok();
    if let Some(Ok(error)) = value.clone().map(serde_json::from_value::<JsonRpcError>) {
        return error_of(site, Some(status.as_u16()), error);
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
            site.a2a(Some(status.as_u16()), A2aError::new(kind).with_message(message))
        }
        _ => super::rest::rest_error(site, status, body),
    }
}

/// One SSE `data` of 0.3 JSON-RPC: a JSON-RPC response carrying a 0.3 event.
pub(crate) fn stream_rpc_item(site: &Site, data: &str, rpc_id: Option<&Value>) -> Result<StreamResponse, ClientError> {
    let value = rpc_result(site, StatusCode::OK, data.as_bytes(), rpc_id)?;
    let event: wire::StreamEvent =
        serde_json::from_value(value).map_err(|error| site.invalid(format!("0.3 stream event: {error}")))?;
    Ok(event.into())
}

/// One SSE event of 0.3 REST: a bare proto `StreamResponse`, or an error object (an `event:
/// error` frame, or a body with a numeric `code`).
pub(crate) fn stream_rest_item(site: &Site, event: &str, data: &str) -> Result<StreamResponse, ClientError> {
    let value: Value =
        serde_json::from_str(data).map_err(|error| site.invalid(format!("stream event is not JSON: {error}")))?;
    if event == "error" || value.get("code").is_some_and(Value::is_i64) {
        return Err(match serde_json::from_value::<JsonRpcError>(value) {
            Ok(error) => error_of(site, None, error),
            Err(error) => site.invalid(format!("stream error event: {error}")),
        });
    }
    let response: proto::StreamResponse =
        serde_json::from_value(value).map_err(|error| site.invalid(format!("0.3 stream event: {error}")))?;
    Ok(wire::StreamEvent::from(response).into())
}

fn read<T: DeserializeOwned>(site: &Site, value: Value) -> Result<T, ClientError> {
    serde_json::from_value(value).map_err(|error| site.invalid(format!("0.3 answer: {error}")))
}

/// The 0.3 dialect of one `JSONRPC` or `HTTP+JSON` interface.
#[derive(Debug)]
pub(crate) struct V03 {
    wire: HttpWire,
    /// `HTTP+JSON` (the 0.3 REST routes) or `JSONRPC`, at 0.3.
    target: Target,
    /// Whether the card declares an extended card; 0.3 peers are not asked for one otherwise.
    extended_card: bool,
}

/// A 0.3 request: a JSON-RPC method with its params, or a REST call.
enum Spelled {
    Rpc(&'static str, Value),
    Rest(HttpCall),
}

impl V03 {
    pub(crate) fn new(
        binding: Binding,
        wire: HttpWire,
        interface: &AgentInterface,
        card: &AgentCard,
    ) -> Result<Self, ClientError> {
        match binding {
            Binding::JsonRpc | Binding::HttpJson => {}
            Binding::Grpc => {
                return Err(ClientError::InvalidUrl {
                    url: interface.url.clone(),
                    reason: "A2A 0.3 is not spoken over gRPC".into(),
                });
            }
        };
        Ok(Self {
            wire,
            target: Target::new(binding, ProtocolVersion::V0_3, interface, interface_url(interface)?),
            extended_card: declares_extended_card(card),
        })
    }

    /// Whether the 0.3 REST routes are spoken rather than JSON-RPC.
    fn rest(&self) -> bool {
        self.target.binding == Binding::HttpJson
    }

    /// A 0.3 REST call: `path` (starting `/v1/`, segments already escaped) appended to the
    /// interface URL.
    fn rest_call(
        &self,
        operation: Operation,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<Value>,
    ) -> Result<Spelled, ClientError> {
        let base = self.target.endpoint.as_str().split(['?', '#']).next().unwrap_or_default().trim_end_matches('/');
        let mut url = Url::parse(&format!("{base}{path}"))
            .map_err(|error| ClientError::InvalidUrl { url: format!("{base}{path}"), reason: error.to_string() })?;
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query.iter().map(|(name, value)| (*name, value.as_str())));
        }
        Ok(Spelled::Rest(HttpCall { operation, method, url, body, versioned: false }))
    }

    /// Sends a 0.3 request and returns the JSON answer (JSON-RPC `result`, or the REST body).
    async fn send(&self, operation: Operation, spelled: Spelled) -> Result<(Site, Value), ClientError> {
        match spelled {
            Spelled::Rpc(method, params) => {
                let (call, id) = rpc_call(operation, &self.target.endpoint, method, params, false)?;
                let (status, body) = self.wire.exchange(&call).await?;
                let site = call.site();
                let value = rpc_result(&site, status, &body, Some(&id))?;
                Ok((site, value))
            }
            Spelled::Rest(call) => Ok((call.site(), rest_exchange(&self.wire, &call, rest_error).await?)),
        }
    }

    /// The 0.3 spelling of `request`.
    fn spell(&self, request: &Unary) -> Result<Spelled, ClientError> {
        let op = request.operation();
        Ok(match request {
            Unary::SendMessage(request) => {
                let params = wire::MessageSendParams::from(request.as_ref().clone());
                if self.rest() {
                    let body = to_value(op, &proto::SendMessageRequest::from(params))?;
                    self.rest_call(op, Method::POST, proto::paths::MESSAGE_SEND, &[], Some(body))?
                } else {
                    Spelled::Rpc(methods::MESSAGE_SEND, to_value(op, &params)?)
                }
            }
            Unary::GetTask(request) => {
                if self.rest() {
                    let query: Vec<(&str, String)> = request
                        .history_length
                        .map(|length| ("historyLength", length.to_string()))
                        .into_iter()
                        .collect();
                    self.rest_call(op, Method::GET, &proto::paths::task(&escape(&request.id)), &query, None)?
                } else {
                    let params = wire::TaskQueryParams {
                        id: request.id.clone(),
                        history_length: request.history_length,
                        metadata: None,
                    };
                    Spelled::Rpc(methods::TASKS_GET, to_value(op, &params)?)
                }
            }
            Unary::CancelTask(request) => {
                if self.rest() {
                    let path = format!("{}:cancel", proto::paths::task(&escape(&request.id)));
                    self.rest_call(op, Method::POST, &path, &[], None)?
                } else {
                    let params = wire::TaskIdParams { id: request.id.clone(), metadata: None };
                    Spelled::Rpc(methods::TASKS_CANCEL, to_value(op, &params)?)
                }
            }
            Unary::ListTasks(_) => return Err(unsupported(op, "ListTasks")),
            Unary::GetExtendedCard(_) => {
                if self.rest() {
                    self.rest_call(op, Method::GET, proto::paths::CARD, &[], None)?
                } else {
                    Spelled::Rpc(methods::GET_AUTHENTICATED_EXTENDED_CARD, Value::Null)
                }
            }
            Unary::CreatePushConfig(config) => {
                let config = wire::TaskPushNotificationConfig::from(config.clone());
                if self.rest() {
                    let task = config.task_id.clone();
                    let body = proto::CreateTaskPushNotificationConfigRequest {
                        parent: format!("tasks/{task}"),
                        config_id: config.push_notification_config.id.clone().unwrap_or_default(),
                        config: config.into(),
                    };
                    let path = proto::paths::push_configs(&escape(&task));
                    self.rest_call(op, Method::POST, &path, &[], Some(to_value(op, &body)?))?
                } else {
                    Spelled::Rpc(methods::PUSH_CONFIG_SET, to_value(op, &config)?)
                }
            }
            Unary::GetPushConfig(request) => {
                if self.rest() {
                    let path = proto::paths::push_config(&escape(&request.task_id), &escape(&request.id));
                    self.rest_call(op, Method::GET, &path, &[], None)?
                } else {
                    let params = wire::PushConfigParams {
                        id: request.task_id.clone(),
                        push_notification_config_id: Some(request.id.clone()),
                        metadata: None,
                    };
                    Spelled::Rpc(methods::PUSH_CONFIG_GET, to_value(op, &params)?)
                }
            }
            Unary::ListPushConfigs(request) => {
                if self.rest() {
                    self.rest_call(op, Method::GET, &proto::paths::push_configs(&escape(&request.task_id)), &[], None)?
                } else {
                    let params = wire::TaskIdParams { id: request.task_id.clone(), metadata: None };
                    Spelled::Rpc(methods::PUSH_CONFIG_LIST, to_value(op, &params)?)
                }
            }
            Unary::DeletePushConfig(request) => {
                if self.rest() {
                    let path = proto::paths::push_config(&escape(&request.task_id), &escape(&request.id));
                    self.rest_call(op, Method::DELETE, &path, &[], None)?
                } else {
                    let params = wire::PushConfigParams {
                        id: request.task_id.clone(),
                        push_notification_config_id: Some(request.id.clone()),
                        metadata: None,
                    };
                    Spelled::Rpc(methods::PUSH_CONFIG_DELETE, to_value(op, &params)?)
                }
            }
        })
    }

    /// Reads the 0.3 answer to `request` into the 1.0 types.
    fn answer(&self, request: &Unary, site: &Site, value: Value) -> Result<Answer, ClientError> {
        Ok(match request {
            Unary::SendMessage(_) => {
                let result: wire::SendMessageResult = if self.rest() {
                    read::<proto::SendMessageResponse>(site, value)?.into()
                } else {
                    read(site, value)?
                };
                Answer::Message(result.into())
            }
            Unary::GetTask(_) | Unary::CancelTask(_) => {
                let task: wire::Task =
                    if self.rest() { read::<proto::Task>(site, value)?.into() } else { read(site, value)? };
                Answer::Task(task.into())
            }
            Unary::ListTasks(_) => return Err(unsupported(site.operation, "ListTasks")),
            Unary::GetExtendedCard(_) => {
                Answer::Card(Box::new(parse_card(value).map_err(|reason| site.invalid(reason))?))
            }
            Unary::CreatePushConfig(_) | Unary::GetPushConfig(_) => {
                let config: wire::TaskPushNotificationConfig = if self.rest() {
                    read::<proto::TaskPushNotificationConfig>(site, value)?.into()
                } else {
                    read(site, value)?
                };
                Answer::PushConfig(config.into())
            }
            Unary::ListPushConfigs(_) => {
                let configs: Vec<wire::TaskPushNotificationConfig> = if self.rest() {
                    let list: proto::ListTaskPushNotificationConfigResponse = read(site, value)?;
                    list.configs.into_iter().map(Into::into).collect()
                } else {
                    read(site, value)?
                };
                // 0.3 answers every config at once: one page.
                Answer::PushConfigs(ListTaskPushNotificationConfigsResponse {
                    configs: configs.into_iter().map(Into::into).collect(),
                    next_page_token: String::new(),
                })
            }
            Unary::DeletePushConfig(_) => deleted(site, value)?,
        })
    }
}

#[async_trait]
impl Transport for V03 {
    fn target(&self) -> &Target {
        &self.target
    }

    async fn call(&self, request: Unary) -> Result<Answer, ClientError> {
        let extended_card = matches!(request, Unary::GetExtendedCard(_));
        // As the 0.3 SDK clients: a card that does not declare one is not asked for it.
        let operation = request.operation();
        if extended_card && !self.extended_card {
            return Err(ClientError::A2a {
                operation,
                http_status: None,
                error: A2aError::new(A2aErrorKind::ExtendedAgentCardNotConfigured)
                    .with_message("the card declares no extended card"),
            });
        }
        let (site, value) = match self.send(operation, self.spell(&request)?).await {
            Ok(answer) => answer,
            // A 0.3 SDK server without an extended card has no `/v1/card` route at all.
            Err(error) if extended_card && self.rest() && error.status() == Some(404) => {
                return Err(ClientError::A2a {
                    operation,
                    http_status: Some(404),
                    error: A2aError::new(A2aErrorKind::ExtendedAgentCardNotConfigured),
                });
            }
            Err(error) => return Err(error),
        };
        self.answer(&request, &site, value)
    }

    async fn open(&self, request: Streaming, last_event_id: Option<&str>) -> Result<Connection, ClientError> {
        let op = request.operation();
        let spelled = match (request, self.rest()) {
            (Streaming::SendMessage(request), false) => {
                Spelled::Rpc(methods::MESSAGE_STREAM, to_value(op, &wire::MessageSendParams::from(*request))?)
            }
            (Streaming::SendMessage(request), true) => {
                let body = to_value(op, &proto::SendMessageRequest::from(wire::MessageSendParams::from(*request)))?;
                self.rest_call(op, Method::POST, proto::paths::MESSAGE_STREAM, &[], Some(body))?
            }
            (Streaming::Subscribe(request), false) => {
                let params = wire::TaskIdParams { id: request.id, metadata: None };
                Spelled::Rpc(methods::TASKS_RESUBSCRIBE, to_value(op, &params)?)
            }
            // The 0.3 SDK servers subscribe with GET only.
            (Streaming::Subscribe(request), true) => {
                let path = format!("{}:subscribe", proto::paths::task(&escape(&request.id)));
                self.rest_call(op, Method::GET, &path, &[], None)?
            }
        };
        match spelled {
            Spelled::Rpc(method, params) => {
                let (call, id) = rpc_call(op, &self.target.endpoint, method, params, false)?;
                open_rpc_stream(&self.wire, &call, id, last_event_id, rpc_result, stream_rpc_item).await
            }
            Spelled::Rest(call) => {
                open_rest_stream(&self.wire, &call, last_event_id, rest_error, stream_rest_item).await
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
