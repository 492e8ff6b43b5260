//! The HTTP+JSON binding at 1.0 (`HTTP+JSON`, spec §11): each operation is its REST route under
//! the interface URL (and the tenant, when set), with the 1.0 request as the body of a POST and
//! its fields as the query of a GET; errors are `google.rpc.Status` bodies; streams are SSE
//! events each carrying a bare `StreamResponse`. Also the reading of a REST error, which the 0.3
//! adapter falls back on.

use accord_types::a2a::{A2aError, AgentInterface, RestErrorBody, StreamResponse};
use async_trait::async_trait;
use futures_util::StreamExt;
use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::http::{HttpCall, HttpWire, Opened, answer_v1, interface_url, to_value};
use super::transport::{
    Answer, Binding, Connection, ProtocolVersion, StreamFault, Streaming, Target, Transport, Unary,
};
use crate::error::{ClientError, Operation, Site};

/// The 1.0 HTTP+JSON binding of one interface.
#[derive(Debug)]
pub(crate) struct Rest {
    wire: HttpWire,
    target: Target,
}

impl Rest {
    pub(crate) fn new(wire: HttpWire, interface: &AgentInterface) -> Result<Self, ClientError> {
        let target = Target::new(Binding::HttpJson, ProtocolVersion::V1_0, interface, interface_url(interface)?);
        Ok(Self { wire, target })
    }

    /// The route `path` (under the tenant, when set) with `params` as the body of a POST (its
    /// `tenant` removed; it travels in the path) and `query` for a GET.
    pub(crate) fn route(
        &self,
        operation: Operation,
        method: Method,
        path: &[&str],
        query: &[(&str, String)],
        params: Value,
    ) -> Result<HttpCall, ClientError> {
        let mut url = self.target.endpoint.clone();
        {
            let mut segments = url.path_segments_mut().map_err(|()| ClientError::InvalidUrl {
                url: self.target.endpoint.to_string(),
                reason: "cannot be a base".into(),
            })?;
            segments.pop_if_empty();
            if let Some(tenant) = self.target.interface.tenant.as_deref().filter(|tenant| !tenant.is_empty()) {
                segments.push(tenant);
            }
            segments.extend(path);
        }
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query.iter().map(|(name, value)| (*name, value.as_str())));
        }
        let body = (method == Method::POST).then(|| {
            let mut params = params;
            if let Value::Object(fields) = &mut params {
                fields.remove("tenant");
            }
            params
        });
        Ok(HttpCall { operation, method, url, body, versioned: true })
    }

    /// The HTTP request of a unary operation.
    fn unary_call(&self, request: &Unary) -> Result<HttpCall, ClientError> {
        let op = request.operation();
        match request {
            Unary::SendMessage(request) => self.route(op, Method::POST, &["message:send"], &[], to_value(op, request)?),
            Unary::GetTask(request) => {
                let query: Vec<(&str, String)> =
                    request.history_length.map(|length| ("historyLength", length.to_string())).into_iter().collect();
                self.route(op, Method::GET, &["tasks", &request.id], &query, to_value(op, request)?)
            }
            Unary::ListTasks(request) => {
                let mut query: Vec<(&str, String)> = Vec::new();
                if let Some(context_id) = &request.context_id {
                    query.push(("contextId", context_id.clone()));
                }
                if let Some(status) = request.status {
                    query.push(("status", status.as_str().to_owned()));
                }
                if let Some(page_size) = request.page_size {
                    query.push(("pageSize", page_size.to_string()));
                }
                if let Some(page_token) = &request.page_token {
                    query.push(("pageToken", page_token.clone()));
                }
                if let Some(history_length) = request.history_length {
                    query.push(("historyLength", history_length.to_string()));
                }
                if let Some(after) = &request.status_timestamp_after {
                    query.push(("statusTimestampAfter", after.clone()));
                }
                if let Some(include) = request.include_artifacts {
                    query.push(("includeArtifacts", include.to_string()));
                }
                self.route(op, Method::GET, &["tasks"], &query, to_value(op, request)?)
            }
            Unary::CancelTask(request) => {
                let action = format!("{}:cancel", request.id);
                let mut call = self.route(op, Method::POST, &["tasks", &action], &[], to_value(op, request)?)?;
                // The id travels in the path and there is no metadata: no body, as the TCK sends it.
                call.body = None;
                Ok(call)
            }
            Unary::GetExtendedCard(request) => {
                self.route(op, Method::GET, &["extendedAgentCard"], &[], to_value(op, request)?)
            }
            Unary::CreatePushConfig(config) => {
                let task_id = config.task_id.clone().unwrap_or_default();
                let path = ["tasks", &task_id, "pushNotificationConfigs"];
                let mut call = self.route(op, Method::POST, &path, &[], to_value(op, config)?)?;
                if let Some(Value::Object(body)) = call.body.as_mut() {
                    // Path parameters are not repeated in the body (§1.1).
                    body.remove("taskId");
                }
                Ok(call)
            }
            Unary::GetPushConfig(request) => {
                let path = ["tasks", &request.task_id, "pushNotificationConfigs", &request.id];
                self.route(op, Method::GET, &path, &[], to_value(op, request)?)
            }
            Unary::ListPushConfigs(request) => {
                let mut query: Vec<(&str, String)> = Vec::new();
                if let Some(page_size) = request.page_size {
                    query.push(("pageSize", page_size.to_string()));
                }
                if let Some(page_token) = &request.page_token {
                    query.push(("pageToken", page_token.clone()));
                }
                let path = ["tasks", &request.task_id, "pushNotificationConfigs"];
                self.route(op, Method::GET, &path, &query, to_value(op, request)?)
            }
            Unary::DeletePushConfig(request) => {
                let path = ["tasks", &request.task_id, "pushNotificationConfigs", &request.id];
                self.route(op, Method::DELETE, &path, &[], to_value(op, request)?)
            }
        }
    }
}

#[async_trait]
impl Transport for Rest {
    fn target(&self) -> &Target {
        &self.target
    }

    async fn call(&self, mut request: Unary) -> Result<Answer, ClientError> {
        request.fill_tenant(&self.target.interface);
        let call = self.unary_call(&request)?;
        let value = rest_exchange(&self.wire, &call, rest_error).await?;
        answer_v1(&request, &call.site(), value)
    }

    async fn open(&self, mut request: Streaming, last_event_id: Option<&str>) -> Result<Connection, ClientError> {
        request.fill_tenant(&self.target.interface);
        let op = request.operation();
        match request {
            Streaming::SendMessage(request) => {
                let call = self.route(op, Method::POST, &["message:stream"], &[], to_value(op, &request)?)?;
                open_rest_stream(&self.wire, &call, last_event_id, rest_error, stream_rest_item).await
            }
            Streaming::Subscribe(request) => {
                let action = format!("{}:subscribe", request.id);
                let mut call = self.route(op, Method::POST, &["tasks", &action], &[], to_value(op, &request)?)?;
                // No body, as the TCK and the SDK clients send it.
                call.body = None;
                match open_rest_stream(&self.wire, &call, last_event_id, rest_error, stream_rest_item).await {
                    // The proto routes subscribe as GET; the spec as POST. Try GET when POST is refused.
                    Err(ClientError::Status { status: 405, .. }) => {
                        let call = HttpCall { method: Method::GET, ..call };
                        open_rest_stream(&self.wire, &call, last_event_id, rest_error, stream_rest_item).await
                    }
                    other => other,
                }
            }
        }
    }
}

/// Sends a REST call and reads its JSON answer; an error status is read by `error_of`.
pub(crate) async fn rest_exchange(
    wire: &HttpWire,
    call: &HttpCall,
    error_of: fn(&Site, StatusCode, &[u8]) -> ClientError,
) -> Result<Value, ClientError> {
    let (status, body) = wire.exchange(call).await?;
    let site = call.site();
    if !status.is_success() {
        return Err(error_of(&site, status, &body));
    }
    serde_json::from_slice(&body).map_err(|error| site.invalid(format!("not JSON: {error}")))
}

/// Opens a REST stream: an error status is read by `error_of`, each event by `item_of`.
pub(crate) async fn open_rest_stream(
    wire: &HttpWire,
    call: &HttpCall,
    last_event_id: Option<&str>,
    error_of: fn(&Site, StatusCode, &[u8]) -> ClientError,
    item_of: fn(&Site, &str, &str) -> Result<StreamResponse, ClientError>,
) -> Result<Connection, ClientError> {
    let site = call.site();
    let events = match wire.open(call, last_event_id).await? {
        Opened::Events(events) => events,
        Opened::Refused { status, body } if !status.is_success() => return Err(error_of(&site, status, &body)),
        Opened::Refused { .. } => return Err(site.invalid("a JSON body where an event stream was expected")),
    };
    let opened = site.clone();
    let events = events.map(move |item| {
        let event = item?;
        let response = item_of(&site, &event.event, &event.data).map_err(StreamFault::Failed)?;
        Ok(((!event.id.is_empty()).then_some(event.id), response))
    });
    Ok(Connection { site: opened, events: Box::pin(events) })
}

/// One SSE event of the HTTP+JSON binding: a bare `StreamResponse`, or (SDK behaviour, not spec)
/// an `event: error` frame carrying a `google.rpc.Status` body.
pub(crate) fn stream_rest_item(site: &Site, event: &str, data: &str) -> Result<StreamResponse, ClientError> {
    let invalid = |reason: String| site.invalid(reason);
    let value: Value =
        serde_json::from_str(data).map_err(|error| invalid(format!("stream event is not JSON: {error}")))?;
    if event == "error" || value.get("error").is_some_and(Value::is_object) {
        let body: RestErrorBody =
            serde_json::from_value(value).map_err(|error| invalid(format!("stream error event: {error}")))?;
        let status = body.error.code;
        return Err(match A2aError::from_rest_body(&body) {
            Some(error) => site.a2a(Some(status), error),
            None => site.status(status, data.as_bytes()),
        });
    }
    serde_json::from_value(value).map_err(|error| invalid(format!("stream event: {error}")))
}

/// Reads a REST error: the A2A error of its `google.rpc.Status` body, else the status and body.
pub(crate) fn rest_error(site: &Site, status: StatusCode, body: &[u8]) -> ClientError {
    let a2a = serde_json::from_slice::<RestErrorBody>(body).ok().and_then(|body| A2aError::from_rest_body(&body));
    match a2a {
        Some(error) => site.a2a(Some(status.as_u16()), error),
        None => site.status(status.as_u16(), body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::card::{parse_card, test_card as card};
    use crate::a2a::jsonrpc::rpc_call;
    use crate::a2a::transport::settles;
    use accord_types::a2a::A2aErrorKind;
    use accord_types::jsonrpc;
    use reqwest::Url;
    use serde_json::json;
    use std::time::Duration;

    fn interface(binding: &str, url: &str, tenant: Option<&str>) -> AgentInterface {
        let mut interface = json!({"url": url, "protocolBinding": binding, "protocolVersion": "1.0"});
        if let Some(tenant) = tenant {
            interface["tenant"] = json!(tenant);
        }
        let card = parse_card(card(json!([interface]))).expect("card");
        card.supported_interfaces[0].clone()
    }

    fn wire() -> HttpWire {
        HttpWire { http: reqwest::Client::new(), headers: Default::default(), request_timeout: Duration::from_secs(1) }
    }

    #[test]
    fn rest_calls_follow_the_routes_under_the_tenant() {
        let rest = Rest::new(wire(), &interface("HTTP+JSON", "http://h/a2a/rest/", Some("acme"))).expect("binding");
        let call = rest
            .route(Operation::GetTask, Method::GET, &["tasks", "t/1"], &[("historyLength", "2".into())], json!({}))
            .expect("call");
        assert_eq!(call.url.as_str(), "http://h/a2a/rest/acme/tasks/t%2F1?historyLength=2");
        assert!(call.body.is_none());
        let call = rest
            .route(
                Operation::SendMessage,
                Method::POST,
                &["message:send"],
                &[],
                json!({"tenant": "acme", "message": {}}),
            )
            .expect("call");
        assert_eq!(call.url.as_str(), "http://h/a2a/rest/acme/message:send");
        assert_eq!(call.body, Some(json!({"message": {}})), "the tenant travels in the path");

        let rpc = interface("JSONRPC", "http://h/a2a/jsonrpc", Some("acme"));
        let mut request =
            Unary::GetTask(accord_types::a2a::GetTaskRequest { tenant: None, id: "x".into(), history_length: None });
        request.fill_tenant(&rpc);
        let Unary::GetTask(request) = request else { unreachable!("the same operation") };
        assert_eq!(request.tenant.as_deref(), Some("acme"));
        let endpoint = Url::parse(&rpc.url).expect("url");
        let (call, id) = rpc_call(Operation::GetTask, &endpoint, "GetTask", json!({"id": "x"}), true).expect("call");
        assert_eq!((call.method, call.url.as_str()), (Method::POST, "http://h/a2a/jsonrpc"));
        let body = call.body.expect("body");
        assert_eq!((body["jsonrpc"].clone(), body["method"].clone()), (json!("2.0"), json!("GetTask")));
        assert_eq!(body["id"], id);
        let request = jsonrpc::Request::from_value(body).expect("a request the servers read");
        assert_eq!((request.method.as_str(), request.params), ("GetTask", Some(json!({"id": "x"}))));
    }

    #[test]
    fn rest_errors_keep_status_reason_and_message() {
        let site = Site::new(Operation::CancelTask, "u");
        let body = br#"{"error":{"code":400,"status":"FAILED_PRECONDITION","message":"done already","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_CANCELABLE","domain":"a2a-protocol.org"}]}}"#;
        let error = rest_error(&site, StatusCode::BAD_REQUEST, body);
        assert_eq!((error.a2a_kind(), error.status()), (Some(A2aErrorKind::TaskNotCancelable), Some(400)));
        assert_eq!(error.a2a_error().map(|e| e.message.as_str()), Some("done already"));
        let plain = rest_error(&site, StatusCode::NOT_FOUND, b"Not Found");
        assert!(matches!(plain, ClientError::Status { status: 404, ref body, .. } if body == "Not Found"));
        let streamed = stream_rest_item(&site, "error", std::str::from_utf8(body).expect("utf8")).expect_err("error");
        assert_eq!(streamed.a2a_kind(), Some(A2aErrorKind::TaskNotCancelable));
        let update = stream_rest_item(
            &site,
            "message",
            r#"{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}"#,
        )
        .expect("update");
        assert!(!settles(&update));
        assert!(matches!(
            stream_rest_item(&site, "", r#"{"kind":"status-update"}"#),
            Err(ClientError::InvalidResponse { .. })
        ));
    }
}
