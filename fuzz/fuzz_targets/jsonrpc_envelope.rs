//! The JSON-RPC 2.0 envelope (`accord_types::jsonrpc`) and its A2A view
//! (`accord_types::a2a::jsonrpc`): any body in, never a panic. A refused request gets -32700 or
//! -32600 and an id that can be echoed; an accepted one reads back unchanged after writing; an A2A
//! method's params go through the decode and validation the A2A JSON-RPC face runs, and every
//! error renders in both A2A dialects.
#![no_main]

use accord_types::a2a::{self, A2aError, ErrorMapping, JsonRpcRequest, Validate};
use accord_types::jsonrpc::{self, Request, Response};
use libfuzzer_sys::fuzz_target;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Decodes and validates the params as `T`, as the face does, then renders the error (if any)
/// the way each binding would.
fn params<T: DeserializeOwned + Validate + serde::Serialize>(request: &JsonRpcRequest) {
    match request.params_validated::<T>() {
        Ok(params) => {
            // Decode → encode → decode is stable for what the face accepts.
            let written = serde_json::to_value(&params).expect("params serialize");
            let again: T = serde_json::from_value(written.clone()).expect("written params read back");
            assert_eq!(serde_json::to_value(&again).expect("params serialize"), written, "params round trip");
            assert!(again.validate().is_ok(), "written params no longer validate");
        }
        Err(error) => render(&error),
    }
}

fn render(error: &A2aError) {
    let object = jsonrpc::ErrorObject::from(error);
    assert_eq!(object.code, i64::from(error.code()));
    assert!(A2aError::from_jsonrpc_error(&error.to_jsonrpc_error()).is_some(), "JSON-RPC error does not read back");
    for mapping in [ErrorMapping::V1_0_1, ErrorMapping::V1_0_0] {
        let status = error.http_status(mapping);
        assert!((400..600).contains(&status), "status {status}");
        // Only errors with an A2A reason read back from REST: a status alone is ambiguous.
        let body = error.to_rest_body(mapping);
        assert_eq!(A2aError::from_rest_body(&body).is_some(), error.error_info().is_some(), "REST body read back");
    }
}

fuzz_target!(|data: &[u8]| {
    match Request::parse(data) {
        Ok(request) => {
            assert!(request.id.as_ref().is_none_or(jsonrpc::is_valid_id));
            let written = serde_json::to_vec(&request).expect("request serializes");
            assert_eq!(Request::parse(&written).as_ref(), Ok(&request), "request round trip");
        }
        Err(error) => {
            assert!(matches!(error.code(), jsonrpc::PARSE_ERROR | jsonrpc::INVALID_REQUEST), "code {}", error.code());
            assert!(jsonrpc::is_valid_id(&error.response_id()), "unechoable id");
            let response = serde_json::to_vec(&error.to_response()).expect("error response serializes");
            assert!(Response::<Value>::parse(&response).is_ok_and(|response| response.is_error()));
        }
    }
    if let Ok(request) = Request::parse_lenient(data) {
        let _ = request.params_or_empty();
    }
    if let Ok(response) = Response::<Value>::parse(data) {
        let _ = response.check_id(&Value::from(1));
        let _ = response.into_result();
    }

    let Ok(request) = JsonRpcRequest::parse(data) else {
        return;
    };
    use a2a::jsonrpc::methods as m;
    match request.method.as_str() {
        m::SEND_MESSAGE | m::SEND_STREAMING_MESSAGE => params::<a2a::SendMessageRequest>(&request),
        m::GET_TASK => params::<a2a::GetTaskRequest>(&request),
        m::LIST_TASKS => params::<a2a::ListTasksRequest>(&request),
        m::CANCEL_TASK => params::<a2a::CancelTaskRequest>(&request),
        m::SUBSCRIBE_TO_TASK => params::<a2a::SubscribeToTaskRequest>(&request),
        m::CREATE_TASK_PUSH_NOTIFICATION_CONFIG => params::<a2a::TaskPushNotificationConfig>(&request),
        m::GET_TASK_PUSH_NOTIFICATION_CONFIG => params::<a2a::GetTaskPushNotificationConfigRequest>(&request),
        m::LIST_TASK_PUSH_NOTIFICATION_CONFIGS => params::<a2a::ListTaskPushNotificationConfigsRequest>(&request),
        m::DELETE_TASK_PUSH_NOTIFICATION_CONFIG => params::<a2a::DeleteTaskPushNotificationConfigRequest>(&request),
        m::GET_EXTENDED_AGENT_CARD => params::<a2a::GetExtendedAgentCardRequest>(&request),
        _ => {}
    }
});
