//! The JSON-RPC binding at 1.0 (`JSONRPC`, spec §9): every operation is a POST of a JSON-RPC
//! request to the interface URL, its params the 1.0 request (with the interface's tenant), its
//! `result` the 1.0 answer; streams are SSE events each carrying a JSON-RPC response. Also the
//! reading of a JSON-RPC response body, which the 0.3 adapter shares.

use accord_types::a2a::jsonrpc::methods;
use accord_types::a2a::{AgentInterface, StreamResponse};
use accord_types::jsonrpc::{self, ResponseError};
use async_trait::async_trait;
use futures_util::StreamExt;
use reqwest::{Method, StatusCode, Url};
use serde_json::Value;

use super::http::{HttpCall, HttpWire, Opened, answer_v1, interface_url, to_value};
use super::transport::{
    Answer, Binding, Connection, ProtocolVersion, StreamFault, Streaming, Target, Transport, Unary,
};
use crate::error::{ClientError, Operation, Site};
use crate::http::random_hex;

/// The 1.0 JSON-RPC binding of one interface.
#[derive(Debug)]
pub(crate) struct JsonRpc {
    wire: HttpWire,
    target: Target,
}

impl JsonRpc {
    pub(crate) fn new(wire: HttpWire, interface: &AgentInterface) -> Result<Self, ClientError> {
        let target = Target::new(Binding::JsonRpc, ProtocolVersion::V1_0, interface, interface_url(interface)?);
        Ok(Self { wire, target })
    }
}

/// A JSON-RPC POST of `method` with `params` to `endpoint`, and the id it carries.
pub(crate) fn rpc_call(
    operation: Operation,
    endpoint: &Url,
    method: &str,
    params: Value,
    versioned: bool,
) -> Result<(HttpCall, Value), ClientError> {
    let id = Value::String(random_hex());
    let request = jsonrpc::Request::new(id.clone(), method, params);
    let body = Some(to_value(operation, &request)?);
    let call = HttpCall { operation, method: Method::POST, url: endpoint.clone(), body, versioned };
    Ok((call, id))
}

#[async_trait]
impl Transport for JsonRpc {
    fn target(&self) -> &Target {
        &self.target
    }

    async fn call(&self, mut request: Unary) -> Result<Answer, ClientError> {
        request.fill_tenant(&self.target.interface);
        let operation = request.operation();
        let params = match &request {
            Unary::SendMessage(request) => to_value(operation, request)?,
            Unary::GetTask(request) => to_value(operation, request)?,
            Unary::ListTasks(request) => to_value(operation, request)?,
            Unary::CancelTask(request) => to_value(operation, request)?,
            Unary::GetExtendedCard(request) => to_value(operation, request)?,
            Unary::CreatePushConfig(config) => to_value(operation, config)?,
            Unary::GetPushConfig(request) => to_value(operation, request)?,
            Unary::ListPushConfigs(request) => to_value(operation, request)?,
            Unary::DeletePushConfig(request) => to_value(operation, request)?,
        };
        let (call, id) = rpc_call(operation, &self.target.endpoint, request.method(), params, true)?;
        let (status, body) = self.wire.exchange(&call).await?;
        let site = call.site();
        let value = rpc_result(&site, status, &body, Some(&id))?;
        answer_v1(&request, &site, value)
    }

    async fn open(&self, mut request: Streaming, last_event_id: Option<&str>) -> Result<Connection, ClientError> {
        request.fill_tenant(&self.target.interface);
        let operation = request.operation();
        let (method, params) = match &request {
            Streaming::SendMessage(request) => (methods::SEND_STREAMING_MESSAGE, to_value(operation, request)?),
            Streaming::Subscribe(request) => (methods::SUBSCRIBE_TO_TASK, to_value(operation, request)?),
        };
        let (call, id) = rpc_call(operation, &self.target.endpoint, method, params, true)?;
        open_rpc_stream(&self.wire, &call, id, last_event_id, rpc_result, stream_rpc_item).await
    }
}

/// How a dialect reads a JSON-RPC response body (where it came from, HTTP status, body, the
/// request's id).
pub(crate) type ResultReader = fn(&Site, StatusCode, &[u8], Option<&Value>) -> Result<Value, ClientError>;

/// How a dialect reads one stream event's `data` (where it came from, data, the request's id).
pub(crate) type ItemReader = fn(&Site, &str, Option<&Value>) -> Result<StreamResponse, ClientError>;

/// Opens a JSON-RPC stream: a refusal is read by `result_of`, each event by `item_of`.
pub(crate) async fn open_rpc_stream(
    wire: &HttpWire,
    call: &HttpCall,
    id: Value,
    last_event_id: Option<&str>,
    result_of: ResultReader,
    item_of: ItemReader,
) -> Result<Connection, ClientError> {
    let site = call.site();
    let events = match wire.open(call, last_event_id).await? {
        Opened::Events(events) => events,
        Opened::Refused { status, body } => {
            return Err(match result_of(&site, status, &body, Some(&id)) {
                Err(error) => error,
                Ok(_) => site.invalid("a JSON-RPC result where an event stream was expected"),
            });
        }
    };
    let opened = site.clone();
    let events = events.map(move |item| {
        let event = item?;
        let response = item_of(&site, &event.data, Some(&id)).map_err(StreamFault::Failed)?;
        Ok(((!event.id.is_empty()).then_some(event.id), response))
    });
    Ok(Connection { site: opened, events: Box::pin(events) })
}

/// One SSE `data` of the JSON-RPC binding: a JSON-RPC response carrying a `StreamResponse`.
pub(crate) fn stream_rpc_item(site: &Site, data: &str, rpc_id: Option<&Value>) -> Result<StreamResponse, ClientError> {
    let value = rpc_result(site, StatusCode::OK, data.as_bytes(), rpc_id)?;
    serde_json::from_value(value).map_err(|error| site.invalid(format!("stream event: {error}")))
}

/// Reads a JSON-RPC response body: its `result`, or the error it carries. The envelope checks
/// (version, exactly one of result and error, the id echo) are [`jsonrpc::Response`]'s.
pub(crate) fn rpc_result(
    site: &Site,
    status: StatusCode,
    body: &[u8],
    rpc_id: Option<&Value>,
) -> Result<Value, ClientError> {
    rpc_envelope(site, status, body, rpc_id)?.into_result().map_err(|error| site.rpc(error))
}

/// A JSON-RPC response read and checked against the request's id; an unreadable body with an
/// error status is that status.
pub(crate) fn rpc_envelope(
    site: &Site,
    status: StatusCode,
    body: &[u8],
    rpc_id: Option<&Value>,
) -> Result<jsonrpc::Response<Value>, ClientError> {
    let invalid = |error: ResponseError| site.invalid(error.to_string());
    let response = match jsonrpc::Response::<Value>::parse(body) {
        Ok(response) => response,
        // A well-formed response of another version is refused as such, whatever the status.
        Err(error @ ResponseError::Version(_)) => return Err(invalid(error)),
        Err(_) if !status.is_success() => {
            return Err(site.status(status.as_u16(), body));
        }
        Err(error) => return Err(invalid(error)),
    };
    if let Some(id) = rpc_id {
        response.check_id(id).map_err(invalid)?;
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::transport::{settles, task_id_of};
    use accord_types::a2a::A2aErrorKind;
    use serde_json::json;

    fn site() -> Site {
        Site::new(Operation::GetTask, "u")
    }

    #[test]
    fn jsonrpc_answers_are_checked_and_errors_typed() {
        let id = json!("abc");
        let ok = rpc_result(&site(), StatusCode::OK, br#"{"jsonrpc":"2.0","id":"abc","result":{"x":1}}"#, Some(&id));
        assert_eq!(ok.expect("result"), json!({"x": 1}));
        let wrong_id = rpc_result(&site(), StatusCode::OK, br#"{"jsonrpc":"2.0","id":"zzz","result":{}}"#, Some(&id));
        assert!(matches!(wrong_id, Err(ClientError::InvalidResponse { .. })));
        let not_json = rpc_result(&site(), StatusCode::OK, b"<html>", Some(&id));
        assert!(matches!(not_json, Err(ClientError::InvalidResponse { .. })));
        let http = rpc_result(&site(), StatusCode::BAD_GATEWAY, b"<html>", Some(&id));
        assert!(matches!(http, Err(ClientError::Status { status: 502, .. })));
        let not_found = rpc_result(
            &site(),
            StatusCode::OK,
            br#"{"jsonrpc":"2.0","id":"abc","error":{"code":-32001,"message":"gone","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{"taskId":"t"}}]}}"#,
            Some(&id),
        )
        .expect_err("error");
        assert_eq!(not_found.a2a_kind(), Some(A2aErrorKind::TaskNotFound));
        let a2a = not_found.a2a_error().expect("a2a");
        assert_eq!((a2a.message.as_str(), a2a.metadata.get("taskId").map(String::as_str)), ("gone", Some("t")));
        let null_id = rpc_result(
            &site(),
            StatusCode::OK,
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#,
            Some(&id),
        );
        assert_eq!(null_id.expect_err("error").a2a_kind(), Some(A2aErrorKind::JsonParse));
        let custom = rpc_result(
            &site(),
            StatusCode::OK,
            br#"{"jsonrpc":"2.0","id":"abc","error":{"code":-31000,"message":"x"}}"#,
            Some(&id),
        );
        assert!(matches!(custom, Err(ClientError::JsonRpc { error, .. }) if error.code == -31000));
        for (status, body) in [
            (StatusCode::OK, r#"{"jsonrpc":"1.0","id":"abc","result":{}}"#),
            (StatusCode::BAD_GATEWAY, r#"{"jsonrpc":"1.0","id":"abc","result":{}}"#),
            (StatusCode::OK, r#"{"jsonrpc":"2.0","id":"abc","result":{},"error":{"code":1,"message":"x"}}"#),
            (StatusCode::OK, r#"{"jsonrpc":"2.0","id":"abc"}"#),
        ] {
            let read = rpc_result(&site(), status, body.as_bytes(), Some(&id));
            assert!(matches!(read, Err(ClientError::InvalidResponse { .. })), "{status} {body}");
        }
        let http = rpc_result(&site(), StatusCode::BAD_GATEWAY, br#"{"jsonrpc":"2.0","id":"abc"}"#, Some(&id));
        assert!(matches!(http, Err(ClientError::Status { status: 502, .. })), "no response: the status tells");
    }

    #[test]
    fn jsonrpc_stream_items_carry_results_or_errors() {
        let id = json!(7);
        let done = stream_rpc_item(
            &site(),
            r#"{"jsonrpc":"2.0","id":7,"result":{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}}"#,
            Some(&id),
        )
        .expect("item");
        assert!(settles(&done));
        assert_eq!(task_id_of(&done), Some("t"));
        let error =
            stream_rpc_item(&site(), r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32004,"message":"no"}}"#, Some(&id));
        assert_eq!(error.expect_err("error").a2a_kind(), Some(A2aErrorKind::UnsupportedOperation));
    }
}
