//! Reading request bodies under the size cap and decoding JSON.

use axum::body::Body;
use axum::http::StatusCode;
use serde_json::Value;

use crate::error::LucidError;

/// Reads the whole body, refusing (413) one larger than `limit` without reading the rest.
pub(crate) async fn read_limited(body: Body, limit: usize) -> Result<bytes::Bytes, LucidError> {
    axum::body::to_bytes(body, limit).await.map_err(|_| {
        LucidError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("The request body exceeds {limit} bytes"),
        )
    })
}

/// Parses a JSON body; an empty body reads as `{}` so that skills without input can be called
/// with a bare POST.
pub(crate) fn parse_json(bytes: &[u8]) -> Result<Value, LucidError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    serde_json::from_slice(bytes).map_err(|_| LucidError::invalid_json())
}
