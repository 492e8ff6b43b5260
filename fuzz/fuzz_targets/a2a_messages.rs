//! A2A v1.0 ProtoJSON messages (`accord_types::a2a`): any bytes in, read as each message a face or
//! the client reads from a peer, never a panic. What deserializes is validated; what also
//! validates is written and read back to the same value (decode → encode → decode), and a
//! validation failure renders as an A2A error with its field violations.
#![no_main]

use accord_types::a2a::{self, A2aError, ErrorMapping, Validate};
use libfuzzer_sys::fuzz_target;
use serde::Serialize;
use serde::de::DeserializeOwned;

fn check<T: DeserializeOwned + Serialize + Validate + PartialEq + std::fmt::Debug>(data: &[u8]) {
    let Ok(message) = serde_json::from_slice::<T>(data) else {
        return;
    };
    match message.validate() {
        Ok(()) => {
            let written = serde_json::to_vec(&message).expect("a read message serializes");
            let again: T = serde_json::from_slice(&written).expect("a written message reads back");
            assert_eq!(again, message, "round trip changed the message");
            assert!(again.validate().is_ok(), "the written message no longer validates");
        }
        Err(error) => {
            assert!(!error.violations.is_empty());
            let error = A2aError::from(error);
            let _ = error.to_rest_body(ErrorMapping::default());
            let _ = error.to_jsonrpc_error();
        }
    }
}

fuzz_target!(|data: &[u8]| {
    check::<a2a::SendMessageRequest>(data);
    check::<a2a::SendMessageResponse>(data);
    check::<a2a::StreamResponse>(data);
    check::<a2a::Task>(data);
    check::<a2a::Message>(data);
    check::<a2a::ListTasksRequest>(data);
    check::<a2a::ListTasksResponse>(data);
    check::<a2a::TaskPushNotificationConfig>(data);
    check::<a2a::AgentCard>(data);
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(millis) = a2a::time::parse_rfc3339_utc(text)
    {
        // A timestamp that reads writes back in a form that reads to the same instant.
        let written = a2a::time::format_unix_millis(millis);
        assert_eq!(a2a::time::parse_rfc3339_utc(&written), Ok(millis), "{text:?} → {written:?}");
    }
});
