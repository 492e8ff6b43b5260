//! The A2A 0.3 dialect's shapes (`accord_types::a2a::v03`, and `v03::proto` for the 0.3 REST
//! bodies): any bytes in, read as each 0.3 JSON-RPC params/result shape and each 0.3 proto
//! body, never a panic. What reads converts to 1.0; the conversion is stable (1.0 → 0.3 → 1.0
//! gives the same 1.0 value again; for the proto bodies after one round, since the proto writer
//! spells out what a proto3 reader may leave out); and the 0.3 value it writes reads back
//! unchanged.
#![no_main]

use accord_types::a2a::v03::{self, proto};
use accord_types::a2a::{self, Validate};
use libfuzzer_sys::fuzz_target;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// `data` as the 0.3 JSON-RPC shape `W` of the 1.0 type `V`.
fn check_rpc<V, W>(data: &[u8])
where
    V: From<W> + Clone + PartialEq + std::fmt::Debug,
    W: From<V> + Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let Ok(wire) = serde_json::from_slice::<W>(data) else {
        return;
    };
    let value = V::from(wire);
    let again = W::from(value.clone());
    let written = serde_json::to_vec(&again).expect("a 0.3 value serializes");
    let read: W = serde_json::from_slice(&written).expect("a written 0.3 value reads back");
    assert_eq!(read, again, "the 0.3 JSON round trip changed the value");
    assert_eq!(V::from(read), value, "1.0 → 0.3 → 1.0 is not stable");
}

/// `data` as the 0.3 proto body `P` of the 0.3 shape `W` and the 1.0 type `V`.
fn check_proto<V, W, P>(data: &[u8]) -> Option<V>
where
    V: From<W> + Clone + PartialEq + std::fmt::Debug,
    W: From<V> + From<P>,
    P: From<W> + Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let body = serde_json::from_slice::<P>(data).ok()?;
    // The proto writer spells out what a reader may leave out (a send's `configuration` with
    // `blocking`), so the value settles after one round: from then on the round trip is exact.
    let settled = V::from(W::from(P::from(W::from(V::from(W::from(body))))));
    let again = P::from(W::from(settled.clone()));
    let written = serde_json::to_vec(&again).expect("a proto value serializes");
    let read: P = serde_json::from_slice(&written).expect("a written proto value reads back");
    assert_eq!(read, again, "the proto JSON round trip changed the value");
    assert_eq!(V::from(W::from(read)), settled, "1.0 → 0.3 proto → 1.0 is not stable");
    Some(settled)
}

fuzz_target!(|data: &[u8]| {
    check_rpc::<a2a::SendMessageRequest, v03::MessageSendParams>(data);
    check_rpc::<a2a::SendMessageResponse, v03::SendMessageResult>(data);
    check_rpc::<a2a::StreamResponse, v03::StreamEvent>(data);
    check_rpc::<a2a::Task, v03::Task>(data);
    check_rpc::<a2a::Message, v03::Message>(data);
    check_rpc::<a2a::TaskPushNotificationConfig, v03::TaskPushNotificationConfig>(data);
    check_rpc::<a2a::GetTaskRequest, v03::TaskQueryParams>(data);
    check_rpc::<a2a::CancelTaskRequest, v03::TaskIdParams>(data);
    if let Ok(params) = serde_json::from_slice::<v03::MessageSendParams>(data) {
        // What a 0.3 face accepts is validated as the 1.0 request; a refusal names fields.
        if let Err(error) = a2a::SendMessageRequest::from(params).validate() {
            assert!(!error.violations.is_empty());
        }
    }
    if let Ok(object) = serde_json::from_slice::<a2a::JsonRpcError>(data)
        && let Some(error) = v03::error_from_object(&object)
    {
        // A 0.3 error object that reads writes back with the same code.
        assert_eq!(v03::error_object(&error).code, object.code);
    }

    check_proto::<a2a::SendMessageRequest, v03::MessageSendParams, proto::SendMessageRequest>(data);
    check_proto::<a2a::SendMessageResponse, v03::SendMessageResult, proto::SendMessageResponse>(data);
    check_proto::<a2a::StreamResponse, v03::StreamEvent, proto::StreamResponse>(data);
    check_proto::<a2a::Task, v03::Task, proto::Task>(data);
    check_proto::<a2a::Message, v03::Message, proto::Message>(data);
    // A push config's ids travel in its resource name: an id holding the name's own separator
    // cannot be told apart (the REST routes take ids from single path segments).
    if let Ok(body) = serde_json::from_slice::<proto::TaskPushNotificationConfig>(data) {
        let config = a2a::TaskPushNotificationConfig::from(v03::TaskPushNotificationConfig::from(body));
        let plain = |id: &Option<String>| id.as_deref().is_none_or(|id| !id.contains('/'));
        if plain(&config.task_id) && plain(&config.id) {
            check_proto::<a2a::TaskPushNotificationConfig, v03::TaskPushNotificationConfig, proto::TaskPushNotificationConfig>(
                data,
            );
        }
    }
    if let Ok(create) = serde_json::from_slice::<proto::CreateTaskPushNotificationConfigRequest>(data) {
        let _ = proto::name_parts(&create.parent);
        let _ = create.config.name_parts();
    }
});
